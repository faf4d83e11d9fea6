#!/usr/bin/env bash
# The Ray Serve example (examples/serve): a bounded local load test must answer every request
# correctly. Ray Serve lives in its own venv, build/serve-env (it brings a newer protobuf than the
# one Debian's onnx needs, so it stays out of the models' venv); this installs it when missing and
# skips (exit 77) only when the package cannot be installed.
#   tests/test_serve_example.sh BUILD_DIR
set -euo pipefail
build_dir=$1
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env_dir="${OCL_INFER_SERVE_ENV:-$repo_root/build/serve-env}"
model="$build_dir/models/squeezenet1_1.onnx"
[[ -f "$model" ]] || { echo "skipped: $model is missing (models/make_all.sh)"; exit 77; }
if ! "$env_dir/bin/python" -c "from ray import serve" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$env_dir"
  if ! "$env_dir/bin/pip" install -q --disable-pip-version-check "ray[serve]"; then
    echo "skipped: pip could not install ray[serve] into $env_dir"; exit 77
  fi
fi
out=$(mktemp); trap 'rm -f "$out"' EXIT
PYTHONPATH="$build_dir/python" "$env_dir/bin/python" "$repo_root/examples/serve/load_test.py" \
  --model "$model" --replicas 1 --clients 8 --requests 200 --time-limit 180 --port 8765 --out "$out"
"$env_dir/bin/python" - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["errors"] == 0 and r["completed"] == r["requests"], r
assert r["throughput_per_s"] > 0 and r["p99_ms"] >= r["p50_ms"] > 0, r
print(f"serve example: {r['completed']} requests, 0 errors, {r['throughput_per_s']} req/s, "
      f"p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms ({r['cpu']}, {r['cpus']} CPUs)")
PY
