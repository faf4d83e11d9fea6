#!/usr/bin/env bash
# Installs ocl-infer into a temporary prefix, builds examples/ against the installed CMake
# package, runs it on a small generated model and compares its top-5 with a numpy reference.
# usage: test_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1; build=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
work = sys.argv[1]
rng = np.random.default_rng(0)
w = rng.standard_normal((10, 12)).astype(np.float32)
b = rng.standard_normal(10).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Gemm", ["x", "w", "b"], ["logits"], transB=1),
     helper.make_node("Relu", ["logits"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 12])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), work + "/m.onnx")
x = np.sin(0.01 * np.arange(12, dtype=np.float32)).reshape(1, 12)
y = np.maximum(x @ w.T + b, 0)[0]
order = np.argsort(-y, kind="stable")[:5]
with open(work + "/expected.txt", "w") as f:
    for i in order: f.write(f"{i} {y[i]:.5f}\n")
PY
"$work/example/classify" "$work/m.onnx" > "$work/out.txt"
cat "$work/out.txt"
/usr/bin/python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
exp = [l.split() for l in open(work + "/expected.txt")]
got = [l.split()[1:] for l in open(work + "/out.txt") if l.startswith("top ")]
assert len(got) == 5, got
for (ei, ev), (gi, gv) in zip(exp, got):
    assert abs(float(ev) - float(gv)) <= 1e-4 * max(1, abs(float(ev))), (exp, got)
    # equal values may swap order; compare values and indices where values differ
    if ei != gi:
        assert abs(float(ev) - float(gv)) < 1e-5, (exp, got)
print("example output matches the numpy reference")
PY
