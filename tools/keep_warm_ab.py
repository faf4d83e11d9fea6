"""The keep-warm spinner against none, in one process: two sessions of MODEL (keep_warm=0 and -2,
the spinner without its trial) run alternately in blocks of 10, 20 blocks each, after 30 untimed
runs; prints both medians and minima and their ratio. Alternating in one process keeps a shared
machine's drift off the ratio (separate processes on the development VMs varied by 10-30 % from
minute to minute). Inputs: seeded random floats, zeros for integer inputs, open dimensions 1, or
NAME=FILE.npy.

    build/pyenv/bin/python tools/keep_warm_ab.py MODEL.onnx [NAME=FILE.npy ...] [--blocks N]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "python"))
import ocl_infer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("inputs", nargs="*", help="NAME=FILE.npy")
    ap.add_argument("--blocks", type=int, default=20)
    a = ap.parse_args()
    given = {}
    for spec in a.inputs:
        name, _, path = spec.partition("=")
        if not path:
            ap.error(f"'{spec}' is not NAME=FILE.npy")
        given[name] = np.load(path)
    sessions = {w: ocl_infer.InferenceSession(a.model, keep_warm=w) for w in (0, -2)}
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sessions[0].get_inputs():
        if i.name in given:
            feeds[i.name] = given[i.name]
            continue
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.zeros(shape, dtype=np.int64) if "int" in i.type else rng.random(shape, dtype=np.float32)
    for s in sessions.values():
        for _ in range(30):
            s.run(None, feeds)
    times = {w: [] for w in sessions}
    for _ in range(a.blocks):
        for w, s in sessions.items():
            for _ in range(10):
                t0 = time.perf_counter()
                s.run(None, feeds)
                times[w].append(time.perf_counter() - t0)
    med = {w: float(np.median(v)) * 1e3 for w, v in times.items()}
    low = {w: float(np.min(v)) * 1e3 for w, v in times.items()}
    spin = sessions[-2].stats().get("keep_warm_spin")
    print(f"{os.path.basename(a.model)}: off median {med[0]:.3f} ms (min {low[0]:.3f}), spinner median "
          f"{med[-2]:.3f} ms (min {low[-2]:.3f}{'' if spin else '; the spinner was not in use'}), "
          f"spinner / off {med[-2] / med[0]:.3f}")


if __name__ == "__main__":
    main()
