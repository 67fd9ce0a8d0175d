"""Parameterized built-in functions (Linear, Convolution2D, ...)."""


class ParameterizedFunction(object):
    pass


def _define_parameterized(*args, **kwargs):
    return None
