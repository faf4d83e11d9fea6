#!/usr/bin/env python3
"""Exports torchvision's detectors with random weights as ONNX test models, with ONNX Runtime's
outputs as the reference.

For NAME in ssdlite320_mobilenet_v3_large and fasterrcnn_mobilenet_v3_large_320_fpn this writes,
under --out:
  NAME.onnx           opset 11 (torchvision's detection export), input "images" float32
                      [3, H, W] with H and W symbolic; outputs "boxes" [N, 4], "scores" [N],
                      "labels" [N] (int64), N data-dependent. The graphs hold If, Loop, NonZero,
                      TopK, NonMaxSuppression, RoiAlign, ScatterElements, ... -- what torchvision's
                      post-processing exports as.
  NAME.in0.npy, NAME.in1.npy     two inputs of different sizes (320x320 and 288x352), fixed seed
  NAME.out0_boxes.npy ...        ONNX Runtime's three outputs for each input

Weights are torchvision's initialisation under a fixed seed (no pretrained weights: nothing is
downloaded). The score thresholds are lowered so that the untrained heads still give detections
(an untrained classifier scores every class about 1/91), and the post-processing's NMS, top-k and
box decoding are exercised with many boxes. Run with a python that sees Debian's python3-torch,
python3-torchvision and python3-onnx, plus onnxruntime (models/install_deps.sh sets one up).
"""

import argparse
import os
import sys

import numpy as np
import torch
import torchvision

OPSET = 11
SEED = 20261203
SIZES = ((320, 320), (288, 352))
MODELS = ("ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn")


def build(name: str) -> torch.nn.Module:
    torch.manual_seed(SEED)
    if name.startswith("ssdlite"):
        m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      score_thresh=0.001, detections_per_img=100,
                                                                      topk_candidates=150)
    else:
        m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, box_score_thresh=0.011, box_detections_per_img=50,
            rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=150)
    return m.eval()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import onnxruntime as ort

    for name in args.models:
        path = os.path.join(args.out, name + ".onnx")
        last = os.path.join(args.out, f"{name}.out{len(SIZES) - 1}_labels.npy")
        if os.path.exists(path) and os.path.exists(last) and not args.force:
            continue
        model = build(name)
        gen = torch.Generator().manual_seed(SEED + 1)
        inputs = [torch.rand((3, h, w), generator=gen) for h, w in SIZES]
        torch.onnx.export(model, ([inputs[0]],), path, opset_version=OPSET, input_names=["images"],
                          output_names=["boxes", "scores", "labels"],
                          dynamic_axes={"images": {1: "height", 2: "width"}, "boxes": {0: "detections"},
                                        "scores": {0: "detections"}, "labels": {0: "detections"}})
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for k, x in enumerate(inputs):
            np.save(os.path.join(args.out, f"{name}.in{k}.npy"), x.numpy())
            outs = sess.run(None, {"images": x.numpy()})
            with torch.no_grad():
                ref = model([x])[0]
            # The export must reproduce PyTorch (same detections) before ORT's outputs serve as
            # the golden data.
            if outs[0].shape[0] != ref["boxes"].shape[0]:
                print(f"export_detection: {name} input {k}: onnxruntime gives {outs[0].shape[0]} boxes, "
                      f"PyTorch {ref['boxes'].shape[0]}", file=sys.stderr)
                return 1
            for field, value in zip(("boxes", "scores", "labels"), outs):
                np.save(os.path.join(args.out, f"{name}.out{k}_{field}.npy"), value)
            print(f"export_detection: {name} {tuple(x.shape)}: {outs[0].shape[0]} detections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
