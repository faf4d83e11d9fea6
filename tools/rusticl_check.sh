#!/usr/bin/env bash
# The model and variant tests on a second OpenCL implementation: Mesa's rusticl with its llvmpipe
# software device (Debian's mesa-opencl-icd; RUSTICL_ENABLE=llvmpipe), which has GPU-like limits
# (work-groups up to 1024, 32 KiB local memory, 8-lane SIMD). Runs
#   0. that ocl-infer refuses the device by default (its driver stops long loops early, see below);
#   1. test_models with the default choice, with OCL_INFER_ALLOW_LOOP_LIMIT=1 (llvmpipe prefers a
#      float vector width of 1, so the untuned choice takes the GPU-shaped variants there), and
#      test_tuning (which checks that choice);
#   2. test_variants (every variant of every family, forced in turn), the pool, elementwise and
#      activation suites (vector paths, inlined exp and erf, signed zeros), and the gather, scatter
#      and sampling suites (negative int32 indices);
#   3. resnet18 per-inference time with the default choice (wall clock: rusticl's event
#      timestamps are all zero).
#
#   tools/rusticl_check.sh [BUILD_DIR]       (installs mesa-opencl-icd when missing)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [ ! -e /etc/OpenCL/vendors/rusticl.icd ]; then
  echo "rusticl_check: installing mesa-opencl-icd" >&2
  apt-get install -y mesa-opencl-icd >/dev/null || { echo "rusticl_check: cannot install mesa-opencl-icd" >&2; exit 1; }
fi
export RUSTICL_ENABLE=llvmpipe
dev=$("$build/ocl-infer" --list-devices 2>/dev/null | awk -F: '/rusticl/ {print $1; exit}')
[ -n "$dev" ] || { echo "rusticl_check: no rusticl device listed" >&2; exit 1; }
export OCL_INFER_DEVICE=$dev OCL_INFER_CACHE_DIR=${OCL_INFER_CACHE_DIR:-$build/kernel-cache}
fail=0
run() {  # run NAME COMMAND...
  local t0=$(date +%s)
  if "$@" >/tmp/rusticl_check.$$.log 2>&1; then echo "ok: $1 ($(($(date +%s) - t0)) s)"
  else echo "FAIL: $* ($(($(date +%s) - t0)) s)"; tail -30 /tmp/rusticl_check.$$.log; fail=$((fail + 1)); fi
}
# Mesa 22.3's llvmpipe stops every loop after 65,535 iterations: ocl-infer's probe sees it and
# refuses the device (a wrong number without an error is worse than no number) ...
refused() {
  local out
  out=$("$build/ocl-infer" "$build/models/squeezenet1_1.onnx" --bench --iterations 1 2>&1) && return 1
  grep -q "stops long loops early" <<<"$out"
}
run refused
# ... unless told to run anyway: then only kernels whose loops stay short give right numbers. The
# GPU-shaped conv and gemm (the default here) loop over K/TK tiles; the CPU-shaped ones over all of
# K per work-item, which resnet18's 256- and 512-channel 3x3 convs (K = 2304, 4608) take past the
# limit (their results were wrong here when they were the default; the variant suites' sizes stay
# under it).
export OCL_INFER_ALLOW_LOOP_LIMIT=1
run "$build/tests/test_models"
run "$build/tests/test_tuning"
run "$build/tests/test_variants"
# The index suites: negative int32 indices (Mesa 22.3 compiles a comparison of an int widened to
# long with a constant as if the int were never negative; kernels/index.cl).
for t in test_pool test_elementwise test_activations test_tensor_ops test_scatter test_sample; do
  run "$build/tests/$t"
done
echo "resnet18 on rusticl, default kernel choice:"
"$build/ocl-infer" "$build/models/resnet18.onnx" --bench --iterations 3 --warmup 1 2>&1 | grep -E "latency|start-up"
rm -f /tmp/rusticl_check.$$.log
echo "rusticl_check: $fail failed"
[ $fail -eq 0 ]
