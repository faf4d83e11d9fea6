#!/usr/bin/env bash
# The profiler's JSON, CSV and Chrome-trace files parse and carry every documented field; the HTML
# report is self-contained; --bench --json has its documented keys.
# usage: test_profile_outputs.sh OCL_INFER_BINARY
set -euo pipefail
bin=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["a"]), helper.make_node("Mul", ["x", "a"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1] + "/m.onnx")
PY
"$bin" "$work/m.onnx" --profile --iterations 3 --batch 2 --profile-json "$work/p.json" --profile-csv "$work/p.csv" \
  --profile-trace "$work/p.trace.json" --profile-html "$work/p.html" > "$work/table.txt" 2>/dev/null
"$bin" "$work/m.onnx" --bench --iterations 5 --warmup 1 --json > "$work/bench.json" 2>/dev/null
"$bin" "$work/m.onnx" --bench --iterations 3 --warmup 1 --json --precision fp16 > "$work/bench16.json" 2>/dev/null
"$bin" "$work/m.onnx" --profile --iterations 2 --precision fp16 --profile-json "$work/p16.json" > "$work/table16.txt" 2>/dev/null
"$bin" "$work/m.onnx" --dump plan --json --precision fp16 > "$work/plan16.json" 2>/dev/null
/usr/bin/python3 - "$work" <<'PY'
import sys, json, csv
w = sys.argv[1]
p = json.load(open(w + "/p.json"))
for k in ["schema", "model", "device", "iterations", "warmup", "kernel_sum_us", "device_us", "wall_us", "startup", "launches"]:
    assert k in p, k
assert len(p["launches"]) == 2, p["launches"]
for l in p["launches"]:
    for k in ["index", "nodes", "op_types", "output_shape", "kernel", "global", "local", "runs", "avg_us", "min_us",
              "max_us", "start_us", "flops", "bytes", "timestamp_problem"]:
        assert k in l, k
    assert l["runs"] == 3 and l["avg_us"] > 0 and l["output_shape"] == [2, 3, 32, 32]
assert p["launches"][1]["op_types"] == ["Mul"] and p["launches"][1]["flops"] == 2 * 3 * 32 * 32
rows = list(csv.DictReader(open(w + "/p.csv")))
assert len(rows) == 2 and rows[0]["op_types"] == "Sigmoid" and float(rows[0]["avg_us"]) > 0, rows
t = json.load(open(w + "/p.trace.json"))
xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
assert len(xs) == 2 and all(e["dur"] > 0 and "ts" in e and e["pid"] == 1 for e in xs), xs
html = open(w + "/p.html").read()
assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "http" not in html.replace("http://www.w3.org", "")
table = open(w + "/table.txt").read()
assert "by op type:" in table and "Sigmoid" in table and "host overhead" in table
b = json.load(open(w + "/bench.json"))
for k in ["median_ms", "min_ms", "p90_ms", "max_ms", "throughput_per_s", "device"]:
    assert k in b, k
assert b["min_ms"] <= b["median_ms"] <= b["p90_ms"] <= b["max_ms"] and b["iterations"] == 5
assert p["precision"] == "fp32" and b["precision"] == "fp32", (p.get("precision"), b.get("precision"))
assert json.load(open(w + "/bench16.json"))["precision"] == "fp16"
assert json.load(open(w + "/p16.json"))["precision"] == "fp16"
assert "precision fp16" in open(w + "/table16.txt").read()
plan = json.load(open(w + "/plan16.json"))
assert plan["precision"] == "fp16" and "peak_activation_bytes" in plan and "weight_bytes" in plan, plan.keys()
print("profile outputs: all fields present")
PY
