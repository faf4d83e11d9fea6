"""The README's Python example, run as it stands (from the repository root, where its model path
points), with a check that it printed what the comments say."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_python_example_runs(tmp_path):
    with open(os.path.join(REPO, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README.md has no Python example"
    if not os.path.exists(os.path.join(REPO, "build", "models", "squeezenet1_1.onnx")):
        pytest.skip("build/models/squeezenet1_1.onnx is missing (models/make_all.sh)")
    env = dict(os.environ, OCL_INFER_TUNING_CACHE=str(tmp_path / "tuning.tsv"))  # not the shared cache
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NodeArg(name='input', type='tensor(float)', shape=['batch', 3, 224, 224])" in done.stdout
    assert "us of kernels per run" in done.stdout  # the profile table
    assert "tuned_problems" in done.stdout
