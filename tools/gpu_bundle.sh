#!/usr/bin/env bash
# Packs what tools/gpu_check.sh needs on a machine that has a GPU but none of this project's build
# dependencies (the `device` tool's machine carries at most 64 MiB): the CLI, the library, the
# test binaries (stripped), the shared libraries they link that such a machine may lack (protobuf,
# the OpenCL ICD loader), the ONNX conformance data and the test models that fit.
#
#   tools/gpu_bundle.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, .gpu)
#
# Writes OUT_DIR/bundle.tar.xz. Left out for size: the fp32 ResNet-18, EfficientNet-Lite0, LSTM
# encoder and detection models and the int8 ResNet-18 (their tests fail there as "missing");
# gpu_check.sh exports torchvision models with random weights there instead (PyTorch is on that
# machine) and compares against ONNX Runtime on its CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.gpu}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,lib,models,tests} "$out"
cp "$build/ocl-infer" "$build/onnx-conformance" "$build/subbuffer_probe" "$stage/bin/"
cp -L "$build/libocl_infer.so.0" "$stage/lib/"
for t in "$build"/tests/test_*; do [ -x "$t" ] && [ -f "$t" ] && cp "$t" "$stage/tests/"; done
# The unstripped twins stay here, beside OUT_DIR (OUT_DIR-unstripped, with the commit; not carried
# to the device), to resolve the offsets tools/segv_trace.c prints there (`objdump -d`, or
# addr2line on a build with -g).
twin="${out%/}-unstripped"
rm -rf "$twin" && mkdir -p "$twin"
cp -a "$stage"/bin "$stage"/tests "$stage"/lib "$twin/"
git rev-parse HEAD >"$twin/COMMIT" 2>/dev/null || true
strip "$stage"/bin/* "$stage"/tests/* "$stage"/lib/*
# A crash reporter for machines without a debugger (LD_PRELOAD; tools/segv_trace.c).
cc -shared -fPIC -O1 -o "$stage/lib/segv_trace.so" tools/segv_trace.c
# Libraries from this (Debian 12) machine that the target may not have.
for l in libprotobuf.so.32 libOpenCL.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')" "$stage/lib/"
done
tar -C "$build/models" --exclude resnet18.onnx --exclude 'fasterrcnn_*' --exclude 'ssdlite320_*' \
  --exclude efficientnet_lite0.onnx --exclude lstm_encoder.onnx --exclude resnet18.qdq.onnx -cf - . | tar -C "$stage/models" -xf -
cp -a /usr/share/libonnx-testdata "$stage/testdata"
cp tests/conformance_expected_pass.txt "$stage/"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
ls -la "$out/bundle.tar.xz"
