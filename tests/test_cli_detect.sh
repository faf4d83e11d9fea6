#!/usr/bin/env bash
# `ocl-infer --task detect` against a NumPy reference: the YOLOv8- and YOLOv5-layout test models
# (models/export_yolo_like.py, made when missing) on darknet's dog.jpg. The reference decodes the
# photo with PIL, letterboxes it as the CLI does, runs the model in ONNX Runtime, decodes the
# output, runs greedy class-aware NMS and maps the boxes back. On a lossless PNG of that decode the
# CLI must agree to float rounding; on the JPEG itself (stb_image decodes it, a pixel may differ by
# a level or two) within small tolerances. Also: a model with its own NMS (boxes/scores/labels,
# open input size), labels files, the table, --draw's PNG, and clear errors for models whose
# outputs are not detections and for bad arguments.
# usage: test_cli_detect.sh OCL_INFER_BINARY [MODELS_DIR]   (default: models/ beside the binary)
# Needs the Python environment of models/install_deps.sh ($OCL_INFER_PYENV, default build/pyenv:
# torch, onnx, onnxruntime, PIL); exits 77 (skipped) without it.
set -uo pipefail
bin=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models=${2:-$(dirname "$bin")/models}
py="${OCL_INFER_PYENV:-$root/build/pyenv}/bin/python"
photo=/usr/share/darknet/data/dog.jpg
if [ ! -x "$py" ] || ! "$py" -c "import onnxruntime, PIL, torch, onnx" 2>/dev/null; then
  echo "skipped: no Python environment with torch, onnx, onnxruntime and PIL at $py"; exit 77
fi
if [ ! -f "$photo" ]; then echo "skipped: $photo is missing (darknet's data)"; exit 77; fi
mkdir -p "$models"
if [ ! -f "$models/yolov8_like.onnx" ] || [ ! -f "$models/yolov5_like.onnx" ]; then
  "$py" "$root/models/export_yolo_like.py" --out "$models" || { echo "FAIL: export_yolo_like.py"; exit 1; }
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OCL_INFER_CACHE_DIR=${OCL_INFER_CACHE_DIR:-$work/cache}
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=$((fail+1)); }

# The reference, and the models this test makes itself.
cat > "$work/ref.py" <<'PY'
import json, math, sys
import numpy as np

def decode_photo(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB"))

def letterbox(img, width, height, pad=114.0):
    """tools/image.cpp letterbox_image: bilinear, half-pixel centres, float32 (v * 1/255)."""
    h, w = img.shape[:2]
    r = min(width / w, height / h)
    nw = min(max(int(math.floor(w * r + 0.5)), 1), width)
    nh = min(max(int(math.floor(h * r + 0.5)), 1), height)
    left, top = (width - nw) // 2, (height - nh) // 2
    def axis(n_dst, n_src):
        f = np.maximum(0.0, (np.arange(n_dst) + 0.5) * (n_src / n_dst) - 0.5)
        i = np.minimum(f.astype(np.int64), n_src - 1)
        return i, np.minimum(i + 1, n_src - 1), f - i
    iy, iy1, wy = axis(nh, h)
    ix, ix1, wx = axis(nw, w)
    s = img.astype(np.float64)
    wy, wx = wy[:, None, None], wx[None, :, None]
    v = (1 - wy) * ((1 - wx) * s[iy][:, ix] + wx * s[iy][:, ix1]) + wy * ((1 - wx) * s[iy1][:, ix] + wx * s[iy1][:, ix1])
    out = np.full((height, width, 3), pad, np.float64)
    out[top:top + nh, left:left + nw] = v
    x = out.astype(np.float32) * np.float32(1.0 / 255.0)
    return x.transpose(2, 0, 1)[None].copy(), (nw / w, nh / h, left, top)

def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0])); iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    ua = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1]) + max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0

def detect(model, photo, conf, iou_thr, max_det):
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    _, _, H, W = sess.get_inputs()[0].shape
    img = decode_photo(photo)
    x, (sx, sy, left, top) = letterbox(img, W, H)
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0][0].astype(np.float64)
    layout = "yolov8" if y.shape[0] < y.shape[1] else "yolov5"
    if layout == "yolov8":  # [4+C, N]
        xywh, cls = y[:4].T, y[4:].T
        label, score = cls.argmax(1), cls.max(1)
        keep = score > conf
    else:  # [N, 5+C]
        xywh, obj, cls = y[:, :4], y[:, 4], y[:, 5:]
        label = cls.argmax(1)
        score = obj * cls[np.arange(len(cls)), label]
        keep = (obj > conf) & (score > conf)
    cand = [(float(score[i]), int(label[i]), [xywh[i, 0] - xywh[i, 2] / 2, xywh[i, 1] - xywh[i, 3] / 2,
                                              xywh[i, 0] + xywh[i, 2] / 2, xywh[i, 1] + xywh[i, 3] / 2])
            for i in np.nonzero(keep)[0]]
    cand.sort(key=lambda c: -c[0])  # stable, as the CLI's
    kept = []
    for c in cand:
        if len(kept) >= max_det: break
        if all(k[1] != c[1] or iou(k[2], c[2]) <= iou_thr for k in kept): kept.append(c)
    h, w = img.shape[:2]
    out = []
    for s, l, b in kept:
        box = [min(max((b[0] - left) / sx, 0), w), min(max((b[1] - top) / sy, 0), h),
               min(max((b[2] - left) / sx, 0), w), min(max((b[3] - top) / sy, 0), h)]
        out.append({"index": l, "score": s, "box": box})
    return {"width": w, "height": h, "input": [W, H], "layout": layout, "detections": out}

def compare(ref, got, score_tol, box_tol):
    """'' when the CLI's detections of one photo match the reference, else why not."""
    keys = ["width", "height", "input", "layout"]
    if [got[k] for k in keys] != [ref[k] for k in keys]:
        return f"photo, input, layout {[got[k] for k in keys]}, want {[ref[k] for k in keys]}"
    g, r = got["detections"], ref["detections"]
    if [d["index"] for d in g] != [d["index"] for d in r]:
        return f"classes {[d['index'] for d in g]}, want {[d['index'] for d in r]}"
    for k, (a, b) in enumerate(zip(g, r)):
        if abs(a["score"] - b["score"]) > score_tol:
            return f"detection {k}: score {a['score']}, want {b['score']}"
        if max(abs(p - q) for p, q in zip(a["box"], b["box"])) > box_tol:
            return f"detection {k}: box {a['box']}, want {b['box']}"
    return ""

if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "png":  # PIL's decode of the photo, lossless
        from PIL import Image
        Image.fromarray(decode_photo(sys.argv[2])).save(sys.argv[3])
    elif cmd == "check":  # check MODEL REF_PHOTO CLI_JSON CONF IOU MAX_DET SCORE_TOL BOX_TOL MIN_DETECTIONS
        model, photo, got_file = sys.argv[2:5]
        conf, iou_thr, max_det, score_tol, box_tol = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
        ref = detect(model, photo, conf, iou_thr, max_det)
        got = json.load(open(got_file))["results"][0]
        why = compare(ref, got, score_tol, box_tol)
        if not why and len(ref["detections"]) < int(sys.argv[10]):
            why = f"only {len(ref['detections'])} detections in the reference: the test model plants more"
        print(why or f"{len(got['detections'])} detections, classes {[d['index'] for d in got['detections']]}")
        sys.exit(1 if why else 0)
PY
"$py" "$work/ref.py" png "$photo" "$work/dog.png" || { echo "FAIL: PIL cannot decode $photo"; exit 1; }
"$py" - "$work" <<'PY' || { echo "FAIL: making the test models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
w = sys.argv[1]
op = lambda *a, **k: helper.make_node(*a, **k)
# A model with its "own NMS" and an open input size [3,H,W]: box 0 is the whole input (from its
# shape), box 1 fixed; scores and labels fixed; the scores pass through the input so that it is used.
# own_nms_misnamed.onnx: the same with the names of scores and labels swapped (as an export that
# names outputs in the wrong order writes them): dtypes decide then.
def own_nms(score_name, label_name):
    return [op("Shape", ["images"], ["shape"]), op("Gather", ["shape", "hw_idx"], ["wh_i"], axis=0),
            op("Cast", ["wh_i"], ["wh"], to=TensorProto.FLOAT), op("Concat", ["zeros2", "wh"], ["box0"], axis=0),
            op("Unsqueeze", ["box0", "ax0"], ["box0r"]), op("Concat", ["box0r", "box1"], ["boxes"], axis=0),
            op("ReduceMean", ["images"], ["m"], keepdims=0), op("Mul", ["m", "zero"], ["m0"]),
            op("Add", ["score_c", "m0"], [score_name]), op("Identity", ["label_c"], [label_name])]
inits = [numpy_helper.from_array(np.array([2, 1], np.int64), "hw_idx"),
         numpy_helper.from_array(np.zeros(2, np.float32), "zeros2"),
         numpy_helper.from_array(np.array([0], np.int64), "ax0"),
         numpy_helper.from_array(np.array([[10, 20, 110, 220]], np.float32), "box1"),
         numpy_helper.from_array(np.array(0, np.float32), "zero"),
         numpy_helper.from_array(np.array([0.9, 0.6], np.float32), "score_c"),
         numpy_helper.from_array(np.array([18, 3], np.int64), "label_c")]
for file, sn, ln in [("own_nms", "scores", "labels"), ("own_nms_misnamed", "labels", "scores")]:
    g = helper.make_graph(own_nms(sn, ln), file, [helper.make_tensor_value_info("images", TensorProto.FLOAT, [3, "h", "w"])],
                          [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["n", 4]),
                           helper.make_tensor_value_info(ln, TensorProto.INT64, ["n"]),
                           helper.make_tensor_value_info(sn, TensorProto.FLOAT, ["n"])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{w}/{file}.onnx")
# A classifier-shaped model: outputs that are not detections.
g = helper.make_graph([op("GlobalAveragePool", ["x"], ["p"]), op("Flatten", ["p"], ["y"])], "cls",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w + "/classifier.onnx")
# A model whose input is no image.
g = helper.make_graph([op("Relu", ["x"], ["y"])], "vec", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w + "/vector.onnx")
PY
cp "$root/models/coco91_labels.txt" "$work/own_nms.labels.txt"
cp "$root/models/coco91_labels.txt" "$work/own_nms_misnamed.labels.txt"

# 1. Both YOLO layouts against the reference: defaults, then other thresholds. The real YOLOv8n of
#    models/export_yolov8.py too where make_all.sh made it (it needs PyPI once).
real=()
[ -f "$models/yolov8n.onnx" ] && real=(yolov8n)
for m in yolov8_like yolov5_like "${real[@]}"; do
  model="$models/$m.onnx"
  for params in "0.25 0.45 100 5" "0.5 0.3 3 3" "0.001 0.9 100 5"; do
    set -- $params
    # The planted models have at least 5 objects; dog.jpg has 3 for YOLOv8n above 0.5, 4 above 0.25.
    [ "$m" = yolov8n ] && set -- "$1" "$2" "$3" 3
    flags=(--conf "$1" --iou "$2" --max-det "$3")
    if "$bin" "$model" "$work/dog.png" --task detect "${flags[@]}" --json > "$work/got.json" 2>"$work/err.txt" &&
       r=$("$py" "$work/ref.py" check "$model" "$work/dog.png" "$work/got.json" "$1" "$2" "$3" 2e-4 0.05 "$4"); then
      ok "$m ${flags[*]} (png): $r"
    else bad "$m ${flags[*]} (png): ${r:-}$(cat "$work/err.txt")"; fi
    r=
  done
  # The JPEG itself: stb_image's decode against PIL's.
  if "$bin" "$model" "$photo" --task detect --json > "$work/got.json" 2>"$work/err.txt" &&
     r=$("$py" "$work/ref.py" check "$model" "$photo" "$work/got.json" 0.25 0.45 100 0.01 1.5 "$([ "$m" = yolov8n ] && echo 4 || echo 5)"); then
    ok "$m (jpg): $r"
  else bad "$m (jpg): ${r:-}$(cat "$work/err.txt")"; fi
  r=
done

# 2. The table: one header line, a row per detection with the label from MODEL.labels.txt, the same
#    numbers as the JSON.
"$bin" "$models/yolov8_like.onnx" "$work/dog.png" --task detect --json > "$work/v8.json" 2>/dev/null
if "$bin" "$models/yolov8_like.onnx" "$work/dog.png" --task detect > "$work/table.txt" 2>"$work/err.txt" &&
   "$py" - "$work/table.txt" "$work/v8.json" <<'PY'
import sys, json
lines = open(sys.argv[1]).read().splitlines()
got = json.load(open(sys.argv[2]))["results"][0]["detections"]
assert lines[0].endswith("dog.png: %d detections (768x576 photo, 320x320 input, YOLOv8 [1,4+C,N] [1,84,400])" % len(got)), lines[0]
assert lines[1].split() == ["class", "label", "score", "x1", "y1", "x2", "y2"], lines[1]
rows = [l.split() for l in lines[2:]]
assert len(rows) == len(got), (rows, got)
for r, d in zip(rows, got):
    assert int(r[0]) == d["index"] and r[1] == d["label"], (r, d)
    assert abs(float(r[2]) - d["score"]) < 1e-4 and all(abs(float(a) - b) < 0.051 for a, b in zip(r[3:], d["box"])), (r, d)
labels = [d["label"] for d in got]
assert labels[:2] == ["dog", "bicycle"] and "car" in labels and "truck" in labels, labels
PY
then ok "table matches the JSON, labels from yolov8_like.labels.txt"; else bad "table: $(head -3 "$work/table.txt") $(cat "$work/err.txt")"; fi

# 3. Labels: --labels FILE; no labels file beside the model -> class indices.
printf 'zero\none\n' > "$work/two.txt"
out=$("$bin" "$models/yolov8_like.onnx" "$work/dog.png" --task detect --labels "$work/two.txt" 2>/dev/null)
if grep -q "^ *1  one " <<<"$out" && grep -q "^ *16  class 16 " <<<"$out"; then ok "--labels FILE (names, else indices)"
else bad "--labels: $out"; fi
cp "$models/yolov8_like.onnx" "$work/nolabels.onnx"
out=$("$bin" "$work/nolabels.onnx" "$work/dog.png" --task detect --json 2>/dev/null)
if grep -q '"index": 16, "label": "class 16"' <<<"$out"; then ok "no labels file: class indices"
else bad "no labels file: $out"; fi

# 4. A model with its own NMS and an open input size: the longer side becomes --size (default 320),
#    no padding; box 0 is the whole input, so it maps to the whole photo.
for size in "" 400 misnamed; do
  model="$work/own_nms.onnx"
  [ "$size" = misnamed ] && model="$work/own_nms_misnamed.onnx" size=
  want_w=${size:-320}
  if "$bin" "$model" "$photo" --task detect ${size:+--size $size} --json > "$work/own.json" 2>"$work/err.txt" &&
     "$py" - "$work/own.json" "$want_w" <<'PY'
import sys, json
r = json.load(open(sys.argv[1]))["results"][0]
W = int(sys.argv[2]); H = round(576 * W / 768)
assert r["input"] == [W, H] and r["layout"] == "boxes_scores_labels", r
d = r["detections"]
assert [(x["index"], x["label"]) for x in d] == [(18, "dog"), (3, "car")], d
assert abs(d[0]["score"] - 0.9) < 1e-6 and abs(d[1]["score"] - 0.6) < 1e-6, d
assert all(abs(a - b) < 1e-3 for a, b in zip(d[0]["box"], [0, 0, 768, 576])), d[0]
s = 768 / W
assert all(abs(a - b * s) < 1e-2 for a, b in zip(d[1]["box"], [10, 20, 110, 220])), (d[1], s)
PY
  then ok "$(basename "$model"), open input size, --size ${size:-default}"
  else bad "$(basename "$model") --size ${size:-default}: $(cat "$work/err.txt") $(cat "$work/own.json")"; fi
done
out=$("$bin" "$work/own_nms.onnx" "$photo" --task detect --conf 0.7 2>/dev/null)
if grep -q "1 detection " <<<"$out" && grep -q "^ *18  dog " <<<"$out"; then ok "own-NMS model: --conf filters"
else bad "own-NMS --conf 0.7: $out"; fi

# 5. --draw: a PNG of the photo's size with the best box's edge in its class colour; several
#    photos get numbered files.
if "$bin" "$models/yolov8_like.onnx" "$photo" --task detect --draw "$work/out.png" --json > "$work/d.json" 2>"$work/err.txt" &&
   "$py" - "$work/out.png" "$work/d.json" <<'PY'
import sys, json, numpy as np
from PIL import Image
im = Image.open(sys.argv[1]); assert im.size == (768, 576) and im.mode == "RGB", (im.size, im.mode)
a = np.asarray(im); d = json.load(open(sys.argv[2]))["results"][0]["detections"][0]
assert d["label"] == "dog", d
x0, y0, x1, y1 = [int(round(v)) for v in d["box"]]
palette = [(255, 56, 56), (255, 157, 151), (255, 112, 31), (255, 178, 29), (207, 210, 49), (72, 249, 10), (146, 204, 23),
           (61, 219, 134), (26, 147, 52), (0, 212, 187), (44, 153, 168), (0, 194, 255), (52, 69, 147), (100, 115, 255),
           (0, 24, 236), (132, 56, 255), (82, 0, 133), (203, 56, 255), (255, 149, 200), (255, 55, 199)]
want = palette[d["index"] % 20]
for (x, y) in [(x0 + 1, (y0 + y1) // 2), (x1 - 2, (y0 + y1) // 2), ((x0 + x1) // 2, y1 - 2)]:
    assert tuple(a[y, x]) == want, ((x, y), a[y, x], want)
PY
then ok "--draw writes a 768x576 PNG with the boxes"; else bad "--draw: $(cat "$work/err.txt")"; fi
if "$bin" "$models/yolov5_like.onnx" "$photo" "$work/dog.png" --task detect --draw "$work/many.png" >/dev/null 2>&1 &&
   [ -s "$work/many-1.png" ] && [ -s "$work/many-2.png" ] && [ ! -e "$work/many.png" ]; then ok "--draw with two photos"
else bad "--draw with two photos: $(ls "$work")"; fi

# 6. Models whose outputs are not detections, inputs that are not images: a clear error, status 1.
expect() {  # expect CODE PATTERN -- ARGS...
  local code=$1 pat=$2; shift 3
  local err rc
  err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$err"; then bad "ocl-infer $* -> rc=$rc (want $code), stderr: $err"
  else ok "$* -> $(grep -v '^ocl-infer: device' <<<"$err" | head -1)"; fi
}
expect 1 "cannot be read as detections.*'y' float32 \[1,3\]" -- "$work/classifier.onnx" "$photo" --task detect
if [ -f "$models/resnet18.onnx" ]; then
  expect 1 "cannot be read as detections.*\[1,1000\]" -- "$models/resnet18.onnx" "$photo" --task detect
fi
expect 1 "needs a float32 image input.*\[1,10\]" -- "$work/vector.onnx" "$photo" --task detect
expect 1 "cannot read image" -- "$models/yolov8_like.onnx" "$work/missing.jpg" --task detect
expect 1 "cannot read labels file" -- "$models/yolov8_like.onnx" "$photo" --task detect --labels "$work/missing.txt"
expect 1 "cannot write PNG" -- "$models/yolov8_like.onnx" "$photo" --task detect --draw "$work/no/such/dir/x.png"
# 7. Bad arguments: status 2.
expect 2 "--task must be classify or detect" -- "$models/yolov8_like.onnx" "$photo" --task segment
expect 2 "--conf needs a number in \[0, 1\]" -- "$models/yolov8_like.onnx" "$photo" --task detect --conf 1.5
expect 2 "--iou needs a number in \[0, 1\]" -- "$models/yolov8_like.onnx" "$photo" --task detect --iou x
expect 2 "--max-det needs an integer" -- "$models/yolov8_like.onnx" "$photo" --task detect --max-det 0
expect 2 "apply to --task detect" -- "$models/yolov8_like.onnx" "$photo" --task classify --conf 0.5
expect 2 "apply to classification" -- "$models/yolov8_like.onnx" "$photo" --task detect --top 3
expect 2 "give photos" -- "$models/yolov8_like.onnx" --task detect
expect 2 "already quantized" -- "$models/yolov8_like.onnx" "$photo" --task detect --precision int8 --calibration "$work"
expect 2 "--size with --task detect must be positive" -- "$models/yolov8_like.onnx" "$photo" --task detect --size 0
# 7b. Without --task: a model whose outputs are plainly a detector's is detected (with a note on
#     stderr), as is any run with a detection flag; classifiers still classify.
"$bin" "$models/yolov8_like.onnx" "$work/dog.png" --task detect --json > "$work/explicit.json" 2>/dev/null
for extra in "" "--conf 0.25"; do
  if "$bin" "$models/yolov8_like.onnx" "$work/dog.png" $extra --json > "$work/auto.json" 2>"$work/err.txt" &&
     cmp -s "$work/auto.json" "$work/explicit.json" && { [ -n "$extra" ] || grep -q "read as detections" "$work/err.txt"; }; then
    ok "no --task${extra:+, $extra}: detected as with --task detect"
  else bad "no --task${extra:+, $extra}: $(cat "$work/err.txt" "$work/auto.json" | head -5)"; fi
done
if [ -f "$models/resnet18.onnx" ]; then
  if out=$("$bin" "$models/resnet18.onnx" "$photo" --json 2>"$work/err.txt") && grep -q '"top"' <<<"$out" &&
     ! grep -q "read as detections" "$work/err.txt"; then ok "no --task, a classifier: classified"
  else bad "no --task, a classifier: $out $(cat "$work/err.txt")"; fi
fi
if "$bin" "$models/yolov8_like.onnx" "$work/dog.png" --task classify > "$work/cls.txt" 2>"$work/err.txt"; then
  bad "--task classify on a YOLO head: no error"
elif grep -q "not one score per class" "$work/err.txt"; then ok "--task classify on a YOLO head: refused, says why"
else bad "--task classify on a YOLO head: $(cat "$work/err.txt")"; fi
# 8. torchvision's detectors (models/export_detection.py), when exported and when the runtime has
#    their operators: the CLI's detections on the PNG against ONNX Runtime's on the same input
#    (open input size: the longer side becomes 320, no padding). Random weights give many near-tied
#    scores, so the 10 best CLI detections must each have a reference partner (same label, score
#    within 1e-3, IoU >= 0.98) rather than the lists being equal.
for m in ssdlite320_mobilenet_v3_large fasterrcnn_mobilenet_v3_large_320_fpn; do
  model="$models/$m.onnx"
  [ -f "$model" ] || { echo "skipped: $m (not exported; models/export_detection.py)"; continue; }
  if ! "$bin" "$model" "$work/dog.png" --task detect --conf 0.005 --json > "$work/tv.json" 2>"$work/err.txt"; then
    if grep -q "unsupported operator" "$work/err.txt"; then echo "skipped: $m: $(grep -v '^ocl-infer: device' "$work/err.txt" | head -1)"
    else bad "$m: $(cat "$work/err.txt")"; fi
    continue
  fi
  if r=$("$py" - "$model" "$work/dog.png" "$work/tv.json" "$work/ref.py" <<'PY'
import sys, json, importlib.util, numpy as np, onnxruntime as ort
spec = importlib.util.spec_from_file_location("ref", sys.argv[4]); ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
img = ref.decode_photo(sys.argv[2]); h, w = img.shape[:2]
W = 320 if w >= h else round(w * 320 / h); H = round(h * W / w)
x, (sx, sy, left, top) = ref.letterbox(img, W, H)
boxes, scores, labels = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"]).run(
    ["boxes", "scores", "labels"], {"images": x[0]})
if scores.dtype.kind in "iu":  # exported before export_detection.py named outputs by their dict order
    scores, labels = labels, scores
want = [(float(s), int(l), [min(max(b[0] / sx, 0), w), min(max(b[1] / sy, 0), h), min(max(b[2] / sx, 0), w), min(max(b[3] / sy, 0), h)])
        for b, s, l in zip(boxes, scores, labels) if s > 0.005]
got = json.load(open(sys.argv[3]))["results"][0]
assert got["input"] == [W, H] and got["layout"] == "boxes_scores_labels", got
d = got["detections"]
assert len(d) >= min(10, len(want)) and abs(len(d) - len(want)) <= 0.1 * len(want) + 1, (len(d), len(want))
assert all(d[k]["score"] >= d[k + 1]["score"] for k in range(len(d) - 1)), "not sorted by score"
for k, g in enumerate(d[:10]):
    if not any(l == g["index"] and abs(s - g["score"]) <= 1e-3 and ref.iou(b, g["box"]) >= 0.98 for s, l, b in want):
        sys.exit(f"detection {k} {g} has no partner in ONNX Runtime's")
print(f"{len(d)} detections (ONNX Runtime {len(want)}), best {d[0]['label']} {d[0]['score']:.3f}")
PY
  ); then ok "$m: $r"; else bad "$m: $r"; fi
done
echo "cli detect: $fail failed"
[ $fail -eq 0 ]
