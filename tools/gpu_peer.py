#!/usr/bin/env python3
"""The PyTorch side of tools/gpu_check.sh, run on the GPU machine (which has PyTorch, torchvision
and onnxruntime but none of the project's models).

  gpu_peer.py export DIR NAME...   torchvision NAME with random weights (seed 0) -> DIR/NAME.onnx
                                   (open batch axis), DIR/NAME.input.npy (batch 1) and
                                   DIR/NAME.ref.npy: ONNX Runtime's CPU output, the reference
  gpu_peer.py compare REF OUT      max |OUT - REF| / max |REF| and whether the top-1 agrees, as JSON
  gpu_peer.py time DIR NAME...     PyTorch's own latency on CUDA for the same modules: fp32 (TF32
                                   off, as our fp32 is plain fp32), fp16 (.half()), batch 1 and 16;
                                   one JSON line per model
"""
import json
import sys
import time

import numpy as np


def build(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None).eval()


def export(d, names):
    import onnxruntime as ort
    import torch
    for name in names:
        m = build(name)
        x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
        path = f"{d}/{name}.onnx"
        kw = dict(input_names=["input"], output_names=["output"], opset_version=17,
                  dynamic_axes={"input": {0: "N"}, "output": {0: "N"}})
        t0 = time.time()
        try:
            torch.onnx.export(m, (x,), path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m, (x,), path, **kw)
        np.save(f"{d}/{name}.input.npy", x.numpy())
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        np.save(f"{d}/{name}.ref.npy", s.run(None, {"input": x.numpy()})[0])
        print(f"exported {name} in {time.time() - t0:.1f} s", flush=True)


def compare(ref_path, out_path):
    ref, out = np.load(ref_path).astype(np.float64), np.load(out_path).astype(np.float64)
    if ref.shape != out.shape:
        print(json.dumps({"error": f"shape {out.shape} != reference {ref.shape}"}))
        return 1
    rel = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
    top1 = bool((ref.reshape(ref.shape[0], -1).argmax(1) == out.reshape(out.shape[0], -1).argmax(1)).all())
    print(json.dumps({"max_rel_err": rel, "top1_same": top1}))
    return 0


def latency_ms(m, x, iters=30):
    import torch
    with torch.no_grad():
        for _ in range(5):
            m(x)
        torch.cuda.synchronize()
        t = []
        for _ in range(iters):
            t0 = time.perf_counter()
            m(x)
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def time_models(names):
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in names:
        m = build(name).cuda()
        r = {"model": name, "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
        for b in (1, 16):
            x = torch.randn(b, 3, 224, 224, device="cuda")
            r[f"fp32_b{b}"] = latency_ms(m, x)
        m = m.half()
        r["fp16_b1"] = latency_ms(m, torch.randn(1, 3, 224, 224, device="cuda").half())
        print(json.dumps(r), flush=True)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "export":
        export(args[0], args[1:])
    elif cmd == "compare":
        return compare(*args)
    elif cmd == "time":
        time_models(args[1:])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
