"""examples/dropin_compare.py: the same application code with onnxruntime and with ocl_infer gives
the same outputs (1e-4 of each output's scale) on the README's example models."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_dropin_matches_onnxruntime():
    pytest.importorskip("onnxruntime", reason="onnxruntime is in the models' venv (models/install_deps.sh)")
    pytest.importorskip("onnx")
    done = subprocess.run([sys.executable, os.path.join(REPO, "examples", "dropin_compare.py")],
                          capture_output=True, text=True, timeout=600)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    # Dynamic shapes, int64 inputs, float16 inputs and several outputs are all exercised (the
    # models come from models/make_all.sh, which the README's test command runs first).
    for needle in ("batch 2", "int64 ids", "float16 input", "3 outputs"):
        assert needle in done.stdout, needle
