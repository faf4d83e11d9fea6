#!/usr/bin/env python3
"""Unpacks the ONNX project's node conformance tests of a newer ONNX release than Debian's.

Debian's libonnx-testdata (ONNX 1.12) stops at opset 17; the runtime loads models up to opset 25.
ONNX 1.21's wheel on PyPI carries the node tests of opsets 19-26 (Gelu, RMSNormalization,
Attention, Pad's wrap mode, Resize's half_pixel_symmetric, ...). This downloads that wheel
(pip download, no install) and unpacks its onnx/backend/test/data/node into OUT/node, for
`onnx-conformance --root OUT --min-opset 19` (the ctest onnx_conformance_new_opsets).

    python3 models/fetch_onnx_testdata.py --out build/models/onnx-1.21-testdata
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

VERSION = "1.21.0"
PREFIX = "onnx/backend/test/data/node/"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder to hold node/ (made if missing)")
    args = ap.parse_args()
    marker = os.path.join(args.out, "onnx-" + VERSION)
    if os.path.exists(marker):
        print(f"fetch_onnx_testdata: {args.out} holds ONNX {VERSION}'s node tests")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        # The wheel for this interpreter; the test data inside is the same in every wheel.
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               f"onnx=={VERSION}", "-d", tmp]
        if subprocess.run(cmd).returncode != 0:
            print(f"fetch_onnx_testdata: pip download onnx=={VERSION} failed (PyPI unreachable?)",
                  file=sys.stderr)
            return 1
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if not wheels:
            print("fetch_onnx_testdata: pip download gave no wheel", file=sys.stderr)
            return 1
        node_dir = os.path.join(args.out, "node")
        if os.path.exists(node_dir):
            shutil.rmtree(node_dir)
        os.makedirs(node_dir)
        count = 0
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as z:
            for info in z.infolist():
                if not info.filename.startswith(PREFIX) or info.is_dir():
                    continue
                rel = info.filename[len(PREFIX):]
                if rel.startswith("/") or ".." in rel.split("/"):
                    continue
                dest = os.path.join(node_dir, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                count += 1
    open(marker, "w").close()
    print(f"fetch_onnx_testdata: {count} files of ONNX {VERSION}'s node tests in {node_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
