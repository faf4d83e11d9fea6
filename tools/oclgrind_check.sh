#!/usr/bin/env bash
# Runs ocl-infer's kernels under oclgrind, an OpenCL simulator that reports out-of-bounds accesses,
# data races on local and global memory, barrier divergence and API misuse, at small sizes:
#   1. a small model through the CLI (conv + pooling + gemm + softmax + concat/split views, a
#      GlobalAveragePool fused into its depthwise conv), in
#      fp32 and fp16 and with the GPU-shaped (tiled) conv and gemm forced, with every tensor in
#      its own buffer (--no-memory-plan);
#   2. the kernel-variant sweep (tests/test_variants: every variant and parameter value of conv,
#      gemm, pooling and norm on odd sizes), in fp32 and fp16;
#   3. the op-family suites (activations, conv, elementwise, gemm, norm, pool, reduce, resize,
#      tensor ops; the full check also scatter, topk, sample, einsum and dynamic ops),
#      or those named in $OCLGRIND_SUITES;
#   4. the recurrent layers under each step variant (the quick check: the fused one) and, in the
#      full check, the sequence, audio, linear-algebra, text, random and loss ops.
# Kernels are built with -Drestrict= (oclgrind cannot run LLVM's noalias scopes) and without the
# kernel cache. Any oclgrind report fails the run. (oclgrind 21.10's --uninitialized plugin stops
# at LLVM's `freeze` instruction, "Unsupported instruction", and leaves the kernel's output
# unwritten, so uninitialised reads are not checked.)
#
#   tools/oclgrind_check.sh [BUILD_DIR]        (default: build; installs oclgrind when missing)
#   OCL_INFER_OCLGRIND_QUICK=1 tools/oclgrind_check.sh  (what ctest runs: fp32 variant sweep of each
#                                                        parameter's extremes, quick suites)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if ! command -v oclgrind >/dev/null; then
  echo "oclgrind_check: installing oclgrind" >&2
  apt-get install -y oclgrind >/dev/null || { echo "oclgrind_check: cannot install oclgrind" >&2; exit 1; }
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OCL_INFER_EXTRA_BUILD_OPTIONS="-Drestrict=" OCL_INFER_CACHE_DIR=off OCL_INFER_TEST_NO_MEMORY_PLAN=1
python=/usr/bin/python3
[ -x "$build/pyenv/bin/python" ] && python="$build/pyenv/bin/python"
fail=0
start=$(date +%s)

# check NAME COMMAND...: runs COMMAND under oclgrind; fails on a non-zero exit or any report.
check() {
  local name=$1; shift
  local log="$work/$name.log" t0=$(date +%s)
  oclgrind --check-api --data-races --max-errors 20 --log "$log" "$@" >"$work/$name.out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || [ -s "$log" ] || grep -q "OCLGRIND" "$work/$name.out"; then
    echo "FAIL: $name (exit $rc, $(($(date +%s) - t0)) s)"
    head -40 "$log"; tail -20 "$work/$name.out"
    fail=$((fail + 1))
  else
    echo "ok: $name ($(($(date +%s) - t0)) s)"
  fi
}

$python - "$work" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
w = sys.argv[1]
rng = np.random.default_rng(0)
def const(name, *shape):
    return nh.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
inits = [const("w1", 8, 3, 3, 3), const("b1", 8), const("w2", 8, 1, 3, 3), const("w3", 6, 8, 1, 1),
         const("fc", 72, 5), const("fb", 5)]
nodes = [
    h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["c1"], ["r1"]),
    h.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8),       # depthwise
    h.make_node("GlobalAveragePool", ["c2"], ["gp"]),                             # fused into c2
    h.make_node("Add", ["c2", "r1"], ["s2"]),                                     # residual
    h.make_node("Conv", ["s2", "w3"], ["c3"]),                                    # pointwise
    h.make_node("MaxPool", ["c3"], ["p3"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    h.make_node("Split", ["p3"], ["sa", "sb"], axis=1),                           # views
    h.make_node("Concat", ["sb", "sa"], ["cc"], axis=1),
    h.make_node("AveragePool", ["cc"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("Flatten", ["ap"], ["f"]),
    h.make_node("Gemm", ["f", "fc", "fb"], ["g"]),
    h.make_node("Softmax", ["g"], ["y"], axis=-1),
]
g = h.make_graph(nodes, "small", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 15, 13])],
                 [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("gp", T.FLOAT, None)],
                 inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), w + "/small.onnx")
np.save(w + "/x.npy", rng.normal(size=(1, 3, 15, 13)).astype(np.float32))
PY

for p in fp32 fp16; do
  check "model-$p" "$build/ocl-infer" "$work/small.onnx" --input "x=$work/x.npy" --output-dir "$work/out-$p" \
    --no-memory-plan --precision $p
done
# The GPU-shaped family (local-memory tiles, barriers) forced on the whole model.
check "model-tiled" "$build/ocl-infer" "$work/small.onnx" --input "x=$work/x.npy" --output-dir "$work/out-tiled" \
  --no-memory-plan --variant conv=tiled --variant gemm=tiled
# OCL_INFER_OCLGRIND_QUICK=1 (the ctest entry, to keep CI short): the variant sweep in fp32 only
# and the quick suites; the full check (default) takes about 10 minutes on the 2-core Xeon. (Not
# OCLGRIND_*: oclgrind reads those as its own options, and OCLGRIND_QUICK would run only the first
# and last work-group of every kernel.)
precisions="fp32 fp16"
all_suites="test_activations test_conv test_elementwise test_gemm test_norm test_pool test_reduce test_resize test_tensor_ops test_scatter test_topk test_sample test_einsum test_dynamic_ops"
if [ "${OCL_INFER_OCLGRIND_QUICK:-0}" = 1 ]; then
  precisions=fp32
  all_suites="test_elementwise test_norm test_pool test_tensor_ops"
fi
# (The quick check sweeps each parameter's extremes on one problem each: OCL_INFER_TEST_SWEEP=light.)
sweep=full
[ "${OCL_INFER_OCLGRIND_QUICK:-0}" = 1 ] && sweep=light
for p in $precisions; do
  OCL_INFER_TEST_SWEEP=$sweep OCL_INFER_TEST_PRECISION=$p check "test_variants-$p" "$build/tests/test_variants"
done
suites=${OCLGRIND_SUITES:-$all_suites}
for s in $suites; do check "$s" "$build/tests/$s"; done
# The fused attention kernel (about 15 s alone; in the full run test_gemm has it too).
[ "${OCL_INFER_OCLGRIND_QUICK:-0}" = 1 ] && check "attention" "$build/tests/test_gemm" --gtest_filter='Attention.*'
# The integer kernels (quantization ops against their references, the madd convs in their
# OpenCL C form; about 35 s). (Not the VNNI conv and matmul tests: oclgrind never offers VNNI,
# and the kernels they fall back to are the other tests' subject; the matmul one took 240 s.)
check "test_quant" "$build/tests/test_quant" --gtest_filter='Quant.*:-Quant.VnniConv*:Quant.VnniMatMul*:Quant.DepthwiseLarge*'
# The recurrent step kernels (every variant in the full check; the one-launch "fused" variant,
# with its barriers, in the quick one; about 15 s each) and the sequence ops.
rnn_variants="rnn=fused rnn=blocked rnn=wide"
[ "${OCL_INFER_OCLGRIND_QUICK:-0}" = 1 ] && rnn_variants="rnn=fused"
for v in $rnn_variants; do
  OCL_INFER_VARIANT=$v check "test_rnn-${v#rnn=}" "$build/tests/test_rnn" \
    --gtest_filter='Recurrent.ZeroLengths:Recurrent.OptionalOutputsAndInputs:Recurrent.DynamicLengthInOneSession:Recurrent.Errors:Recurrent.LstmPeep*'
done
if [ "${OCL_INFER_OCLGRIND_QUICK:-0}" != 1 ]; then
  check "test_sequence" "$build/tests/test_sequence"
  # The audio, linear-algebra, text, random and loss kernels, and Gather's run-time index checks
  # (a few seconds each).
  check "test_audio" "$build/tests/test_audio" --gtest_filter='Dft.InverseRoundTrip:Audio.*:Windows.*:MelWeightMatrix.*'
  check "test_linalg" "$build/tests/test_linalg"
  check "test_text" "$build/tests/test_text"
  check "test_random" "$build/tests/test_random" --gtest_filter='Random.SeedsAndRuns:Random.Errors'
  check "test_losses" "$build/tests/test_losses" --gtest_filter='Losses.EveryTargetIgnored:Losses.Errors'
  check "test_gather_indices" "$build/tests/test_tensor_ops" --gtest_filter='*OutOfRange*'
fi
echo "oclgrind_check: $fail failed, $(($(date +%s) - start)) s"
[ $fail -eq 0 ]
