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
  loop_sequence      torch.jit.script: a Python list appended in a loop and stacked (sequence
                     ops carried through a Loop), torch.split read back by index and len().
  lstm_classifier, bigru, lstm2_batch_first   recurrent layers (LSTM, bidirectional GRU, 2-layer
                     batch_first LSTM with initial states) at several sequence lengths.
  lstm_encoder       a 2-layer bidirectional LSTM of 256 units over 80 features per frame.
  vad_like           a speech-activity style model, run chunk by chunk (see export_vad).
NAME.input.<input>.npy holds the largest case's inputs (a chunk of speech for vad_like): tools/benchmark.py
times the model on them.
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


class LoopSequence(torch.nn.Module):
    """torch.jit.script's list append in a loop: SequenceEmpty, SequenceInsert carried through a
    Loop, ConcatFromSequence (torch.stack) after it; plus a torch.split read back by index
    (SplitToSequence, SequenceAt) and len() (SequenceLength)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 6)

    def forward(self, x: torch.Tensor, n: torch.Tensor):
        h = x
        outs = []
        for i in range(int(n)):
            h = torch.tanh(self.a(h)) + float(i)
            outs.append(h.sum(dim=1))
        parts = torch.split(h, 2, dim=1)
        return torch.stack(outs, 0), parts[1] * len(parts)


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


class LstmClassifier(torch.nn.Module):
    """Token ids [B, T] -> class logits from the last hidden state (an LSTM text classifier)."""

    def __init__(self, vocab=120, d=32, hidden=48, classes=5):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, ids):
        y, (h, c) = self.lstm(self.emb(ids).transpose(0, 1))
        return self.head(h[-1]), y


class BiGru(torch.nn.Module):
    """Features [T, B, F] -> a bidirectional GRU's sequence and final states."""

    def __init__(self, feat=20, hidden=40):
        super().__init__()
        self.gru = torch.nn.GRU(feat, hidden, bidirectional=True)
        self.proj = torch.nn.Linear(2 * hidden, 8)

    def forward(self, x):
        y, h = self.gru(x)
        return self.proj(y), h


class Lstm2BatchFirst(torch.nn.Module):
    """A 2-layer LSTM with batch_first=True, initial states as inputs."""

    def __init__(self, feat=16, hidden=33):
        super().__init__()
        self.lstm = torch.nn.LSTM(feat, hidden, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class LstmEncoder(torch.nn.Module):
    """A speech-encoder sized stack: 80 filterbank features per frame, a 2-layer bidirectional
    LSTM of 256 units (batch_first), a projection to 32 tokens."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(80, 256, num_layers=2, bidirectional=True, batch_first=True)
        self.proj = torch.nn.Linear(512, 32)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.proj(y)


class VadLike(torch.nn.Module):
    """A speech-activity model shaped like the widely used ones: one chunk of samples per call, a
    strided conv front-end chosen by the sample rate (If on the scalar input "sr": 512 samples at
    16 kHz, 256 at 8 kHz), an LSTM over the chunk's frames that starts from the previous chunk's
    state, the speech probability and the new state out."""

    def __init__(self, hidden=64):
        super().__init__()
        self.front16 = torch.nn.Conv1d(1, 32, kernel_size=32, stride=16)
        self.front8 = torch.nn.Conv1d(1, 32, kernel_size=16, stride=8)
        self.enc = torch.nn.Conv1d(32, hidden, kernel_size=3, padding=1)
        self.lstm = torch.nn.LSTM(hidden, hidden, num_layers=2)
        self.out = torch.nn.Linear(hidden, 1)
        # Untrained, the head would answer ~0.5 for any sound; larger weights make the
        # probabilities follow the signal, so that the comparison sees them move.
        with torch.no_grad():
            self.out.weight.mul_(80)

    def forward(self, x: torch.Tensor, sr: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        x = x * 32.0
        if int(sr) == 16000:
            f = torch.relu(self.front16(x.unsqueeze(1)))
        else:
            f = torch.relu(self.front8(x.unsqueeze(1)))
        f = torch.relu(self.enc(torch.log1p(f)))
        y, (h2, c2) = self.lstm(f.permute(2, 0, 1), (h, c))
        return torch.sigmoid(self.out(y[-1])), h2, c2


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
    yield ("loop_sequence", LoopSequence, (x6(3), torch.tensor(4)), ["x", "n"], ["trace", "part"],
           {"x": {0: "batch"}}, True, 1e-4, 1e-5,
           [{"x": x6(3), "n": torch.tensor(4)}, {"x": x6(2), "n": torch.tensor(9)}])
    ids = lambda b, t: torch.randint(0, 97, (b, t), generator=g)
    yield ("gpt_decoder", GptDecoder, (ids(1, 8),), ["ids"], ["logits"], {"ids": {0: "batch", 1: "tokens"}},
           False, 1e-4, 1e-4, [{"ids": ids(1, 5)}, {"ids": ids(2, 17)}, {"ids": ids(1, 64)}])
    tok = lambda b, t: torch.randint(0, 120, (b, t), generator=g)
    yield ("lstm_classifier", LstmClassifier, (tok(2, 9),), ["ids"], ["logits", "y"],
           {"ids": {0: "batch", 1: "tokens"}, "y": {0: "tokens", 1: "batch"}}, False, 1e-4, 1e-5,
           [{"ids": tok(1, 5)}, {"ids": tok(3, 23)}, {"ids": tok(2, 120)}, {"ids": tok(1, 1)}])
    feats = lambda t, b: torch.randn(t, b, 20, generator=g)
    yield ("bigru", BiGru, (feats(6, 2),), ["x"], ["y", "h"], {"x": {0: "time", 1: "batch"}}, False, 1e-4, 1e-5,
           [{"x": feats(6, 2)}, {"x": feats(41, 3)}, {"x": feats(300, 1)}])
    fbank = lambda t: torch.randn(1, t, 80, generator=g)
    yield ("lstm_encoder", LstmEncoder, (fbank(20),), ["x"], ["y"], {"x": {1: "frames"}}, False, 1e-4, 1e-5,
           [{"x": fbank(100)}, {"x": fbank(37)}])
    seq = lambda b, t: torch.randn(b, t, 16, generator=g)
    state = lambda b: torch.randn(2, b, 33, generator=g) * 0.5
    yield ("lstm2_batch_first", Lstm2BatchFirst, (seq(2, 7), state(2), state(2)), ["x", "h0", "c0"],
           ["y", "h", "c"], {"x": {0: "batch", 1: "time"}, "h0": {1: "batch"}, "c0": {1: "batch"}}, False, 1e-4, 1e-5,
           [{"x": seq(2, 7), "h0": state(2), "c0": state(2)}, {"x": seq(5, 19), "h0": state(5), "c0": state(5)},
            {"x": seq(1, 150), "h0": state(1), "c0": state(1)}])


SENTENCE = ("Voice activity detection decides, chunk by chunk, whether somebody is speaking. "
            "The quick brown fox jumps over the lazy dog.")


def speech(rate: int) -> np.ndarray:
    """The test sentence spoken by espeak-ng (Debian's package, no network), with half a second of
    silence before and after, resampled to `rate` Hz in [-1, 1]."""
    import subprocess
    import tempfile
    import wave

    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "speech.wav")
        try:
            subprocess.run(["espeak-ng", "-s", "150", "-w", wav, SENTENCE], check=True)
        except FileNotFoundError:
            sys.exit("export_graph_cases: espeak-ng is missing (models/install_deps.sh installs it)")
        with wave.open(wav) as w:
            src_rate = w.getframerate()
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
    n = int(len(pcm) * rate / src_rate)
    voiced = np.interp(np.arange(n) * (src_rate / rate), np.arange(len(pcm)), pcm).astype(np.float32)
    quiet = np.zeros(rate // 2, dtype=np.float32)
    return np.concatenate([quiet, voiced, quiet])


def export_vad(out: str, force: bool):
    """vad_like.onnx with vad_like.audio<R>.npy (chunks [N, samples]) and ONNX Runtime's
    probabilities vad_like.probs<R>.npy [N] when the state is fed back from chunk to chunk,
    for R = 16000 and 8000."""
    import onnxruntime as ort

    path = os.path.join(out, "vad_like.onnx")
    if not force and os.path.exists(os.path.join(out, "vad_like.probs8000.npy")):
        return
    torch.manual_seed(SEED)
    model = VadLike().eval()
    h0 = torch.zeros(2, 1, 64)
    export(model, (torch.zeros(1, 512), torch.tensor(16000), h0, h0), ["x", "sr", "h", "c"], ["prob", "hn", "cn"],
           {"x": {1: "samples"}}, path, script=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for rate, chunk in ((16000, 512), (8000, 256)):
        audio = speech(rate)
        n = len(audio) // chunk
        chunks = audio[: n * chunk].reshape(n, chunk)
        h = np.zeros((2, 1, 64), np.float32)
        c = np.zeros((2, 1, 64), np.float32)
        probs = []
        th, tc = torch.from_numpy(h), torch.from_numpy(c)
        for k in range(n):
            p, h, c = sess.run(None, {"x": chunks[k : k + 1], "sr": np.array(rate, np.int64), "h": h, "c": c})
            with torch.no_grad():
                tp, th, tc = model(torch.from_numpy(chunks[k : k + 1]), torch.tensor(rate), th, tc)
            if not np.allclose(p, tp.numpy(), rtol=1e-4, atol=1e-5):
                sys.exit(f"vad_like chunk {k}: onnxruntime differs from PyTorch")
            probs.append(float(p.reshape(-1)[0]))
        np.save(os.path.join(out, f"vad_like.audio{rate}.npy"), chunks)
        if rate == 16000:  # tools/benchmark.py's inputs: one chunk from the middle of the speech
            z = np.zeros((2, 1, 64), np.float32)
            middle = chunks[n // 2 : n // 2 + 1]
            for key, v in (("x", middle), ("sr", np.array(rate, np.int64)), ("h", z), ("c", z)):
                np.save(os.path.join(out, f"vad_like.input.{key}.npy"), v)
        np.save(os.path.join(out, f"vad_like.probs{rate}.npy"), np.array(probs, np.float32))
        print(f"export_graph_cases: vad_like at {rate} Hz, {n} chunks, probabilities "
              f"{min(probs):.3f}..{max(probs):.3f}")


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
        # tools/benchmark.py's inputs: the largest case.
        big = max(range(len(runs)), key=lambda k: sum(v.numel() for v in runs[k].values()))
        for n, v in runs[big].items():
            np.save(os.path.join(args.out, f"{name}.input.{n}.npy"), v.numpy())
        print(f"export_graph_cases: {name} ({len(runs)} cases)")
    export_vad(args.out, args.force)
    with open(os.path.join(args.out, "graph_cases.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
