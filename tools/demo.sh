#!/usr/bin/env bash
# Sets up everything (Debian packages, build, demo model export) and classifies the sample photo
# with the EfficientNet-Lite0 demo model on the default OpenCL device. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
tools/build.sh
models/make_all.sh build/models >/dev/null
# EfficientNet-Lite expects (pixel - 127) / 128, not the ImageNet mean/std.
build/ocl-infer build/models/efficientnet_lite0.onnx build/models/dog.jpg \
  --mean 0.498039216,0.498039216,0.498039216 --std 0.501960784,0.501960784,0.501960784 "$@"
