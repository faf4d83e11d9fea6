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
  NAME.labels.txt     torchvision's 91 COCO category names (models/coco91_labels.txt: index 0 is
                      the background, "N/A" marks unused ids), which `ocl-infer --task detect` finds
                      beside the model

Weights are torchvision's initialisation under a fixed seed (no pretrained weights: nothing is
downloaded). The score thresholds are lowered so that the untrained heads still give detections
(an untrained classifier scores every class about 1/91), and the post-processing's NMS, top-k and
box decoding are exercised with many boxes. Run with a python that sees Debian's python3-torch,
python3-torchvision and python3-onnx, plus onnxruntime (models/install_deps.sh sets one up).
"""

import argparse
import os
import shutil
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
    # Untrained BatchNorm statistics saturate mobilenet's activations, and the features stop
    # depending on the image: give each BN the statistics it sees on random images, perturbed
    # (as export_torchvision.calibrate_batchnorm does for the classifiers).
    bn_gen = torch.Generator().manual_seed(SEED + 3)

    def set_statistics(module, inputs):
        x = inputs[0]
        n = module.num_features
        mean, var = x.mean(dim=(0, 2, 3)), x.var(dim=(0, 2, 3))
        module.running_mean.copy_(mean + torch.randn(n, generator=bn_gen) * 0.1 * var.sqrt())
        module.running_var.copy_(var * (torch.rand(n, generator=bn_gen) + 0.5) + module.eps)
        module.weight.copy_(torch.rand(n, generator=bn_gen) + 0.5)
        module.bias.copy_(torch.randn(n, generator=bn_gen) * 0.1)

    m.eval()
    hooks = [mod.register_forward_pre_hook(set_statistics) for mod in m.modules()
             if isinstance(mod, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        m([torch.rand((3, 320, 320), generator=bn_gen) for _ in range(4)])
    for h in hooks:
        h.remove()
    # torchvision initialises the classifiers so that every class scores the same (1/91): then the
    # ranking, the top-k cut and NMS's order would all rest on ties. Random class weights and
    # biases make the scores differ by class and by box.
    gen = torch.Generator().manual_seed(SEED + 2)
    ssd = name.startswith("ssdlite")
    heads = [m.head.classification_head] if ssd else [m.roi_heads.box_predictor.cls_score]
    w_std, b_std = (0.05, 1.5) if ssd else (0.3, 0.3)  # chosen so that many classes and scores appear
    with torch.no_grad():
        for head in heads:
            for mod in head.modules():
                if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                    mod.weight.normal_(0.0, w_std, generator=gen)
                    if mod.bias is not None:
                        mod.bias.normal_(0.0, b_std, generator=gen)
    return m.eval()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import onnxruntime as ort

    labels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coco91_labels.txt")
    for name in args.models:
        path = os.path.join(args.out, name + ".onnx")
        shutil.copyfile(labels, os.path.join(args.out, name + ".labels.txt"))
        last = os.path.join(args.out, f"{name}.out{len(SIZES) - 1}_labels.npy")
        if os.path.exists(path) and os.path.exists(last) and not args.force:
            continue
        model = build(name)
        gen = torch.Generator().manual_seed(SEED + 1)
        inputs = [torch.rand((3, h, w), generator=gen) for h, w in SIZES]
        # The outputs are the result dict's values in its own order: SSD's is boxes, scores,
        # labels, Faster R-CNN's boxes, labels, scores; naming them by that order keeps each name
        # on its tensor.
        with torch.no_grad():
            fields = list(model([inputs[0]])[0].keys())
        assert sorted(fields) == ["boxes", "labels", "scores"], fields
        torch.onnx.export(model, ([inputs[0]],), path, opset_version=OPSET, input_names=["images"],
                          output_names=fields,
                          dynamic_axes={"images": {1: "height", 2: "width"},
                                        **{f: {0: "detections"} for f in fields}})
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
            for field, value in zip(fields, outs):
                np.save(os.path.join(args.out, f"{name}.out{k}_{field}.npy"), value)
            print(f"export_detection: {name} {tuple(x.shape)}: {outs[0].shape[0]} detections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
