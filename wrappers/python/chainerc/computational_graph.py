"""The computational graph behind variables as Graphviz DOT text
(chainer.computational_graph of Chainer 1.x), through ch_variable_graph_dot.

    import chainerc.computational_graph as c
    g = c.build_computational_graph((loss,))
    with open("graph.dot", "w") as o:
        o.write(g.dump())
    # dot -Tpng graph.dot -o graph.png
"""

import ctypes

from ._capi import lib, c_void_p, c_char_p, byref, check, GraphDotOptions, \
    CH_GRAPH_DOT_OPTIONS_VERSION
from .variable import Variable


class ComputationalGraph(object):
    """The graph found from some output variables (what build_computational_graph
    returns). dump() gives the DOT text; it was taken when the object was made."""

    def __init__(self, dot):
        self._dot = dot

    def dump(self):
        """Graphviz DOT text: variables are ovals "(shape), dtype" (parameters
        and named outputs with their name first), functions are boxes."""
        return self._dot

    def __str__(self):
        return self._dot


def build_computational_graph(outputs, remove_split=True, names=None, rankdir="TB",
                              show_parameters=True):
    """Graph of everything `outputs` (a Variable or a sequence of them) was
    computed from. `names` labels the outputs (a sequence as long as outputs);
    `rankdir` is Graphviz's TB, BT, LR or RL; show_parameters adds nodes for
    function parameters (W, b). remove_split is accepted for Chainer's
    signature (chainerc has no Split nodes)."""
    del remove_split
    if isinstance(outputs, Variable):
        outputs = (outputs,)
    outputs = tuple(outputs)
    for i, v in enumerate(outputs):
        if not isinstance(v, Variable):
            raise TypeError("build_computational_graph: outputs[%d] is a %s, not a Variable"
                            % (i, type(v).__name__))
    n = len(outputs)
    hs = (c_void_p * max(n, 1))(*[v._h for v in outputs])
    opt = GraphDotOptions()
    opt.version = CH_GRAPH_DOT_OPTIONS_VERSION
    opt.hide_parameters = 0 if show_parameters else 1
    opt.rankdir = str(rankdir).encode()
    keep = None
    if names is not None:
        names = list(names)
        if len(names) != n:
            raise ValueError("build_computational_graph: %d names for %d outputs"
                             % (len(names), n))
        keep = (c_char_p * max(n, 1))(*[None if s is None else str(s).encode() for s in names])
        opt.output_names = ctypes.cast(keep, ctypes.POINTER(c_char_p))
    out = c_void_p()
    check(lib.ch_variable_graph_dot(byref(out), hs, n, byref(opt)))
    try:
        text = ctypes.string_at(out.value).decode()
    finally:
        lib.ch_string_free(out)
    del keep
    return ComputationalGraph(text)
