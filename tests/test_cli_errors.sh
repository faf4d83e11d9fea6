#!/usr/bin/env bash
# Every bad model, image, tensor and argument makes `ocl-infer` exit non-zero (1 or 2, not a
# signal) with a one-line "ocl-infer: ..." message on stderr.
# usage: test_cli_errors.sh OCL_INFER_BINARY
set -uo pipefail
bin=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx, onnx.numpy_helper
from onnx import helper, TensorProto
w = sys.argv[1]
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, w + "/good.onnx")
# A conv model: something to tune.
gc = helper.make_graph([helper.make_node("Conv", ["x", "cw"], ["y"], pads=[1, 1, 1, 1])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [onnx.numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "cw")])
onnx.save(helper.make_model(gc, opset_imports=[helper.make_opsetid("", 13)]), w + "/conv.onnx")
data = open(w + "/good.onnx", "rb").read()
open(w + "/truncated.onnx", "wb").write(data[: len(data) // 2])
open(w + "/empty.onnx", "wb").write(b"")
open(w + "/garbage.onnx", "wb").write(bytes(range(256)) * 4)
g2 = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["t"]), helper.make_node("AlsoMissing", ["t"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)]), w + "/unsupported.onnx")
np.save(w + "/x.npy", np.zeros((1, 3, 4, 4), np.float32))
np.save(w + "/wrong_shape.npy", np.zeros((1, 3, 5, 4), np.float32))
np.save(w + "/wrong_type.npy", np.zeros((1, 3, 4, 4), np.int32))
open(w + "/corrupt.npy", "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
open(w + "/truncated.npy", "wb").write(open(w + "/x.npy", "rb").read()[:100])
open(w + "/notanimage.jpg", "w").write("hello")
open(w + "/truncated.png", "wb").write(b"\x89PNG\r\n\x1a\n\x00\x00")
# A valid 8 x 8 grey PNG (stdlib only): a photo for a model whose output is not class scores.
import struct, zlib
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
open(w + "/grey.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
    + chunk(b"IDAT", zlib.compress(b"".join(b"\x00" + bytes([128] * 24) for _ in range(8)))) + chunk(b"IEND", b""))
# A float16 model whose product overflows float16 (1000 * 100 > 65504).
g3 = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
    [onnx.numpy_helper.from_array(np.array(1000, np.float16), "k")])
onnx.save(helper.make_model(g3, opset_imports=[helper.make_opsetid("", 13)]), w + "/overflow16.onnx")
np.save(w + "/x16.npy", np.array([1, 10, 100, 1000], np.float16))
# A recognizer-shaped model: open batch and width, output [N,T,3] (a sequence of class scores).
g4 = helper.make_graph([helper.make_node("ReduceMean", ["x"], ["m"], axes=[2], keepdims=0),
                        helper.make_node("Transpose", ["m"], ["y"], perm=[0, 2, 1])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, "w"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "w", 3])])
onnx.save(helper.make_model(g4, opset_imports=[helper.make_opsetid("", 13)]), w + "/sequence.onnx")
# Two inputs: --input FILE without a name is ambiguous there.
g5 = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "g",
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 4, 4]) for n in ("a", "b")],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g5, opset_imports=[helper.make_opsetid("", 13)]), w + "/two_inputs.onnx")
np.save(w + "/ones.npy", np.ones((1, 3, 4, 4), np.float32) * -2)
# Two outputs whose names give the same file name once made safe ("a/b" -> a_b).
g6 = helper.make_graph([helper.make_node("Relu", ["x"], ["a/b"]), helper.make_node("Neg", ["x"], ["a_b"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a/b", "a_b")])
onnx.save(helper.make_model(g6, opset_imports=[helper.make_opsetid("", 13)]), w + "/collide.onnx")
PY
fail=0
expect() {  # expect CODE PATTERN -- ARGS...
  local code=$1 pat=$2; shift 3
  local err rc
  err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$err" || [ "$(grep -c '^ocl-infer:' <<<"$err")" -lt 1 ]; then
    echo "FAIL: ocl-infer $* -> rc=$rc (want $code), stderr: $err"; fail=$((fail+1))
  else
    echo "ok: $* -> $(grep -v '^ocl-infer: device' <<<"$err" | head -1)"
  fi
}
w=$work
expect 2 "no model given" --
expect 2 "unknown option" -- --frobnicate
expect 2 "needs an integer" -- $w/good.onnx img.jpg --top abc
expect 2 "three comma-separated" -- $w/good.onnx img.jpg --mean 1,2
expect 2 "needs --output-dir" -- $w/good.onnx --input x=$w/x.npy
expect 1 "cannot open model" -- $w/missing.onnx --input x=$w/x.npy --output-dir $w/o
expect 1 "empty" -- $w/empty.onnx --input x=$w/x.npy --output-dir $w/o
expect 1 "not a valid ONNX model" -- $w/truncated.onnx --input x=$w/x.npy --output-dir $w/o
expect 1 "not a valid ONNX model" -- $w/garbage.onnx --input x=$w/x.npy --output-dir $w/o
# Classifying a photo with a model whose output is a map ([1,3,4,4] here; a text detector's
# probability map in practice) is refused rather than ranking the map's pixels as classes.
expect 1 "is \[1,3,4,4\], not one score per class" -- $w/good.onnx $w/grey.png --size 0
# ... and one whose declared output is a sequence of scores, before the photo is cropped for it.
expect 1 "is declared \[?,?,3\], not one score per class" -- $w/sequence.onnx $w/grey.png
expect 1 "AlsoMissing (opset 13).*NoSuchOp (opset 13)" -- $w/unsupported.onnx --input x=$w/x.npy --output-dir $w/o
expect 1 "must have shape \[1,3,4,4\]" -- $w/good.onnx --input x=$w/wrong_shape.npy --output-dir $w/o
expect 1 "must be float32, got int32" -- $w/good.onnx --input x=$w/wrong_type.npy --output-dir $w/o
expect 1 "no input named 'nope'" -- $w/good.onnx --input nope=$w/x.npy --output-dir $w/o
expect 1 "not a valid .npy" -- $w/good.onnx --input x=$w/corrupt.npy --output-dir $w/o
expect 1 "truncated" -- $w/good.onnx --input x=$w/truncated.npy --output-dir $w/o
expect 1 "cannot open" -- $w/good.onnx --input x=$w/missing.npy --output-dir $w/o
expect 1 "cannot read image" -- $w/good.onnx $w/notanimage.jpg
expect 1 "cannot read image" -- $w/good.onnx $w/truncated.png
expect 1 "cannot read image" -- $w/good.onnx $w/missing.jpg
expect 2 "--precision must be fp32, fp16 or int8, got 'fp8'" -- $w/good.onnx --precision fp8 --input x=$w/x.npy --output-dir $w/o
expect 2 "'NoSuchOp' is not an operator" -- $w/good.onnx --precision fp16 --fp32-ops Relu,NoSuchOp --input x=$w/x.npy --output-dir $w/o
expect 2 "--fp32-ops applies with --precision fp16" -- $w/good.onnx --fp32-ops Relu --input x=$w/x.npy --output-dir $w/o
expect 2 "--check-precision takes fp16" -- $w/good.onnx --check-precision int8
expect 1 "no OpenCL device with index 99" -- $w/good.onnx --device 99 --input x=$w/x.npy --output-dir $w/o
expect 2 "tune: no model given" -- tune
expect 2 "--budget applies to ocl-infer tune and --tune" -- $w/good.onnx --budget 5 --input x=$w/x.npy --output-dir $w/o
expect 2 "--budget needs a number of seconds" -- tune $w/good.onnx --budget abc
expect 2 "tune: only model, inputs and planning options" -- tune $w/good.onnx --bench
expect 2 "would throw the results away" -- tune $w/good.onnx --tuning-cache off
expect 1 "cannot open model" -- tune $w/missing.onnx
# Quantization: bad command lines, a model that is not fp32, folders without images.
mkdir -p $w/noimages $w/calib && echo hello > $w/noimages/a.jpg
/usr/bin/python3 - $w/calib <<'PY'
import sys, zlib, struct
def png(path, seed):  # a 6x6 RGB PNG, no dependencies
    raw = b"".join(b"\x00" + bytes((seed * 37 + x * 11 + y * 7 + c * 3) % 256 for x in range(6) for c in range(3)) for y in range(6))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 6, 6, 8, 2, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
for k in range(3): png(f"{sys.argv[1]}/p{k}.png", k)
PY
expect 2 "quantize: no model given" -- quantize
expect 2 "no output file given" -- quantize $w/conv.onnx --calibration $w/calib
expect 2 "no calibration images given" -- quantize $w/conv.onnx -o $w/q.onnx
expect 2 "--method must be minmax, percentile or entropy" -- quantize $w/conv.onnx --calibration $w/calib -o $w/q.onnx --method best
expect 1 "no readable image" -- quantize $w/conv.onnx --calibration $w/noimages -o $w/q.onnx --size 0 --crop 4
expect 1 "is not a folder" -- quantize $w/conv.onnx --calibration $w/missing -o $w/q.onnx
expect 1 "needs calibration images: add --calibration DIR" -- $w/conv.onnx --precision int8 --input x=$w/x.npy --output-dir $w/o
expect 2 "apply to --precision int8" -- $w/conv.onnx --calibration $w/calib --input x=$w/x.npy --output-dir $w/o
expect 1 "does not have" -- quantize $w/conv.onnx --calibration $w/calib -o $w/q.onnx --size 0 --crop 4 --exclude nope
# A real quantization of the conv model: the written model runs, and is reported as quantized.
if "$bin" quantize $w/conv.onnx --calibration $w/calib -o $w/q.onnx --size 0 --crop 4 >/dev/null 2>&1 \
   && "$bin" $w/q.onnx --input x=$w/x.npy --output-dir $w/oq 2>/dev/null && [ -f $w/oq/y.npy ]; then
  echo "ok: quantize writes a model that runs"
else echo "FAIL: quantize end to end"; fail=$((fail+1)); fi
expect 1 "already quantized" -- quantize $w/q.onnx --calibration $w/calib -o $w/q2.onnx --size 0 --crop 4
# tune writes its cache; a corrupt cache is a notice, not an error; two tuners at once leave a
# well-formed file.
"$bin" tune $w/conv.onnx --tuning-cache $w/tc.tsv >/dev/null 2>&1 && head -1 $w/tc.tsv | grep -q "ocl-infer tuning cache v1" \
  && echo "ok: tune writes its cache" || { echo "FAIL: tune did not write its cache"; fail=$((fail+1)); }
printf 'garbage\x00\xff\n' > $w/tc_bad.tsv
err=$("$bin" $w/good.onnx --tuning-cache $w/tc_bad.tsv --input x=$w/x.npy --output-dir $w/o 2>&1 >/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "not a tuning cache" <<<"$err"; then
  echo "FAIL: corrupt tuning cache (rc=$rc): $err"; fail=$((fail+1))
else echo "ok: corrupt tuning cache is a notice"; fi
rm -f $w/tc2.tsv
"$bin" tune $w/conv.onnx --tuning-cache $w/tc2.tsv >/dev/null 2>&1 & p1=$!
"$bin" tune $w/conv.onnx --tuning-cache $w/tc2.tsv >/dev/null 2>&1 & p2=$!
wait $p1 && wait $p2 && /usr/bin/python3 - $w/tc2.tsv <<'PY' && echo "ok: concurrent tuners" || { echo "FAIL: concurrent tuners"; fail=$((fail+1)); }
import sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0] == "ocl-infer tuning cache v1", lines[0]
assert all(len(l.split("\t")) == 6 for l in lines[1:] if l), lines
PY
# And the good case works and writes the output.
"$bin" $w/good.onnx --input x=$w/x.npy --output-dir $w/o 2>/dev/null && [ -f $w/o/y.npy ] || { echo "FAIL: good model"; fail=$((fail+1)); }
# --input FILE names the model's only input; with two inputs it is an error naming them.
"$bin" $w/good.onnx --input $w/ones.npy --output-dir $w/of 2>/dev/null && /usr/bin/python3 -c '
import sys, numpy as np; y = np.load(sys.argv[1]); assert y.shape == (1, 3, 4, 4) and (y == 0).all(), y' $w/of/y.npy \
  && echo "ok: --input FILE for a one-input model" || { echo "FAIL: --input FILE"; fail=$((fail+1)); }
expect 2 "the model has 2 inputs (a, b); give each as --input NAME=FILE" -- $w/two_inputs.onnx --input $w/x.npy --output-dir $w/o
expect 2 "input 'x' given twice" -- $w/good.onnx --input $w/x.npy --input x=$w/x.npy --output-dir $w/o
# Outputs whose safe file names collide are both written, the changed one renamed and reported.
err=$("$bin" $w/collide.onnx --input $w/ones.npy --output-dir $w/oc 2>&1 >/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "output 'a/b' written as a_b-2.npy" <<<"$err" || ! /usr/bin/python3 -c '
import sys, numpy as np; d = sys.argv[1]
assert (np.load(d + "/a_b.npy") == 2).all() and (np.load(d + "/a_b-2.npy") == 0).all()' $w/oc; then
  echo "FAIL: colliding output file names (rc=$rc): $err"; fail=$((fail+1))
else echo "ok: colliding output file names"; fi
# Overflow in a float16 model runs (infinity is float16's answer) but is reported.
err=$("$bin" $w/overflow16.onnx --input x=$w/x16.npy --output-dir $w/o16 2>&1 >/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "warning: output 'y' has 2 of 4 values that are NaN or infinite (float16 holds at most 65504" <<<"$err"; then
  echo "FAIL: float16 overflow not reported (rc=$rc): $err"; fail=$((fail+1))
else echo "ok: float16 overflow reported"; fi
# --check-precision: a line per executed node, the overflow flagged; JSON parses with one record per node.
out=$("$bin" $w/good.onnx --check-precision fp16 --input x=$w/x.npy 2>/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "Relu_0 *Relu" <<<"$out" || ! grep -q "0 of 1 nodes above it" <<<"$out"; then
  echo "FAIL: --check-precision text (rc=$rc): $out"; fail=$((fail+1))
else echo "ok: --check-precision text"; fi
"$bin" $w/good.onnx --check-precision fp16 --json --input x=$w/x.npy 2>/dev/null | /usr/bin/python3 -c '
import sys, json; r = json.load(sys.stdin)
assert r["precision"] == "fp16" and len(r["nodes"]) == 1 and r["nodes"][0]["op_types"] == ["Relu"], r
assert r["nodes"][0]["max_rel_error"] == 0 and r["outputs"][0]["name"] == "y", r' \
  && echo "ok: --check-precision --json" || { echo "FAIL: --check-precision --json"; fail=$((fail+1)); }
# Keep-warm: a bad count is a usage error; a bad $OCL_INFER_KEEP_WARM is a warning and the default.
expect 2 "--keep-warm needs auto, spin, off or a number of markers" -- $w/good.onnx --input x=$w/x.npy --output-dir $w/o --keep-warm many
expect 2 "--keep-warm" -- $w/good.onnx --input x=$w/x.npy --output-dir $w/o --keep-warm -1
err=$(OCL_INFER_KEEP_WARM=lots "$bin" $w/good.onnx --input x=$w/x.npy --output-dir $w/okw 2>&1 >/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "warning: \$OCL_INFER_KEEP_WARM='lots' is not spin, auto or a count" <<<"$err" || [ ! -f $w/okw/y.npy ]; then
  echo "FAIL: bad \$OCL_INFER_KEEP_WARM (rc=$rc): $err"; fail=$((fail+1))
else echo "ok: bad \$OCL_INFER_KEEP_WARM warned"; fi
out=$("$bin" $w/good.onnx --input x=$w/x.npy --bench --iterations 3 --keep-warm 0 2>/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -q "^keep-warm:  off" <<<"$out"; then
  echo "FAIL: --bench --keep-warm 0 (rc=$rc): $out"; fail=$((fail+1))
else echo "ok: --bench names keep-warm"; fi
out=$("$bin" $w/good.onnx --input x=$w/x.npy --bench --iterations 3 --keep-warm spin 2>/dev/null); rc=$?
if [ $rc != 0 ] || ! grep -qE "^keep-warm:  (spinner before each kernel launch|off)" <<<"$out"; then
  echo "FAIL: --bench --keep-warm spin (rc=$rc): $out"; fail=$((fail+1))
else echo "ok: --keep-warm spin"; fi
# --bench with --output-dir also writes the first run's outputs.
"$bin" $w/good.onnx --input $w/ones.npy --bench --iterations 2 --output-dir $w/ob >/dev/null 2>&1 && [ -f $w/ob/y.npy ] \
  && echo "ok: --bench --output-dir writes outputs" || { echo "FAIL: --bench --output-dir"; fail=$((fail+1)); }
echo "cli errors: $fail failed"
[ $fail -eq 0 ]
