#!/usr/bin/env bash
# Process start -> printed result of one CLI run, with every kernel cache empty, then warm.
#
#   tools/startup_time.sh [--rounds N] [BINARY] [MODEL] [IMAGE]
#
# Defaults: build/ocl-infer, build/models/resnet18.onnx, dog.jpg (build/models' copy, else darknet's);
# the device is the CLI's default or $OCL_INFER_DEVICE. Each round uses fresh
# cache folders (PoCL's and ocl-infer's) and prints: cold (both empty), driver-only (ocl-infer's
# cache emptied after the cold run, PoCL's kept) and two warm runs, in seconds. Run it for two
# builds in alternation to compare them; this machine's timings drift, so compare within one run.
set -euo pipefail
rounds=1
if [[ "${1:-}" == "--rounds" ]]; then rounds=$2; shift 2; fi
bin=${1:-build/ocl-infer}
model=${2:-build/models/resnet18.onnx}
default_image=build/models/dog.jpg
[[ -f "$default_image" ]] || default_image=/usr/share/darknet/data/dog.jpg
image=${3:-$default_image}
export OCL_INFER_TUNING_CACHE=off
once() {
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" "$model" "$image" >/dev/null 2>&1 || { echo "startup_time: $bin failed on $model" >&2; exit 1; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
for ((r = 0; r < rounds; ++r)); do
    dir=$(mktemp -d)
    export POCL_CACHE_DIR=$dir/pocl OCL_INFER_CACHE_DIR=$dir/ocl-infer
    cold=$(once)
    decision=$(cat "$dir"/ocl-infer/store-binaries-*.txt 2>/dev/null || true)
    rm -rf "$dir/ocl-infer"
    driver=$(once)
    warm1=$(once)
    warm2=$(once)
    echo "cold $cold s   driver cache only $driver s   warm $warm1 s, $warm2 s   ${decision:-(no binary-storage decision yet)}"
    rm -rf "$dir"
done
