#!/usr/bin/env bash
# A/B of kernel sources on one model: per-node kernel time minima over alternating profiles.
#
#   tools/kernel_ab.sh MODEL.onnx FILTER ROUNDS KERNEL_DIR... [-- OCL-INFER-ARGS...]
#
# Each KERNEL_DIR is a copy of kernels/ (edited or not), read through $OCL_INFER_KERNEL_DIR, so
# no rebuild is needed between the variants. Each round profiles the model once per directory
# (`--profile --iterations 15`, in turn, so that slow spells of a shared machine hit every
# variant); for each directory and node whose line matches FILTER (a grep pattern on the profile:
# "depthwise", "quant:\|elementwise") the minimum over rounds of the node's "min us" is kept, and
# their sum printed. On the 2-core development VM single profiles varied up to 2x from one run to
# the next; these minima were stable within ~3 %. Compile each variant once before (the first
# profile of a new source also times its compilation helpers running beside it).
#
# Example: cp -r kernels /tmp/kA; cp -r kernels /tmp/kB; (edit /tmp/kB/quant.cl)
#          tools/kernel_ab.sh build/models/int8/mobilenet_v2.qdq.onnx depthwise 4 /tmp/kA /tmp/kB
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 4 ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
model=$1 filter=$2 rounds=$3
shift 3
dirs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do dirs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
cli=${OCL_INFER_CLI:-build/ocl-infer}
for d in "${dirs[@]}"; do
  [ -d "$d" ] || { echo "kernel_ab: no directory $d" >&2; exit 2; }
done
for r in $(seq "$rounds"); do
  for d in "${dirs[@]}"; do
    # Background compile helpers of an earlier run would share the cores with this one.
    while pgrep -x ocl-infer >/dev/null; do sleep 1; done
    OCL_INFER_KERNEL_DIR=$d "$cli" "$model" "$@" --profile --iterations 15 2>&1 | grep -v '^ocl-infer' |
      grep -- "$filter" | awk -v d="$d" '{
        n = split($0, f, " ")
        for (i = 1; i <= n; ++i) if (f[i] ~ /^\[[0-9]+x/) { print d, $1, f[i + 2]; break }
      }'
  done
done | awk '
  { key = $1 " " $2; if (!(key in best) || $3 < best[key]) best[key] = $3 }
  END {
    for (k in best) { split(k, a, " "); total[a[1]] += best[k]; nodes[a[1]]++ }
    for (d in total) printf "%s: %d nodes, %.1f us (sum of per-node minima)\n", d, nodes[d], total[d]
  }'
