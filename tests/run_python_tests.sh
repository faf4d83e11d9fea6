#!/usr/bin/env bash
# Runs the Python package's tests (tests/python) against the package in the build tree.
#   tests/run_python_tests.sh BUILD_DIR [pytest args]
# The interpreter: the models' venv (build/pyenv, made by models/install_deps.sh: Debian's numpy,
# onnx and pytest plus onnxruntime) when it exists, else Debian's python3. Exits 77 (skipped) when
# the build has no Python package or the interpreter lacks pytest.
set -euo pipefail
build_dir="$1"; shift
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${OCL_INFER_PYENV:-$repo_root/build/pyenv}/bin/python"
[[ -x "$python" ]] || python=/usr/bin/python3
if ! ls "$build_dir"/python/ocl_infer/_ocl_infer*.so >/dev/null 2>&1; then
  echo "skipped: $build_dir has no Python package (install pybind11-dev python3-dev and rebuild)"; exit 77
fi
if ! "$python" -c "import pytest" 2>/dev/null; then
  echo "skipped: $python has no pytest (apt-get install python3-pytest)"; exit 77
fi
export PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}"
export OCL_INFER_CLI="$build_dir/ocl-infer"
cd "$repo_root"
exec "$python" -m pytest -q -p no:cacheprovider tests/python "$@"
