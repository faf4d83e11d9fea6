#!/usr/bin/env python3
"""Exports small PyTorch models whose graphs hold control flow, causal masks and (later) recurrent
layers, with ONNX Runtime's outputs as the reference; tests/test_exported_models.cpp runs every
case listed in the manifest through ocl-infer and compares.

Under --out this writes, for each model NAME:
  NAME.onnx                          the export (dynamic axes where the model has them)
  NAME.c<K>.in.<input>.npy           inputs of case K (cases of one model differ in shape or in a
                                     control value, and all run in one session)
  NAME.c<K>.out.<output>.npy         ONNX Runtime's outputs for case K
and graph_cases.txt, one line per case: "NAME K RTOL ATOL" (the test's tolerance for that model).

Models (random weights under a fixed seed; nothing is downloaded):
  if_sample_rate     torch.jit.script: branches on a scalar int64 input "sr" (16000 / 8000), the
                     way speech-activity models do: a strided conv front-end per rate.
  loop_nested_if     torch.jit.script: a Loop whose trip count is an input, with an If on the
                     iteration's parity inside, a carried state and a per-iteration output.
  gpt_decoder        a 2-layer GPT-style decoder (token + position embeddings, causal
                     self-attention whose mask is torch.triu of a [T, T] ones matrix -> Trilu,
                     GELU MLP, pre-LayerNorm, tied output projection), dynamic sequence length.
Run with a python that sees Debian's python3-torch and python3-onnx, plus onnxruntime
(models/install_deps.sh sets one up).
"""

import argparse
import math
import os
import sys

import numpy as np
import torch

SEED = 20261204
OPSET = 17


class IfSampleRate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.front16 = torch.nn.Conv1d(1, 8, kernel_size=8, stride=4)
        self.front8 = torch.nn.Conv1d(1, 8, kernel_size=4, stride=2)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, sr: torch.Tensor) -> torch.Tensor:
        if int(sr) == 16000:
            f = torch.relu(self.front16(x))
        else:
            f = torch.tanh(self.front8(x))
        return torch.sigmoid(self.head(f.mean(dim=2)))


class LoopNestedIf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 6)
        self.b = torch.nn.Linear(6, 6)

    def forward(self, x: torch.Tensor, n: torch.Tensor):
        h = x
        trace = torch.zeros(0, x.shape[0])
        for i in range(int(n)):
            if i % 2 == 0:
                h = torch.tanh(self.a(h))
            else:
                h = h + torch.sigmoid(self.b(h))
            # A carried value that grows by a row per iteration (its shape changes in the loop).
            trace = torch.cat([trace, h.sum(dim=1).unsqueeze(0)], 0)
        return h, trace


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.out = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        hd = d // self.heads
        q = q.reshape(b, t, self.heads, hd).transpose(1, 2)
        k = k.reshape(b, t, self.heads, hd).transpose(1, 2)
        v = v.reshape(b, t, self.heads, hd).transpose(1, 2)
        att = q @ k.transpose(2, 3) / math.sqrt(hd)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class GptDecoder(torch.nn.Module):
    def __init__(self, vocab=97, d=48, heads=4, layers=2, max_t=64):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(max_t, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x) @ self.tok.weight.t()


def export(model, args, names_in, names_out, dynamic, path, script=False):
    model.eval()
    m = torch.jit.script(model) if script else model
    torch.onnx.export(m, args, path, input_names=names_in, output_names=names_out, opset_version=OPSET,
                      dynamic_axes=dynamic)


def cases():
    """(name, module factory, export args, input names, output names, dynamic axes, script, rtol,
    atol, [case inputs])."""
    g = torch.Generator().manual_seed(SEED)
    wave = lambda n: torch.randn(1, 1, n, generator=g)
    yield ("if_sample_rate", IfSampleRate, (wave(512), torch.tensor(16000)), ["x", "sr"], ["prob"],
           {"x": {2: "samples"}}, True, 1e-4, 1e-5,
           [{"x": wave(512), "sr": torch.tensor(16000)}, {"x": wave(256), "sr": torch.tensor(8000)},
            {"x": wave(1024), "sr": torch.tensor(16000)}])
    x6 = lambda b: torch.randn(b, 6, generator=g)
    yield ("loop_nested_if", LoopNestedIf, (x6(3), torch.tensor(4)), ["x", "n"], ["h", "trace"],
           {"x": {0: "batch"}}, True, 1e-4, 1e-5,
           [{"x": x6(3), "n": torch.tensor(4)}, {"x": x6(2), "n": torch.tensor(7)},
            {"x": x6(3), "n": torch.tensor(1)}])
    ids = lambda b, t: torch.randint(0, 97, (b, t), generator=g)
    yield ("gpt_decoder", GptDecoder, (ids(1, 8),), ["ids"], ["logits"], {"ids": {0: "batch", 1: "tokens"}},
           False, 1e-4, 1e-4, [{"ids": ids(1, 5)}, {"ids": ids(2, 17)}, {"ids": ids(1, 64)}])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import onnxruntime as ort

    manifest = []
    for name, factory, ex_args, ins, outs, dyn, script, rtol, atol, runs in cases():
        path = os.path.join(args.out, name + ".onnx")
        for k in range(len(runs)):
            manifest.append(f"{name} {k} {rtol:g} {atol:g}")
        last = os.path.join(args.out, f"{name}.c{len(runs) - 1}.out.{outs[0]}.npy")
        if not args.force and os.path.exists(path) and os.path.exists(last):
            continue
        torch.manual_seed(SEED)
        model = factory()
        export(model, ex_args, ins, outs, dyn, path, script)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for k, feeds in enumerate(runs):
            np_feeds = {n: v.numpy() for n, v in feeds.items()}
            got = sess.run(None, np_feeds)
            with torch.no_grad():
                want = model(*[feeds[n] for n in ins])
            want = want if isinstance(want, tuple) else (want,)
            for o, r, w in zip(outs, got, want):
                # The export must reproduce PyTorch, or the reference means nothing.
                if not np.allclose(r, w.numpy(), rtol=1e-4, atol=1e-4):
                    sys.exit(f"{name} case {k}: onnxruntime's '{o}' differs from PyTorch "
                             f"(max |diff| {np.abs(r - w.numpy()).max():g})")
                np.save(os.path.join(args.out, f"{name}.c{k}.out.{o}.npy"), r)
            for n, v in np_feeds.items():
                np.save(os.path.join(args.out, f"{name}.c{k}.in.{n}.npy"), v)
        print(f"export_graph_cases: {name} ({len(runs)} cases)")
    with open(os.path.join(args.out, "graph_cases.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
