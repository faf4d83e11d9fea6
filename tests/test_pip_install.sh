#!/usr/bin/env bash
# `pip install .` as the README says it: a fresh venv that sees Debian's packages, the wheel built
# from this checkout by scikit-build-core (its CMake build folder, build/wheel, is kept between
# runs), then the installed package used from another folder: devices, a session against numpy,
# the CLI inside the package. Also checks that pip pulled no second copy of numpy.
#   tests/test_pip_install.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
if ! "$work/venv/bin/pip" install -q --disable-pip-version-check "$src" >"$work/pip.log" 2>&1; then
  cat "$work/pip.log" >&2
  echo "pip install $src failed" >&2
  exit 1
fi
cd "$work"
"$work/venv/bin/python" - <<'PY'
import os, sys
import numpy as np
import ocl_infer
import onnx
from onnx import helper, TensorProto, numpy_helper

assert np.__file__.startswith("/usr/lib/python3/dist-packages"), f"a second numpy: {np.__file__}"
assert os.path.dirname(ocl_infer.__file__).startswith(sys.prefix), ocl_infer.__file__
devices = ocl_infer.list_devices()
print("devices:", [d["name"] for d in devices])
assert devices
w = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Sigmoid", ["y"], ["z"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 7])],
                          [numpy_helper.from_array(w, "w")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
sess = ocl_infer.InferenceSession(model.SerializeToString())
x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
(z,) = sess.run(None, {"x": x})
np.testing.assert_allclose(z, 1 / (1 + np.exp(-(x.astype(np.float64) @ w))), rtol=1e-5, atol=1e-6)
print("session ok:", sess.get_inputs(), sess.get_outputs())
PY
cli=$("$work/venv/bin/python" -c "import ocl_infer, os; print(os.path.join(os.path.dirname(ocl_infer.__file__), 'ocl-infer'))")
"$cli" --list-devices
echo "pip install: ok"
