#!/usr/bin/env python3
"""Checks `ocl-infer quantize` end to end on the trained EfficientNet-Lite0 and real photos.

    build/pyenv/bin/python tools/check_int8_accuracy.py [--photos DIR] [--calibration-images 50]

1. Photos: models/collect_photos.sh fills DIR (default build/photos) with two disjoint sets of
   real photographs from Debian packages: calibration/ and test/ (see its MANIFEST.txt).
2. `ocl-infer quantize efficientnet_lite0.onnx --calibration DIR/calibration --max-images N`
   (C++, no Python involved) writes a QDQ model, preprocessing as the model was trained:
   (pixel - 127) / 128.
3. On every photo of DIR/test (none used for calibration): the fp32 model's top-1 and the int8
   model's top-1, both through the ocl-infer CLI, and the int8 model's top-1 in onnxruntime (which
   must load and run the written model), fed the same preprocessed tensor.
Prints a table and the agreement; exits 1 when the int8 top-1 matches the fp32 top-1 on fewer than
--min-agreement (default 90 %) of the test photos, or onnxruntime cannot run the model.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "models"))
# Mean/std of the model's training, and the decode/resize/crop the CLI mirrors.
import export_efficientnet_lite0 as lite0  # noqa: E402


def cli_top1(binary: str, model: str, photos: list, flags: list) -> list:
    out = subprocess.run([binary, model] + photos + flags + ["--json", "--top", "1"], check=True,
                         capture_output=True, text=True).stdout
    return [r["top"][0]["index"] for r in json.loads(out)["results"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ocl-infer", default=os.path.join(REPO_ROOT, "build", "ocl-infer"))
    parser.add_argument("--model", default=os.path.join(REPO_ROOT, "build", "models", "efficientnet_lite0.onnx"))
    parser.add_argument("--photos", default=os.path.join(REPO_ROOT, "build", "photos"))
    parser.add_argument("--calibration-images", type=int, default=50)
    parser.add_argument("--method", default="minmax", choices=("minmax", "percentile", "entropy"))
    parser.add_argument("--min-agreement", type=float, default=0.9)
    parser.add_argument("--keep", help="also write the quantized model to this path")
    args = parser.parse_args()

    subprocess.run([os.path.join(REPO_ROOT, "models", "collect_photos.sh"), args.photos], check=True,
                   stdout=subprocess.DEVNULL)
    test = sorted(os.path.join(args.photos, "test", f) for f in os.listdir(os.path.join(args.photos, "test")))
    pre = ["--mean", "127,127,127", "--std", "128,128,128", "--scale", "1"]
    with tempfile.TemporaryDirectory() as tmp:
        int8 = args.keep or os.path.join(tmp, "efficientnet_lite0.int8.onnx")
        report = subprocess.run([args.ocl_infer, "quantize", args.model, "--calibration",
                                 os.path.join(args.photos, "calibration"), "--max-images",
                                 str(args.calibration_images), "--method", args.method, "-o", int8] + pre,
                                check=True, capture_output=True, text=True).stdout
        print(report.splitlines()[0])
        fp32_top = cli_top1(args.ocl_infer, args.model, test, pre)
        int8_top = cli_top1(args.ocl_infer, int8, test, pre)
        import onnxruntime as ort
        session = ort.InferenceSession(int8, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        ort_top = [int(session.run(None, {name: lite0.preprocess(lite0.decode_rgb(p))})[0].argmax()) for p in test]
    labels = lite0.imagenet_labels()
    agree = sum(a == b for a, b in zip(fp32_top, int8_top))
    agree_ort = sum(a == b for a, b in zip(int8_top, ort_top))
    print(f"{'photo':56} {'fp32 top-1':28} {'int8 top-1 (ocl-infer)':28} onnxruntime int8")
    for p, a, b, c in zip(test, fp32_top, int8_top, ort_top):
        flag = "" if a == b else "  <- differs from fp32"
        print(f"{os.path.basename(p):56} {a:4} {labels[a][:22]:23} {b:4} {labels[b][:22]:23} {c:4}{flag}")
    print(f"int8 top-1 = fp32 top-1 on {agree} of {len(test)} test photos ({100.0 * agree / len(test):.0f} %); "
          f"onnxruntime's top-1 on the same int8 model = ocl-infer's on {agree_ort} of {len(test)}")
    if agree < args.min_agreement * len(test):
        sys.exit(f"check_int8_accuracy: agreement below {100 * args.min_agreement:.0f} %")


if __name__ == "__main__":
    main()
