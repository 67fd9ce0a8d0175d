"""Process-wide switches of include/ch/config.h: use_cudnn, allow_tf32, deterministic, gemm,
the directory of the GEMM choices."""

import numpy as np

import chainerc


def test_use_cudnn_starts_on_and_round_trips():
    assert chainerc.get_use_cudnn() is True  # the seed's use_cudnn=True
    try:
        chainerc.set_use_cudnn(False)
        assert chainerc.get_use_cudnn() is False
        chainerc.set_use_cudnn(3)  # truthy
        assert chainerc.get_use_cudnn() is True
    finally:
        chainerc.set_use_cudnn(True)


def test_cudnn_state_says_why_and_calls_are_counted():
    state, reason, version = chainerc.cudnn_state()
    assert state in chainerc.CUDNN_STATES
    assert (reason == "") == (state == "in use"), (state, reason)
    assert version >= 0
    assert chainerc.cudnn_calls("no such kernel") == 0
    chainerc.reset_cudnn_calls()
    assert chainerc.cudnn_calls() == 0
    try:
        chainerc.set_use_cudnn(False)
        state, reason, _ = chainerc.cudnn_state()
        assert state == "switched off" and "ch_config_set_use_cudnn(0)" in reason
    finally:
        chainerc.set_use_cudnn(True)


def test_allow_tf32_starts_off_and_round_trips():
    assert chainerc.get_allow_tf32() is False
    try:
        chainerc.set_allow_tf32(True)
        assert chainerc.get_allow_tf32() is True
    finally:
        chainerc.set_allow_tf32(False)
    assert chainerc.get_allow_tf32() is False


def test_deterministic_starts_off_and_round_trips():
    assert chainerc.get_deterministic() is False
    try:
        chainerc.set_deterministic(True)
        assert chainerc.get_deterministic() is True
    finally:
        chainerc.set_deterministic(False)
    assert chainerc.get_deterministic() is False


def test_gemm_starts_auto_and_round_trips():
    assert chainerc.get_gemm() == "auto"
    try:
        chainerc.set_gemm("openblas")
        assert chainerc.get_gemm() == "openblas"
        try:
            chainerc.set_gemm("no-such-blas")
            raise AssertionError("no error for an unknown library")
        except chainerc.InvalidArgumentError as e:
            assert "no-such-blas" in str(e)
        assert chainerc.get_gemm() == "openblas"
        assert chainerc.blas().startswith("GEMM openblas | ")
    finally:
        chainerc.set_gemm("auto")
    assert chainerc.get_gemm() == "auto"


def test_gemm_cache_directory_set_off_and_back(tmp_path):
    saved = chainerc.get_gemm_cache()
    try:
        chainerc.set_gemm_cache(str(tmp_path))
        assert chainerc.get_gemm_cache() == str(tmp_path)
        assert " | choices kept in " + str(tmp_path) in chainerc.blas()
        chainerc.set_gemm_cache("")
        assert chainerc.get_gemm_cache() == ""
        assert chainerc.blas().endswith(" | choices not kept on disk")
        # Off: a product is computed and nothing is written.
        a = chainerc.Variable(np.ones((20, 30), np.float32))
        w = chainerc.Variable(np.ones((40, 30), np.float32))
        y = chainerc.functions.matmul(a, w, transb=True)
        np.testing.assert_array_equal(y.data, np.full((20, 40), 30, np.float32))
        assert list(tmp_path.iterdir()) == []
        try:
            chainerc.set_gemm_cache("x" * 5000)
            raise AssertionError("no error for a name too long")
        except chainerc.InvalidArgumentError as e:
            assert "5000 bytes" in str(e)
        assert chainerc.get_gemm_cache() == ""
        chainerc.set_gemm_cache(None)  # the environment's directory
        assert chainerc.get_gemm_cache() == saved
    finally:
        chainerc.set_gemm_cache(saved)
