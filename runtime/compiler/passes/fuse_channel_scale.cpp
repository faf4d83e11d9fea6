// Mul(x, s) -> Conv, with s one value per channel of x ([N or 1, C, 1, ...] or [C, 1, ...]; the
// squeeze-and-excitation scale of efficientnet-style blocks): the conv multiplies each input
// channel by s as it reads x, and the Mul's pass over the tensor (a read and a write of x, and a
// kernel boundary) disappears. The scale becomes the conv's input 3 (an ocl-infer extension of
// Conv; every conv variant that applies to it honours it, see ops/conv_ops.cpp). Only ungrouped
// convs, only when the conv is the Mul's sole reader.
#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"

namespace oi {

namespace {

// Whether `s` holds one value per channel of `x` (x: [N, C, spatial...]) and possibly per image.
bool per_channel(const Shape& x, const Shape& s) {
  if (x.size() < 3) return false;
  size_t lead = x.size() - s.size();  // ONNX broadcasting aligns the trailing dims
  if (s.size() > x.size() || lead > 1) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t d = i + lead;  // the dim of x this dim of s meets
    if (d == 1) {
      if (s[i] != x[1]) return false;
    } else if (d == 0) {
      if (s[i] != 1 && s[i] != x[0]) return false;
    } else if (s[i] != 1) {
      return false;
    }
  }
  return true;
}

}  // namespace

int pass_fuse_channel_scale(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    Node& conv = g.nodes[ci];
    if (conv.removed || conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.empty() || conv.inputs.size() > 3)
      continue;
    if (conv.attr_int("group", 1) != 1) continue;
    const int y = conv.inputs[0];
    if (y < 0 || g.values[y].dtype != DType::Float32 || g.sole_reader(y) != static_cast<int>(ci)) continue;
    // The conv reads y once (not also as its weights or bias).
    int reads = 0;
    for (int in : conv.inputs) reads += in == y;
    if (reads != 1) continue;
    const int mi = g.values[y].producer;
    if (mi < 0) continue;
    Node& mul = g.nodes[mi];
    if (mul.removed || mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || !mul.epilogue.empty() ||
        mul.outputs.size() != 1)
      continue;
    int x = -1, s = -1;
    for (int k = 0; k < 2; ++k) {
      const int a = mul.inputs[k], b = mul.inputs[1 - k];
      if (a < 0 || b < 0 || a == b) continue;
      const Value &va = g.values[a], &vb = g.values[b];
      if (!va.shape_known || !vb.shape_known || va.dtype != DType::Float32 || vb.dtype != DType::Float32) continue;
      if (va.shape == g.values[y].shape && per_channel(va.shape, vb.shape)) {
        x = a, s = b;
        break;
      }
    }
    if (x < 0) continue;
    conv.inputs[0] = x;
    conv.inputs.resize(4, -1);
    conv.inputs[3] = s;
    // The Mul runs first: it leads the list of covered nodes ("Mul+Conv+..." in dumps).
    Node first = mul;
    absorb(first, conv);
    conv.covers = first.covers;
    mul.removed = true;
    ++fused;
  }
  if (detail) *detail = std::to_string(fused) + " per-channel Mul folded into the Conv that reads it";
  return fused;
}

}  // namespace oi
