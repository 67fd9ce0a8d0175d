"""chainerc.cuda_graph: a step captured as a CUDA graph and replayed, where
libchainerc has a CUDA device (a GPU, or the emulated devices of
build-emulated). Reference: NumPy on the same data."""
import numpy as np
import pytest

import chainerc
from chainerc import Variable, cuda, cuda_graph
import chainerc.functions as F

pytestmark = pytest.mark.skipif(not cuda.available, reason="no CUDA device: %s" % cuda._why)


def test_replays_compute_on_the_new_inputs():
    x = cuda.to_gpu(np.zeros((3, 5), np.float32))
    y = F.relu(Variable(x))  # one eager run first
    out = {}

    def body():
        out["y"] = F.relu(Variable(x))

    with cuda_graph.capture(body) as graph:
        assert graph.size >= 1
        for k in range(3):
            batch = np.random.RandomState(k).uniform(-1, 1, (3, 5)).astype(np.float32)
            graph.replay_with([x], [batch])
            np.testing.assert_array_equal(cuda.to_cpu(out["y"].data), np.maximum(batch, 0))
    del y


def test_bad_use_raises_and_the_device_works_after_it():
    x = cuda.to_gpu(np.ones((2, 2), np.float32))
    with pytest.raises(chainerc.ChainerError):
        cuda_graph.capture(lambda: cuda.to_cpu(x))  # a host synchronisation
    with pytest.raises(RuntimeError):
        cuda_graph.capture(lambda: (_ for _ in ()).throw(RuntimeError("in the body")))
    graph = cuda_graph.capture(lambda: F.relu(Variable(x)))
    with pytest.raises(chainerc.ChainerError):
        graph.replay_with([x], [np.ones((3, 2), np.float32)])  # another shape
    graph.release()
    np.testing.assert_array_equal(cuda.to_cpu(x), np.ones((2, 2), np.float32))
