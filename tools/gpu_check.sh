#!/usr/bin/env bash
# One short, prepared check of ocl-infer on a machine with an NVIDIA GPU (the `device` tool's
# machine, or any Linux box with NVIDIA's driver): makes OpenCL reachable, lists the devices, runs
# the unit and model tests on the GPU, tunes and benchmarks a ResNet at batch 1 and 16 in fp32 and
# fp16, and writes a small report.
#
#   tools/gpu_check.sh [BUILD_DIR] [REPORT_DIR]      (defaults: build, $OUT or /tmp/gpu_check)
#
# What it needs there:
#   - BUILD_DIR: a build of this tree (ocl-infer, libocl_infer.so, tests/) made on an x86-64
#     Debian 12 machine like the development one, and BUILD_DIR/models with the test models
#     (models/make_all.sh). ResNet-50's .onnx (98 MiB) is larger than what the device tool carries
#     (64 MiB in all), so the benchmark takes resnet50 when it is there and resnet18 otherwise.
#   - The shared libraries the build links (protobuf, the ICD loader) if the machine lacks them:
#     put their Debian packages in .ocl/ at the repo root (apt-get download ocl-icd-libopencl1
#     libprotobuf32 ...); they are unpacked into /tmp/ocl-root and put on LD_LIBRARY_PATH.
#   - NVIDIA's OpenCL driver (libnvidia-opencl.so.1, part of the driver): an ICD file pointing at
#     it is written to /etc/OpenCL/vendors when none exists.
# Every step logs to REPORT_DIR/gpu_check.log; the summary goes to REPORT_DIR/gpu_report.md. The
# script runs the steps in order of importance and keeps going after a failure, so that one run
# gives as much as it can.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
report_dir=${2:-${OUT:-/tmp/gpu_check}}
mkdir -p "$report_dir"
log="$report_dir/gpu_check.log"
report="$report_dir/gpu_report.md"
: >"$log"
say() { echo "$*" | tee -a "$log"; }
step() {  # step NAME TIMEOUT COMMAND...: runs COMMAND, logs it, records ok/FAIL and the time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  say "== $name: $*"
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$? dt=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then echo "| $name | ok | $dt s |" >>"$report.steps"; else
    echo "| $name | FAIL (exit $rc) | $dt s |" >>"$report.steps"; fi
  return $rc
}
: >"$report.steps"

# 1. OpenCL: the ICD loader, the NVIDIA ICD.
if [ -d .ocl ] && ls .ocl/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/ocl-root
  for f in .ocl/*.deb; do dpkg -x "$f" /tmp/ocl-root; done
  export LD_LIBRARY_PATH=/tmp/ocl-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nv=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
[ -z "$nv" ] && nv=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
if [ -n "$nv" ] && ! grep -rqs nvidia /etc/OpenCL/vendors; then
  mkdir -p /etc/OpenCL/vendors && echo "$nv" >/etc/OpenCL/vendors/nvidia.icd
fi
say "NVIDIA OpenCL library: ${nv:-not found}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$log" 2>&1
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step "list devices" 60 "$build/ocl-infer" --list-devices
gpu=$("$build/ocl-infer" --list-devices 2>/dev/null | awk -F: '/\[GPU\]/ {print $1; exit}')
if [ -z "$gpu" ]; then
  say "no OpenCL GPU device found; see $log"
  { echo "# ocl-infer GPU check: no OpenCL GPU device"; echo; cat "$report.steps"; } >"$report"
  exit 1
fi
say "GPU device index: $gpu"
# Sessions without an explicit device take the first GPU; the tests use that default.
export OCL_INFER_CACHE_DIR=/tmp/ocl-infer-cache

# 2. Unit and model tests on the GPU (every variant is forced in test_variants: the GPU-shaped
#    family runs where it applies, the CPU-shaped ones too).
for t in test_variants test_conv test_gemm test_norm test_pool test_fp16 test_quant test_models test_tuning; do
  [ -x "$build/tests/$t" ] && step "$t" 300 "$build/tests/$t"
done

# 3. Start-up with empty caches, then warm (and whether program binaries are worth storing there).
step "start-up" 300 bash -c "OCL_INFER_DEVICE=$gpu tools/startup_time.sh --rounds 2 \"$build/ocl-infer\" \"$build/models/resnet18.onnx\" >\"$report_dir/startup.txt\""

# 4. Tune and benchmark.
model=$build/models/resnet50.onnx
[ -f "$model" ] || model=$build/models/resnet18.onnx
name=$(basename "$model" .onnx)
bench_json() {  # bench_json TAG ARGS...: one --bench --json run into REPORT_DIR/bench_TAG.json
  local tag=$1; shift
  step "bench $tag" 300 bash -c "\"$build/ocl-infer\" \"$model\" --device $gpu --bench --iterations 30 --json $* >\"$report_dir/bench_$tag.json\""
}
for p in fp32 fp16; do
  for b in 1 16; do
    bench_json "${p}_b${b}_heuristic" --precision $p --batch $b --tuning-cache off
    step "tune $p batch $b" 600 "$build/ocl-infer" tune "$model" --device $gpu --precision $p --batch $b \
      --tuning-cache "$report_dir/tuning.tsv" --budget 240
    bench_json "${p}_b${b}_tuned" --precision $p --batch $b --tuning-cache "$report_dir/tuning.tsv"
  done
done

# 5. Report.
{
  echo "# ocl-infer GPU check ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- OpenCL device: $("$build/ocl-infer" --list-devices 2>/dev/null | sed -n "$((gpu + 1))p")"
  echo
  echo "| step | result | time |"
  echo "| --- | --- | ---: |"
  cat "$report.steps"
  echo
  echo "Start-up, resnet18, process start to result (tools/startup_time.sh):"
  echo
  sed 's/^/    /' "$report_dir/startup.txt" 2>/dev/null || echo "    (not measured)"
  echo
  echo "$name latency (ms, --bench --iterations 30):"
  echo
  echo "| precision | batch | heuristic median | tuned median | tuner gain |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for p in fp32 fp16; do
    for b in 1 16; do
      python3 - "$report_dir/bench_${p}_b${b}_heuristic.json" "$report_dir/bench_${p}_b${b}_tuned.json" "$p" "$b" <<'PY'
import json, sys
def median(path):
    try:
        return json.load(open(path))["median_ms"]
    except Exception:
        return None
h, t = median(sys.argv[1]), median(sys.argv[2])
f = lambda v: "failed" if v is None else f"{v:.2f}"
gain = f"{h / t:.2f}x" if h and t else "-"
print(f"| {sys.argv[3]} | {sys.argv[4]} | {f(h)} | {f(t)} | {gain} |")
PY
    done
  done
} >"$report"
rm -f "$report.steps"
cat "$report"
