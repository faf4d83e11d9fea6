#!/usr/bin/env bash
# One short, prepared check of ocl-infer on a machine with an NVIDIA GPU (the `device` tool's
# machine: PyTorch, torchvision and onnxruntime there, none of this project's build dependencies).
#
#   here:   tools/gpu_bundle.sh                   (writes .gpu/bundle.tar.xz, ~45 MiB)
#   there:  tools/gpu_check.sh [BUNDLE] [REPORT_DIR]   (defaults: .gpu/bundle.tar.xz, $OUT or
#                                                       /tmp/gpu_check)
#
# Steps, in order of importance, each with its own time limit; a failure is recorded and the
# script goes on, so that one run gives as much as it can:
#   1. OpenCL: the carried ICD loader, an ICD file for NVIDIA's libnvidia-opencl.so.1 (part of
#      the driver), the device list and the capabilities ocl-infer reads (-v).
#   2. In parallel: every unit-test binary on the GPU, 8 at a time (the fp16 runs of the kernel
#      families too), the ONNX conformance suite against its expected-pass list in 6 shards, and torchvision models exported
#      with random weights plus ONNX Runtime's CPU outputs as references (tools/gpu_peer.py).
#   3. Alone on the GPU: each exported model's output against the reference in fp32 and fp16, its
#      latency at batch 1 (fp32, fp16) and 16 (fp32), then PyTorch's own CUDA latency for the same
#      modules (cuDNN, TF32 off), start-up from empty caches and warm.
#   4. `ocl-infer tune` on ResNet-50 with a short budget, and the latency after it.
# For a dry run elsewhere: GPU_CHECK_DEVICE=INDEX (any device), GPU_CHECK_TESTS (a glob of test
# binaries, default test_*), GPU_CHECK_FP16_TESTS, GPU_CHECK_MODELS, GPU_CHECK_CONFORMANCE_FILTER;
# GPU_CHECK_SECONDS (default 480; the tests and conformance get GPU_CHECK_TEST_SECONDS of it,
# default 260): steps that would start later are skipped, each step's limit is
# cut to what is left, and the report is still written.
# Every step logs to REPORT_DIR/gpu_check.log (and its own .log); the summary is
# REPORT_DIR/gpu_report.md.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu/bundle.tar.xz}
report_dir=${2:-${OUT:-/tmp/gpu_check}}
mkdir -p "$report_dir"
log="$report_dir/gpu_check.log"
steps="$report_dir/steps.md"
: >"$log"
: >"$steps"
say() { echo "$*" | tee -a "$log"; }
step() {  # step NAME LIMIT COMMAND...: runs COMMAND into NAME's log; records ok/FAIL and the time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s) slog="$work/logs/${name// /_}.log"
  local left=$((deadline - t0))
  if [ $left -lt 10 ]; then echo "| $name | SKIPPED (out of time) | 0 s | |" >>"$steps"; return 1; fi
  [ $left -lt $limit ] && limit=$left
  timeout "$limit" "$@" >"$slog" 2>&1
  local rc=$? dt=$(($(date +%s) - t0)) res=ok
  [ $rc -eq 124 ] && res="TIMEOUT (${limit} s)"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && res="FAIL (exit $rc)"
  echo "| $name | $res | $dt s | $(grep -E '^\[  (PASSED|FAILED)  \]|passed, [0-9]+ failed|FAILED TEST' "$slog" | tr '\n' ' ' | cut -c1-160) |" >>"$steps"
  { echo "== $name ($res, $dt s): $*"; cat "$slog"; } >>"$log"
  return $rc
}

# 1. Unpack; OpenCL.
work=/tmp/gpu_check
deadline=$(($(date +%s) + ${GPU_CHECK_SECONDS:-480}))  # steps past it are skipped; the report follows
tests=${GPU_CHECK_TESTS:-test_*}
fp16_tests=${GPU_CHECK_FP16_TESTS-conv gemm variants elementwise pool norm reduce activations rnn}
models=${GPU_CHECK_MODELS-resnet18 resnet50 mobilenet_v2 efficientnet_b0 convnext_tiny vit_b_16}
rm -rf "$work" && mkdir -p "$work/logs" "$work/peer" "$work/res" && tar -C "$work" -xJf "$bundle" || { say "cannot unpack $bundle"; exit 1; }
export LD_LIBRARY_PATH=$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nv=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
[ -z "$nv" ] && nv=$(find /usr/local/nvidia /usr/lib /usr/lib64 /lib -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
if [ -n "$nv" ]; then
  mkdir -p "$work/vendors" && echo "$nv" >"$work/vendors/nvidia.icd"
  export OCL_ICD_VENDORS=$work/vendors
fi
say "NVIDIA OpenCL library: ${nv:-not found}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log"
ocl="$work/bin/ocl-infer"
"$ocl" --list-devices 2>&1 | tee -a "$log"
gpu=${GPU_CHECK_DEVICE:-$("$ocl" --list-devices 2>/dev/null | awk -F: '/\[GPU\]/ {print $1; exit}')}
if [ -z "$gpu" ]; then
  say "no OpenCL GPU device found"
  OCL_ICD_ENABLE_TRACE=1 "$ocl" --list-devices >>"$log" 2>&1
  exit 1
fi
export OCL_INFER_DEVICE=$gpu OCL_INFER_CACHE_DIR=$work/cache OCL_INFER_TUNING_CACHE=off
export OCL_INFER_MODELS_DIR=$work/models
"$ocl" "$work/models/squeezenet1_1.onnx" "$work/models/dog.jpg" -v >"$report_dir/capabilities.txt" 2>&1

# GPU_CHECK_MODE=probe: crash triage instead of the full check. Each case runs with fresh caches
# (p1b and p1c reuse p1's, to load the binaries it stored) and tools/segv_trace.c preloaded (a stack on SIGSEGV; resolve the offsets against the same build's
# unstripped library with addr2line), then the test binaries named in GPU_CHECK_PROBE_TESTS.
if [ "${GPU_CHECK_MODE:-}" = probe ]; then
  case_n=0
  probe() {  # probe NAME ENV... -- COMMAND...
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    case_n=$((case_n + 1))
    env OCL_INFER_CACHE_DIR="$work/probe-cache-$case_n" LD_PRELOAD="$work/lib/segv_trace.so" "${envs[@]}" \
      bash -c 'step "$0" 60 "$@"' "$name" "$@"
  }
  export -f step say
  export work steps log deadline
  m=$work/models/mobilenet_v2.onnx img=$work/models/dog.jpg
  probe "p0 sub-buffer lifetimes, tools-subbuffer_probe" -- "$work/bin/subbuffer_probe" --device "$gpu"
  probe "p1 mobilenet_v2 -v" -- "$ocl" "$m" "$img" -v
  probe "p1t mobilenet_v2, buffers traced" OCL_INFER_TRACE_BUFFERS=1 -- "$ocl" "$m" "$img"
  # p1 again on p1's cache (its stored program binaries loaded back), with and without NVIDIA's
  # own compute cache.
  probe "p1b again, binaries from the cache" OCL_INFER_CACHE_DIR="$work/probe-cache-1" -- "$ocl" "$m" "$img" -v
  probe "p1c again, driver cache off" OCL_INFER_CACHE_DIR="$work/probe-cache-1" CUDA_CACHE_DISABLE=1 -- "$ocl" "$m" "$img" -v
  probe "p2 no binary storage" OCL_INFER_STORE_BINARIES=0 -- "$ocl" "$m" "$img" -v
  probe "p3 cache off" -- "$ocl" "$m" "$img" -v --cache-dir off
  probe "p4 conv=packed" -- "$ocl" "$m" "$img" -v --variant conv=packed
  probe "p5 -O0" -- "$ocl" "$m" "$img" -v -O0
  probe "p6 no memory plan" -- "$ocl" "$m" "$img" -v --no-memory-plan
  probe "p7 squeezenet" -- "$ocl" "$work/models/squeezenet1_1.onnx" "$img" -v
  probe "p8 test_fp16 first" -- "$work/tests/test_fp16" --gtest_filter='Fp16.LongMixed*'
  probe "p9 test_optimizer zero pad" -- "$work/tests/test_optimizer" --gtest_filter='*FoldsZeroPad*'
  probe "p9t test_optimizer zero pad, buffers traced" OCL_INFER_TRACE_BUFFERS=1 -- "$work/tests/test_optimizer" --gtest_filter='*FoldsZeroPad*'
  probe "p10 test_threads" -- "$work/tests/test_threads"
  for t in ${GPU_CHECK_PROBE_TESTS-}; do echo "$t"; done | sed 's/:/ /' |
    xargs -P 8 -L 1 bash -c '[ -n "${2:-}" ] && export OCL_INFER_TEST_PRECISION=fp16 OCL_INFER_FP16_WEIGHTS=half
      OCL_INFER_CACHE_DIR=$work/cache-$1$2 LD_PRELOAD=$work/lib/segv_trace.so step "$1${2:+_fp16}" 240 "$work/tests/$1"' _
  cat "$steps"
  cp "$steps" "$work/res/"
  tar -C "$work" -czf "$report_dir/results.tgz" logs res
  exit 0
fi

# 2. Tests, conformance and the exports, side by side (16 CPU cores there).
( step "export models" 240 python3 tools/gpu_peer.py export "$work/peer" $models ) &
peer_pid=$!
tests_deadline=$(($(date +%s) + ${GPU_CHECK_TEST_SECONDS:-260}))
# Conformance in 6 shards (a process per test, and NVIDIA's compiler takes ~1 s a program: one
# process got through ~140 of ~1,000 tests in 260 s).
conf_pids=()
for i in 0 1 2 3 4 5; do
  ( cd "$work" && deadline=$tests_deadline && step "onnx conformance $i of 6" 300 stdbuf -oL bin/onnx-conformance --root testdata/data ${GPU_CHECK_CONFORMANCE_FILTER:+--filter $GPU_CHECK_CONFORMANCE_FILTER} --expect conformance_expected_pass.txt --timeout 60 --shard $i/6 ) &
  conf_pids+=($!)
done
run_test() {  # run_test BINARY [fp16]
  local t=$1 p=${2:-}
  if [ "$p" = fp16 ]; then
    OCL_INFER_TEST_PRECISION=fp16 OCL_INFER_FP16_WEIGHTS=half step "$(basename "$t")_fp16" 240 "$t"
  else
    step "$(basename "$t")" 240 "$t"
  fi
}
export -f run_test step say
export work steps log deadline
{ for t in "$work"/tests/$tests; do echo "$t"; done
  for f in $fp16_tests; do echo "$work/tests/test_$f fp16"; done
} | deadline=$tests_deadline xargs -P 8 -L 1 bash -c 'run_test "$@"' _
wait $peer_pid "${conf_pids[@]}"

# 3. Exported models alone on the GPU: accuracy, latency, PyTorch's latency, start-up.
bench() {  # bench TAG MODEL ARGS...
  local tag=$1 model=$2; shift 2
  step "bench $tag" 120 bash -c "\"$ocl\" \"$model\" --bench --iterations 30 --json $* >\"$work/res/bench_$tag.json\""
}
for m in $models; do
  f=$work/peer/$m.onnx
  [ -f "$f" ] || continue
  for p in fp32 fp16; do
    step "$m $p output" 120 "$ocl" "$f" --precision $p --input input="$work/peer/$m.input.npy" --output-dir "$work/out_${m}_$p" &&
      python3 tools/gpu_peer.py compare "$work/peer/$m.ref.npy" "$work/out_${m}_$p/output.npy" >"$work/res/acc_${m}_$p.json" 2>&1
    bench "${m}_${p}_b1" "$f" --precision $p
  done
  bench "${m}_fp32_b16" "$f" --batch 16
done
step "pytorch cuda latency" 180 bash -c "python3 tools/gpu_peer.py time '$work/peer' $models >'$work/res/torch.jsonl'"
startup() {  # prints seconds from process start to the printed result
  local t0=$(date +%s.%N)
  "$ocl" "$1" "$work/models/dog.jpg" >/dev/null 2>&1 || { echo failed; return; }
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}
if [ -f "$work/peer/resnet50.onnx" ]; then
  cold=$(OCL_INFER_CACHE_DIR=$work/cold CUDA_CACHE_PATH=$work/cold-nv startup "$work/peer/resnet50.onnx")
  warm=$(OCL_INFER_CACHE_DIR=$work/cold CUDA_CACHE_PATH=$work/cold-nv startup "$work/peer/resnet50.onnx")
  echo "resnet50 CLI on dog.jpg, process start to result: cold caches ${cold} s, warm ${warm} s" >"$report_dir/startup.txt"
fi

# 4. Tuning.
if [ -f "$work/peer/resnet50.onnx" ]; then
  step "tune resnet50" 150 "$ocl" tune "$work/peer/resnet50.onnx" --tuning-cache "$report_dir/tuning.tsv" --budget 90
  bench "resnet50_fp32_b1_tuned" "$work/peer/resnet50.onnx" --tuning-cache "$report_dir/tuning.tsv"
fi

# 5. Report.
cp "$steps" "$report_dir/capabilities.txt" "$work/res/" 2>/dev/null
[ -f "$report_dir/startup.txt" ] && cp "$report_dir/startup.txt" "$work/res/"
python3 - "$work/res" "$models" >"$report_dir/gpu_report.md" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
def j(path):
    try:
        return json.load(open(path))
    except Exception:
        return None
print("# ocl-infer GPU check\n")
print(open(os.path.join(d, "capabilities.txt")).read()[:3000])
print("\n| step | result | time | summary |\n| --- | --- | ---: | --- |")
print(open(os.path.join(d, "steps.md")).read())
torch = {}
for line in open(os.path.join(d, "torch.jsonl")) if os.path.exists(os.path.join(d, "torch.jsonl")) else []:
    r = json.loads(line); torch[r["model"]] = r
models = sys.argv[2].split()
print("\n| model | fp32 err | fp16 err | fp32 b1 ms | fp16 b1 ms | fp32 b16 ms | torch fp32 b1 | torch fp16 b1 | torch fp32 b16 |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for m in models:
    def acc(p):
        a = j(f"{d}/acc_{m}_{p}.json")
        return "-" if not a else (a.get("error") or f"{a['max_rel_err']:.1e}{'' if a['top1_same'] else ' top1 differs'}")
    def b(tag):
        r = j(f"{d}/bench_{m}_{tag}.json")
        return f"{r['median_ms']:.2f}" if r and "median_ms" in r else "-"
    t = torch.get(m, {})
    f = lambda k: f"{t[k]:.2f}" if k in t else "-"
    print(f"| {m} | {acc('fp32')} | {acc('fp16')} | {b('fp32_b1')} | {b('fp16_b1')} | {b('fp32_b16')} | {f('fp32_b1')} | {f('fp16_b1')} | {f('fp32_b16')} |")
r = j(f"{d}/bench_resnet50_fp32_b1_tuned.json")
print(f"\nresnet50 fp32 b1 after a 90 s tune: {r['median_ms']:.2f} ms" if r and "median_ms" in r else "\n(no tuned result)")
if os.path.exists(f"{d}/startup.txt"):
    print(open(f"{d}/startup.txt").read())
PY
tar -C "$work" -czf "$report_dir/results.tgz" logs res
cat "$report_dir/gpu_report.md"
