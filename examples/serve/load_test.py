#!/usr/bin/env python3
"""A bounded local load test of ocl-infer under Ray Serve (examples/serve/ocl_infer_serve.py).

    PYTHONPATH=build/python build/serve-env/bin/python examples/serve/load_test.py \\
        --model build/models/squeezenet1_1.onnx --replicas 1 --clients 8 --requests 400

Starts Ray on this machine (127.0.0.1 only), deploys the model, and lets N concurrent clients send
a fixed number of requests in all (half JSON, half raw .npy bodies), within a time limit. Every
answer is compared with a local ocl_infer session's output for the same input (1e-4 of the
output's scale): a wrong answer counts as an error like a failed request. Reports throughput and
latency percentiles (and writes them to --out as JSON); exits 1 when any request failed or the
time limit cut the run short. All figures are for one machine: the clients, Ray's HTTP proxy and
the replicas share its cores.
"""

import argparse
import http.client
import io
import json
import os
import platform
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="requests in all")
    parser.add_argument("--time-limit", type=float, default=300, help="seconds for all requests")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", help="write the results as JSON")
    args = parser.parse_args()

    import ocl_infer
    import ray
    from ray import serve
    from ocl_infer_serve import build_app

    local = ocl_infer.InferenceSession(args.model)
    (spec,) = local.get_inputs()[:1]
    shape = [1] + [d if isinstance(d, int) else 1 for d in spec.shape[1:]]
    rng = np.random.default_rng(0)
    samples = [rng.standard_normal(shape).astype(spec.dtype) for _ in range(8)]
    expected = [local.run(None, {spec.name: s})[0] for s in samples]

    started = time.time()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    serve.run(build_app(os.path.abspath(args.model), replicas=args.replicas), name="ocl-infer",
              route_prefix="/infer")
    ready_s = time.time() - started

    latencies, errors, lock = [], [], threading.Lock()
    counter = iter(range(args.requests))
    deadline = time.time() + args.time_limit

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
        while time.time() < deadline:
            with lock:
                k = next(counter, None)
            if k is None:
                return
            sample, want = samples[k % len(samples)], expected[k % len(samples)]
            raw = k % 2 == 1
            if raw:
                buffer = io.BytesIO()
                np.save(buffer, sample)
                body, headers = buffer.getvalue(), {"Content-Type": "application/x-npy"}
            else:
                body = json.dumps({"inputs": {spec.name: sample.tolist()}})
                headers = {"Content-Type": "application/json"}
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/infer", body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                elapsed = (time.perf_counter() - t0) * 1000.0
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
                got = np.load(io.BytesIO(data)) if raw else np.asarray(
                    next(iter(json.loads(data)["outputs"].values())), dtype=want.dtype)
                scale = max(1.0, float(np.abs(want).max()))
                if got.shape != want.shape or float(np.abs(got - want).max()) > 1e-4 * scale:
                    raise RuntimeError("wrong answer")
                with lock:
                    latencies.append(elapsed)
            except Exception as error:  # counted, and the connection is renewed
                with lock:
                    errors.append(f"request {k}: {error}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)

    t0 = time.time()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    serve.shutdown()
    ray.shutdown()

    done = len(latencies)
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(round(p / 100 * (len(latencies) - 1))))] if latencies else None

    result = {
        "model": os.path.basename(args.model), "device": local.device["name"], "cpu": cpu_name(),
        "cpus": os.cpu_count(), "replicas": args.replicas, "clients": args.clients,
        "requests": args.requests, "completed": done, "errors": len(errors),
        "cut_by_time_limit": done + len(errors) < args.requests, "wall_s": round(wall, 2),
        "throughput_per_s": round(done / wall, 1) if wall > 0 else None,
        "p50_ms": pct(50), "p99_ms": pct(99), "mean_ms": statistics.mean(latencies) if latencies else None,
        "serve_ready_s": round(ready_s, 1), "ocl_infer": ocl_infer.__version__, "ray": ray.__version__,
    }
    print(json.dumps(result, indent=1))
    for e in errors[:10]:
        print("error:", e, file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if errors or result["cut_by_time_limit"] else 0


if __name__ == "__main__":
    sys.exit(main())
