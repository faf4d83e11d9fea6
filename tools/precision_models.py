#!/usr/bin/env python3
"""Checks --precision fp16 on a folder of models against PyTorch: accuracy, memory and speed.

    build/pyenv/bin/python tools/precision_models.py [--models-dir build/models/precision] \\
        [--cli build/ocl-infer] [--models NAME ...] [--bench --iterations 10] [--json FILE]

For every NAME.onnx with NAME.input.npy and NAME.output.npy (PyTorch's float32 output) in the
folder -- models/export_precision_set.py makes 17 torchvision architectures -- this runs the CLI in
fp32 and in fp16 and reports, relative to max |reference|:
  - fp32 and fp16 max abs error against PyTorch's float32 output,
  - the same for NAME.fp16emul.npy when present (PyTorch with float16 storage emulated),
  - whether fp16's top-1 class matches the reference's, which is required wherever the reference's
    two best scores are more than 1 % of max |reference| apart,
  - peak activation and weight bytes from `--dump plan --json`, fp16 / fp32,
  - with --bench, median latency of fp32 and fp16, interleaved.
A model passes when its fp16 error is at most --max-error (default 0.5 %) of max |reference|
(or, with --or-emulated F, at most F x the emulated error) and the top-1 rule holds. Exits 1 when
any model fails.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cli, model, feed, out_dir, precision):
    cmd = [cli, model, "--input", feed, "--output-dir", out_dir, "--precision", precision]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(" ".join(cmd) + " failed: " + r.stderr.strip())
    outs = sorted(glob.glob(os.path.join(out_dir, "*.npy")))
    if len(outs) != 1:
        raise RuntimeError(f"{model}: expected one output, got {outs}")
    return np.load(outs[0])


def input_name(model):
    import onnx
    g = onnx.load(model, load_external_data=False).graph
    consts = {t.name for t in g.initializer}
    return next(i.name for i in g.input if i.name not in consts)


def plan_bytes(cli, model, precision):
    r = subprocess.run([cli, model, "--dump", "plan", "--json", "--precision", precision],
                       capture_output=True, text=True, check=True)
    d = json.loads(r.stdout)
    return d["peak_activation_bytes"], d["weight_bytes"], d["kernel_launches"]


def bench(cli, model, feed, precision, iterations):
    r = subprocess.run([cli, model, "--input", feed, "--bench", "--iterations", str(iterations),
                        "--warmup", "2", "--json", "--precision", precision],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", default=os.path.join(REPO_ROOT, "build", "models", "precision"))
    ap.add_argument("--cli", default=os.path.join(REPO_ROOT, "build", "ocl-infer"))
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--max-error", type=float, default=0.005)
    ap.add_argument("--or-emulated", type=float, metavar="F",
                    help="also pass a model whose fp16 error is at most F x the emulated error "
                         "(for models whose float16 storage inherently costs more than --max-error)")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()

    names = a.models or sorted(os.path.basename(p)[:-5]
                               for p in glob.glob(os.path.join(a.models_dir, "*.onnx")))
    rows, failed = [], 0
    header = (f"{'model':20} {'fp32 err':>9} {'fp16 err':>9} {'emulated':>9} {'top-1':>6} "
              f"{'act 16/32':>9} {'wts 16/32':>9}" + (f" {'fp32 ms':>8} {'fp16 ms':>8}" if a.bench else ""))
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            stem = os.path.join(a.models_dir, name)
            model = stem + ".onnx"
            # NAME.input.npy / NAME.output.npy, or the demo model's NAME.dog.*.npy.
            pair = next((p for p in (stem, stem + ".dog") if os.path.exists(p + ".output.npy")), None)
            if pair is None or not os.path.exists(pair + ".input.npy"):
                print(f"{name:20} skipped: no {name}.input.npy / {name}.output.npy beside it")
                continue
            ref = np.load(pair + ".output.npy").astype(np.float64)
            feed = input_name(model) + "=" + pair + ".input.npy"
            scale = float(np.abs(ref).max())
            outs = {}
            for p in ("fp32", "fp16"):
                d = os.path.join(tmp, f"{name}.{p}")
                os.makedirs(d)
                outs[p] = run(a.cli, model, feed, d, p).astype(np.float64).reshape(ref.shape)
            err = {p: float(np.abs(outs[p] - ref).max()) / scale for p in outs}
            emul_path = pair + ".fp16emul.npy"
            emul = (float(np.abs(np.load(emul_path).astype(np.float64) - ref).max()) / scale
                    if os.path.exists(emul_path) else None)
            top2 = np.sort(ref.reshape(ref.shape[0], -1), axis=1)[:, -2:]
            decisive = bool(((top2[:, 1] - top2[:, 0]) > 0.01 * scale).all())
            same_top1 = bool((outs["fp16"].reshape(ref.shape[0], -1).argmax(1) ==
                              ref.reshape(ref.shape[0], -1).argmax(1)).all())
            act32, w32, l32 = plan_bytes(a.cli, model, "fp32")
            act16, w16, l16 = plan_bytes(a.cli, model, "fp16")
            within = err["fp16"] <= a.max_error or (
                a.or_emulated is not None and emul is not None and err["fp16"] <= a.or_emulated * emul)
            ok = within and (same_top1 or not decisive)
            failed += not ok
            row = {"model": name, "fp32_error": err["fp32"], "fp16_error": err["fp16"],
                   "emulated_fp16_error": emul, "same_top1": same_top1, "top1_decisive": decisive,
                   "activation_bytes": [act32, act16], "weight_bytes": [w32, w16],
                   "launches": [l32, l16], "pass": ok}
            line = (f"{name:20} {err['fp32']:9.2e} {err['fp16']:9.3%} "
                    f"{(f'{emul:.3%}' if emul is not None else '-'):>9} "
                    f"{('same' if same_top1 else ('DIFF' if decisive else 'diff~')):>6} "
                    f"{act16 / act32:9.2f} {w16 / w32:9.2f}")
            if a.bench:
                t = {"fp32": [], "fp16": []}
                for r in range(2):
                    for p in (("fp32", "fp16") if r == 0 else ("fp16", "fp32")):
                        t[p].append(bench(a.cli, model, feed, p, a.iterations))
                row["fp32_ms"], row["fp16_ms"] = min(t["fp32"]), min(t["fp16"])
                line += f" {row['fp32_ms']:8.1f} {row['fp16_ms']:8.1f}"
            print(line + ("" if ok else "   FAIL"), flush=True)
            rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{len(rows) - failed} of {len(rows)} models within {a.max_error:.2%} of max |reference| "
          + (f"(or {a.or_emulated} x the emulated error) " if a.or_emulated is not None else "")
          + "with the top-1 rule")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
