import gc
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import chainerc  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.call_failed = rep.failed


@pytest.fixture(autouse=True)
def no_leaked_handles(request):
    """Every passing test must leave as many live chainerc handles as it found
    (a failed test's traceback keeps its variables alive: not checked)."""
    import numpy as np
    np.random.seed(0)
    chainerc.seed(0)  # parameter initialisation and dropout are reproducible
    gc.collect()
    gc.freeze()  # later collections skip what exists now (torch's objects): fast
    before = chainerc.live_handles()
    yield
    if getattr(request.node, "call_failed", False):
        return
    gc.collect()
    after = chainerc.live_handles()
    assert after == before, "leaked chainerc handles: before %s, after %s" % (before, after)
