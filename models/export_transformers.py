#!/usr/bin/env python3
"""Exports the transformer benchmark models (random, seeded weights; speed, not accuracy):

  bert_like_t32, bert_like_t128  a BERT-style encoder (4 layers, hidden 256, 4 heads, feed-forward
                                 1024, post-LayerNorm, GELU; token + position + segment embeddings,
                                 an additive attention mask from a [B, T] 0/1 mask) at 32 and 128
                                 tokens
  vit_b_16                       torchvision's ViT-B/16 at 224x224 (86 M parameters, 330 MB)

Each gets NAME.input.<input>.npy for tools/benchmark.py, which compares its outputs against
onnxruntime's on the same inputs. Only the benchmark uses these models (models/make_all.sh --extra).

  export_transformers.py --out DIR [--force] [--skip-vit]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

SEED = 7
OPSET = 17


class EncoderLayer(torch.nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.o = torch.nn.Linear(d, d)
        self.ln1 = torch.nn.LayerNorm(d, eps=1e-12)
        self.fc1 = torch.nn.Linear(d, ff)
        self.fc2 = torch.nn.Linear(ff, d)
        self.ln2 = torch.nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, bias):
        b, t, d = x.shape
        hd = d // self.heads
        split = lambda y: y.reshape(b, t, self.heads, hd).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(2, 3) / math.sqrt(hd) + bias).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


class BertLike(torch.nn.Module):
    def __init__(self, vocab=1000, d=256, heads=4, layers=4, ff=1024, max_t=512):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(max_t, d)
        self.seg = torch.nn.Embedding(2, d)
        self.ln = torch.nn.LayerNorm(d, eps=1e-12)
        self.layers = torch.nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))
        self.pool = torch.nn.Linear(d, d)

    def forward(self, ids, mask):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.ln(self.tok(ids) + self.pos(pos) + self.seg(torch.zeros_like(ids)))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


def check_and_save(path, feeds, want, out_dir, name):
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {k: v.numpy() for k, v in feeds.items()})
    for r, w in zip(got, want):
        # The export must reproduce PyTorch, or the benchmark's error column means nothing.
        if not np.allclose(r, w.numpy(), rtol=1e-3, atol=1e-3):
            sys.exit(f"{name}: onnxruntime differs from PyTorch (max |diff| {np.abs(r - w.numpy()).max():g})")
    for k, v in feeds.items():
        np.save(os.path.join(out_dir, f"{name}.input.{k}.npy"), v.numpy())
    print(f"export_transformers: {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--skip-vit", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    g = torch.Generator().manual_seed(SEED)
    for t in (32, 128):
        name = f"bert_like_t{t}"
        path = os.path.join(args.out, name + ".onnx")
        if not args.force and os.path.exists(path) and os.path.exists(os.path.join(args.out, f"{name}.input.ids.npy")):
            continue
        torch.manual_seed(SEED)
        model = BertLike().eval()
        ids = torch.randint(0, 1000, (1, t), generator=g)
        mask = torch.ones(1, t, dtype=torch.int64)
        mask[0, t - t // 4:] = 0  # padding at the end, as a batch of unequal sentences has
        torch.onnx.export(model, (ids, mask), path, input_names=["ids", "mask"], output_names=["hidden", "pooled"],
                          opset_version=OPSET)
        with torch.no_grad():
            want = model(ids, mask)
        check_and_save(path, {"ids": ids, "mask": mask}, want, args.out, name)
    if args.skip_vit:
        return
    name = "vit_b_16"
    path = os.path.join(args.out, name + ".onnx")
    if not args.force and os.path.exists(path) and os.path.exists(os.path.join(args.out, f"{name}.input.x.npy")):
        return
    import torchvision

    torch.manual_seed(SEED)
    model = torchvision.models.vit_b_16(weights=None).eval()
    x = torch.randn(1, 3, 224, 224, generator=g)
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["logits"], opset_version=OPSET)
    with torch.no_grad():
        want = (model(x),)
    check_and_save(path, {"x": x}, want, args.out, name)


if __name__ == "__main__":
    main()
