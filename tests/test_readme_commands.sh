#!/usr/bin/env bash
# Runs the `ocl-infer` command lines that README.md shows, on the test models, and checks what
# each prints or writes (the numbers themselves are checked against references by the other
# tests; here: that every documented command works as documented).
#   tests/test_readme_commands.sh OCL_INFER_BINARY MODELS_DIR
set -euo pipefail
cli=$1 models=$2
for f in efficientnet_lite0.onnx squeezenet1_1.onnx squeezenet1_1.input.npy squeezenet1_1.output.npy dog.jpg; do
  [[ -f "$models/$f" ]] || { echo "skipped: $models/$f is missing (models/make_all.sh)"; exit 77; }
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OCL_INFER_TUNING_CACHE="$work/tuning.tsv"   # tuning here must not steer other tests
step() { echo "== $*"; }

step "demo: classify the sample photo (tools/demo.sh's command)"
"$cli" "$models/efficientnet_lite0.onnx" "$models/dog.jpg" --mean 0.498039216,0.498039216,0.498039216 \
  --std 0.501960784,0.501960784,0.501960784 | tee "$work/top5.txt"
grep -q "1\. .* malamute" "$work/top5.txt"

step "tensors in, .npy out"
"$cli" "$models/squeezenet1_1.onnx" --input "input=$models/squeezenet1_1.input.npy" --output-dir "$work/out"
/usr/bin/python3 - "$work/out/logits.npy" "$models/squeezenet1_1.output.npy" <<'PY'
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
assert got.shape == want.shape and np.abs(got - want).max() <= 1e-4 * max(1, np.abs(want).max()), np.abs(got - want).max()
PY

step "tensors in, .npy out: a one-input model's input without its name"
"$cli" "$models/squeezenet1_1.onnx" --input "$models/squeezenet1_1.input.npy" --output-dir "$work/out1"
cmp "$work/out/logits.npy" "$work/out1/logits.npy"

step "fp16 storage, and its per-node check"
"$cli" "$models/squeezenet1_1.onnx" "$models/dog.jpg" --precision fp16 --top 3 > "$work/o.txt"; grep -q "1\." "$work/o.txt"
"$cli" "$models/squeezenet1_1.onnx" --check-precision fp16 --input "input=$models/squeezenet1_1.input.npy" \
  > "$work/check.txt"
grep -qi "cosine" "$work/check.txt"

step "profile and benchmark"
"$cli" "$models/squeezenet1_1.onnx" --profile --iterations 3 --profile-html "$work/report.html" > "$work/o.txt"; grep -q "Conv" "$work/o.txt"
grep -q "<html" "$work/report.html"
"$cli" "$models/squeezenet1_1.onnx" --bench --iterations 5 --warmup 1 --json > "$work/o.txt"; grep -q '"median_ms"' "$work/o.txt"

step "tune (budget 10 s) and quantize with calibration photos, then run the int8 model"
"$cli" tune "$models/squeezenet1_1.onnx" --budget 10 --tuning-cache "$work/tuning.tsv" >/dev/null
[[ -s "$work/tuning.tsv" ]]
mkdir "$work/photos"
cp /usr/share/darknet/data/{dog,eagle,giraffe}.jpg "$work/photos/" 2>/dev/null || cp "$models/dog.jpg" "$work/photos/"
"$cli" quantize "$models/squeezenet1_1.onnx" --calibration "$work/photos" -o "$work/sq.int8.onnx" >/dev/null
"$cli" "$work/sq.int8.onnx" "$models/dog.jpg" --top 3 > "$work/o.txt"; grep -q "1\." "$work/o.txt"

step "detection"
if [[ -f "$models/yolov8_like.onnx" ]]; then
  "$cli" "$models/yolov8_like.onnx" "$models/dog.jpg" --task detect --draw "$work/boxes.png" --json > "$work/o.txt"; grep -q '"detections"' "$work/o.txt"
  [[ -s "$work/boxes.png" ]]
fi

step "listings"
"$cli" --list-devices > "$work/o.txt"; grep -q "^0: " "$work/o.txt"
"$cli" --list-ops > "$work/o.txt"; grep -q "^Conv " "$work/o.txt"
"$cli" --list-variants > "$work/o.txt"; grep -q "^conv=" "$work/o.txt"
echo "README commands: ok"
