"""chainer.testing's helpers."""
from .gradient_check import assert_allclose  # noqa: F401
