#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ and runs the unit tests
# (not the long conformance and model runs) on the CPU OpenCL device. Extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOCL_INFER_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
# PoCL's own allocations are not ours to fix; report leaks only from this project.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure -E "onnx_conformance|test_models|install_and_example" "$@"
