#!/usr/bin/env python3
"""Reference values for tests/train/test_optimizer.cpp -> optimizer_references.h.

How the values are produced: two parameters ("W" of shape (3, 4) and "b" of
shape (3,)) start from numpy.random.default_rng(20260101) normal values; for
3 steps, gradients drawn from the same generator are applied with the update
rules of Chainer 1.0.1's optimizers (and of Chainer 7's Adam with eta,
weight_decay_rate and amsgrad, and NesterovAG), written out below in NumPy float64
(t is incremented before each step; Adam's lr = alpha * sqrt(1 - beta2^t) /
(1 - beta1^t) and beta1_t = beta1 * lam^(t-1), as chainer/optimizers/adam.py of
1.0.x). The header stores the initial values, the gradients, the parameters
after every step and the final state arrays, for each configuration
(defaults of the seed and non-default hyperparameters).

Cross-check: when `import chainer` works (e.g. Chainer 7.8.1 in a venv with
numpy<2), the same steps are also run through chainer.optimizers on a
chainer.Link with float64 parameters, for every configuration whose lam is
exactly 1 (Chainer 7 has no lam), and the script fails unless both agree to 1e-10. The header
committed was generated with that cross-check passing.

Usage: python3 make_optimizer_references.py > optimizer_references.h
"""
import sys

import numpy as np

STEPS = 3
SHAPES = [("W", (3, 4)), ("b", (3,))]

# (label, kind, constructor arguments in the C API's order, state names)
CONFIGS = [
    ("SGD default", "SGD", dict(lr=0.01)),
    ("SGD lr=0.1", "SGD", dict(lr=0.1)),
    ("MomentumSGD default", "MomentumSGD", dict(lr=0.01, momentum=0.9)),
    ("MomentumSGD lr=0.1 momentum=0.5", "MomentumSGD", dict(lr=0.1, momentum=0.5)),
    ("AdaGrad default", "AdaGrad", dict(lr=0.001, eps=1e-8)),
    ("AdaGrad lr=0.1 eps=1e-3", "AdaGrad", dict(lr=0.1, eps=1e-3)),
    ("AdaDelta default", "AdaDelta", dict(rho=0.95, eps=1e-6)),
    ("AdaDelta rho=0.9 eps=1e-4", "AdaDelta", dict(rho=0.9, eps=1e-4)),
    ("Adam default", "Adam", dict(alpha=0.001, beta1=0.9, beta2=0.999, lam=1 - 1e-8, eps=1e-8)),
    ("Adam alpha=0.01 beta1=0.8 beta2=0.99 lam=1", "Adam",
     dict(alpha=0.01, beta1=0.8, beta2=0.99, lam=1.0, eps=1e-6)),
    ("Adam lam=0.5", "Adam", dict(alpha=0.01, beta1=0.9, beta2=0.999, lam=0.5, eps=1e-8)),
    ("RMSprop default", "RMSprop", dict(lr=0.01, alpha=0.99, eps=1e-8)),
    ("RMSprop lr=0.001 alpha=0.9 eps=1e-4", "RMSprop", dict(lr=0.001, alpha=0.9, eps=1e-4)),
    # Chainer 7's Adam through ch_optimizer_adam_new_ex (its fields' order).
    ("Adam7 default", "AdamEx", dict(alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8, eta=1.0,
                                     weight_decay_rate=0.0, amsgrad=0, lam=1.0)),
    ("Adam7 weight_decay_rate=0.1 (AdamW)", "AdamEx",
     dict(alpha=0.01, beta1=0.9, beta2=0.999, eps=1e-8, eta=1.0, weight_decay_rate=0.1,
          amsgrad=0, lam=1.0)),
    ("Adam7 amsgrad eta=0.5 weight_decay_rate=0.05", "AdamEx",
     dict(alpha=0.01, beta1=0.8, beta2=0.5, eps=1e-6, eta=0.5, weight_decay_rate=0.05,
          amsgrad=1, lam=1.0)),
    ("Adam7 amsgrad lam=0.5", "AdamEx",
     dict(alpha=0.01, beta1=0.9, beta2=0.5, eps=1e-8, eta=1.0, weight_decay_rate=0.0,
          amsgrad=1, lam=0.5)),
    ("NesterovAG default", "NesterovAG", dict(lr=0.01, momentum=0.9)),
    ("NesterovAG lr=0.1 momentum=0.5", "NesterovAG", dict(lr=0.1, momentum=0.5)),
]
STATES = {"SGD": [], "MomentumSGD": ["v"], "AdaGrad": ["h"], "AdaDelta": ["msg", "msdx"],
          "Adam": ["m", "v"], "RMSprop": ["ms"], "NesterovAG": ["v"]}
# The optimizer's name (ch_optimizer_name) where it is not the kind.
NAMES = {"AdamEx": "Adam"}


def states_of(kind, h):
    if kind == "AdamEx":
        return ["m", "v", "vhat"] if h["amsgrad"] else ["m", "v"]
    return STATES[kind]


def update(kind, h, t, p, g, s):
    """One Chainer 1.0.1 update_one_cpu, in place on p and the state dict s."""
    if kind == "SGD":
        p -= h["lr"] * g
    elif kind == "MomentumSGD":
        v = s["v"]
        v *= h["momentum"]
        v -= h["lr"] * g
        p += v
    elif kind == "AdaGrad":
        s["h"] += g * g
        p -= h["lr"] * g / (np.sqrt(s["h"]) + h["eps"])
    elif kind == "AdaDelta":
        msg, msdx = s["msg"], s["msdx"]
        msg *= h["rho"]
        msg += (1 - h["rho"]) * g * g
        dx = np.sqrt((msdx + h["eps"]) / (msg + h["eps"])) * g
        msdx *= h["rho"]
        msdx += (1 - h["rho"]) * dx * dx
        p -= dx
    elif kind == "Adam":
        m, v = s["m"], s["v"]
        beta1_t = h["beta1"] * h["lam"] ** (t - 1)
        m += (1 - beta1_t) * (g - m)
        v += (1 - h["beta2"]) * (g * g - v)
        lr = h["alpha"] * np.sqrt(1 - h["beta2"] ** t) / (1 - h["beta1"] ** t)
        p -= lr * m / (np.sqrt(v) + h["eps"])
    elif kind == "AdamEx":  # Chainer 7's AdamRule.update_core_cpu, plus the seed's lam
        m, v = s["m"], s["v"]
        beta1_t = h["beta1"] * h["lam"] ** (t - 1)
        m += (1 - beta1_t) * (g - m)
        v += (1 - h["beta2"]) * (g * g - v)
        if h["amsgrad"]:
            np.maximum(s["vhat"], v, out=s["vhat"])
            vhat = s["vhat"]
        else:
            vhat = v
        lr = h["alpha"] * np.sqrt(1 - h["beta2"] ** t) / (1 - h["beta1"] ** t)
        step = lr / (np.sqrt(vhat) + h["eps"])
        p[...] = (1 - h["eta"] * h["weight_decay_rate"]) * p - h["eta"] * (step * m)
    elif kind == "NesterovAG":  # Chainer 7's NesterovAG.update_core_cpu
        v = s["v"]
        v *= h["momentum"]
        v -= h["lr"] * g
        p += h["momentum"] * h["momentum"] * v
        p -= (1 + h["momentum"]) * h["lr"] * g
    elif kind == "RMSprop":
        ms = s["ms"]
        ms *= h["alpha"]
        ms += (1 - h["alpha"]) * g * g
        p -= h["lr"] * g / (np.sqrt(ms) + h["eps"])


def run(kind, h, init, grads):
    params = [x.copy() for x in init]
    states = [{n: np.zeros_like(x) for n in states_of(kind, h)} for x in init]
    after = []
    for t in range(1, STEPS + 1):
        for k in range(len(params)):
            update(kind, h, t, params[k], grads[t - 1][k], states[k])
        after.append([x.copy() for x in params])
    return after, states


def chainer_check(kind, h, init, grads, expected):
    try:
        import chainer
        from chainer import optimizers
    except Exception:
        return False
    link = chainer.Link()
    with link.init_scope():
        for (name, _), x in zip(SHAPES, init):
            setattr(link, name, chainer.Parameter(x.copy()))
    args = {k: v for k, v in h.items() if k != "lam"}
    if "amsgrad" in args:
        args["amsgrad"] = bool(args["amsgrad"])
    opt = getattr(optimizers, NAMES.get(kind, kind))(**args)
    opt.setup(link)
    for t in range(STEPS):
        for (name, _), g in zip(SHAPES, grads[t]):
            getattr(link, name).grad = g.copy()
        opt.update()
        for (name, _), want in zip(SHAPES, expected[t]):
            got = getattr(link, name).array
            if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
                raise SystemExit(f"chainer disagrees for {kind} {h} step {t + 1} {name}: {got} vs {want}")
    return True


def arr(values):
    return "{" + ", ".join(repr(float(v)) for v in np.ravel(values)) + "}"


def main():
    rng = np.random.default_rng(20260101)
    init = [rng.standard_normal(s) for _, s in SHAPES]
    grads = [[rng.standard_normal(s) for _, s in SHAPES] for _ in range(STEPS)]
    out = ["// Generated by tests/train/make_optimizer_references.py (see its docstring). Do not edit.",
           "#pragma once", "", "namespace optimizer_refs {", "",
           f"constexpr int kSteps = {STEPS};",
           "// W has shape (3, 4) (12 values), b shape (3,) (3 values); arrays below are W then b.",
           f"constexpr double kInitW[] = {arr(init[0])};",
           f"constexpr double kInitB[] = {arr(init[1])};",
           "constexpr double kGradW[][12] = {" + ", ".join(arr(g[0]) for g in grads) + "};",
           "constexpr double kGradB[][3] = {" + ", ".join(arr(g[1]) for g in grads) + "};", "",
           "struct Case {", "  const char* label;", "  const char* kind;",
           "  const char* name;  // ch_optimizer_name",
           "  double args[8];  // constructor arguments after `out`, in the C API's order",
           "  // (AdamEx: the fields of ch_adam_options after version)",
           "  int n_args;", "  double after_w[3][12];  // W after each step", "  double after_b[3][3];",
           "  int n_states;", "  const char* state_names[3];",
           "  double state_w[3][12];  // final state arrays of W", "  double state_b[3][3];", "};", "",
           "constexpr Case kCases[] = {"]
    checked = 0
    for label, kind, h in CONFIGS:
        after, states = run(kind, h, init, grads)
        if h.get("lam", 1.0) == 1.0 and chainer_check(kind, h, init, grads, after):
            checked += 1
        names = states_of(kind, h)
        sw = [arr(states[0][n]) for n in names] or ["{}"]
        sb = [arr(states[1][n]) for n in names] or ["{}"]
        out.append(f'    {{"{label}", "{kind}", "{NAMES.get(kind, kind)}", {{{", ".join(repr(float(v)) for v in h.values())}}}, {len(h)},')
        out.append("     {" + ", ".join(arr(a[0]) for a in after) + "},")
        out.append("     {" + ", ".join(arr(a[1]) for a in after) + "},")
        out.append(f"     {len(names)}, {{{', '.join(chr(34) + n + chr(34) for n in names) or 'nullptr'}}},")
        out.append("     {" + ", ".join(sw) + "},")
        out.append("     {" + ", ".join(sb) + "}},")
    out += ["};", "", "}  // namespace optimizer_refs", ""]
    print("\n".join(out))
    print(f"cross-checked {checked} configurations against chainer", file=sys.stderr)


if __name__ == "__main__":
    main()
