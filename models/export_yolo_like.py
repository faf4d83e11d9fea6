#!/usr/bin/env python3
"""Exports two small YOLO-style detectors with random weights as ONNX test models for
`ocl-infer --task detect` (tests/test_cli_detect.sh).

Under --out this writes:
  yolov8_like.onnx   input "images" float32 [1,3,320,320]; output "output0" [1,84,400]: the
                     YOLOv8 layout, cx,cy,w,h (input pixels) then 80 class scores, one row per cell
                     of a 20x20 grid (stride 16), no objectness.
  yolov5_like.onnx   input "images" float32 [1,3,256,320] (not square); output "output0"
                     [1,240,85]: the YOLOv5 layout, cx,cy,w,h, objectness, 80 class scores, three
                     anchors per cell of an 8x10 grid (stride 32).
  yolov8_like.labels.txt, yolov5_like.labels.txt   the 80 COCO names in YOLO order (copied from
                     darknet's coco.names when it is installed), found by the CLI beside the model.

A random backbone alone scores every class about equally, so each head adds a fixed prior to its
raw outputs: every cell predicts background (class logits -9) except a few planted objects, each a
cell with a strong score for one class plus weaker, shifted copies in neighbouring cells that NMS
has to remove -- among them two overlapping objects of different classes (class-aware NMS keeps
both), two objects of one class that barely overlap (both kept), one box reaching into the
letterbox border (clipped to the photo) and one of middling score (0.3-0.4, for --conf). The
photo still moves every output a little through the backbone. Fixed seed: the export is
deterministic.
"""

import argparse
import math
import os
import shutil
import sys

import torch

SEED = 20261205
CLASSES = 80
OPSET = 13
COCO_NAMES = "/usr/share/darknet/data/coco.names"

# Planted objects in input pixels: (cx, cy, w, h, class, logit of the class at the object's cell,
# neighbour cells (dx, dy) that predict a shifted copy with logit 1).
YOLOV8_OBJECTS = [
    (100, 200, 90, 120, 16, 4.0, [(1, 0), (0, 1)]),    # dog, two duplicates to suppress
    (40, 250, 50, 50, 16, 3.0, []),                    # a second dog, barely overlapping the first
    (168, 168, 200, 140, 1, 3.5, [(-1, 0)]),           # bicycle
    (248, 88, 110, 70, 7, 3.0, [(0, -1)]),             # truck ...
    (270, 96, 100, 70, 2, 2.5, []),                    # ... and a car over it (IoU 0.54)
    (296, 40, 60, 60, 0, 2.0, []),                     # person in the letterbox border
    (216, 264, 40, 30, 58, -0.6, []),                  # potted plant, score ~0.35
]
YOLOV5_OBJECTS = [
    (112, 150, 120, 110, 16, 4.0, [(1, 0)]),           # dog
    (208, 80, 180, 100, 1, 3.5, [(0, 1), (-1, 0)]),    # bicycle
    (272, 150, 70, 90, 7, 3.0, []),                    # truck ...
    (254, 142, 70, 90, 2, 2.5, []),                    # ... and a car over it (IoU 0.51)
    (48, 232, 60, 40, 0, -0.5, []),                    # person, score ~0.37 (x objectness)
]


class YoloLike(torch.nn.Module):
    def __init__(self, height, width, stride, anchors, v5, objects):
        super().__init__()
        layers, ch = [], 3
        for k in range(int(math.log2(stride))):
            out = min(64, 8 * 2 ** k)
            layers += [torch.nn.Conv2d(ch, out, 3, stride=2, padding=1), torch.nn.ReLU()]
            ch = out
        self.backbone = torch.nn.Sequential(*layers)
        self.v5, self.anchors, self.stride = v5, anchors, stride
        self.per_anchor = (5 if v5 else 4) + CLASSES
        self.gh, self.gw = height // stride, width // stride
        self.head = torch.nn.Conv2d(ch, anchors * self.per_anchor, 1)
        cls0 = 5 if v5 else 4
        prior = torch.zeros(anchors, self.per_anchor, self.gh, self.gw)
        gain = torch.full((anchors, self.per_anchor, 1, 1), 0.3)
        gain[:, :4] = 0.02   # the photo moves boxes by a fraction of a pixel ...
        prior[:, 2:4] = math.log(2.0)
        prior[:, 4:] = -9.0  # ... and scores a little; everything is background ...
        for (cx, cy, w, h, cls, logit, neighbours) in objects:
            gx, gy = int(cx // stride), int(cy // stride)
            for a, (dx, dy, lg, shift) in enumerate([(0, 0, logit, 0.0)] + [(dx, dy, 1.0, 0.15) for dx, dy in neighbours]):
                x, y = gx + dx, gy + dy
                a = a % anchors  # YOLOv5: duplicates go to other anchors where the grid is coarse
                ccx, ccy = cx + shift * w * (dx or 1), cy + shift * h * (dy or 1)
                prior[a, 0, y, x] = (ccx - (x + 0.5) * stride) / stride
                prior[a, 1, y, x] = (ccy - (y + 0.5) * stride) / stride
                prior[a, 2, y, x] = math.log(w / stride)
                prior[a, 3, y, x] = math.log(h / stride)
                if v5:
                    prior[a, 4, y, x] = lg  # ... except the planted objects
                    prior[a, cls0 + cls, y, x] = 4.0
                else:
                    prior[a, cls0 + cls, y, x] = lg
        self.register_buffer("prior", prior.reshape(1, -1, self.gh, self.gw))
        self.register_buffer("gain", gain.reshape(1, -1, 1, 1))
        gy, gx = torch.meshgrid(torch.arange(self.gh), torch.arange(self.gw), indexing="ij")
        self.register_buffer("grid", torch.stack([gx, gy]).reshape(1, 2, -1).float() + 0.5)

    def forward(self, x):
        t = self.head(self.backbone(x)) * self.gain + self.prior
        n = self.gh * self.gw
        t = t.reshape(1, self.anchors, self.per_anchor, n)
        xy = (self.grid.unsqueeze(1) + t[:, :, 0:2]) * self.stride
        wh = torch.exp(t[:, :, 2:4]) * self.stride
        out = torch.cat([xy, wh, torch.sigmoid(t[:, :, 4:])], 2)  # [1, A, K, n]
        if self.v5:
            return out.permute(0, 1, 3, 2).reshape(1, self.anchors * n, self.per_anchor)
        return out.reshape(1, self.per_anchor, n)


def export(path, model, height, width):
    model.eval()
    x = torch.rand(1, 3, height, width, generator=torch.Generator().manual_seed(SEED + 1))
    torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["images"], output_names=["output0"])
    with torch.no_grad():
        shape = tuple(model(x).shape)
    print(f"export_yolo_like: {os.path.basename(path)} [1,3,{height},{width}] -> {list(shape)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    specs = [("yolov8_like", 320, 320, 16, 1, False, YOLOV8_OBJECTS),
             ("yolov5_like", 256, 320, 32, 3, True, YOLOV5_OBJECTS)]
    for name, h, w, stride, anchors, v5, objects in specs:
        path = os.path.join(args.out, name + ".onnx")
        if os.path.exists(COCO_NAMES):
            shutil.copyfile(COCO_NAMES, os.path.join(args.out, name + ".labels.txt"))
        if os.path.exists(path) and not args.force:
            continue
        torch.manual_seed(SEED)
        export(path, YoloLike(h, w, stride, anchors, v5, objects), h, w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
