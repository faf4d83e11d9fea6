// GlobalAveragePool of a depthwise Conv's output (the "squeeze" of efficientnet-style
// squeeze-and-excitation blocks) becomes the conv's second output: the depthwise kernel, whose
// work-items compute whole output planes, sums each plane right after writing it (the values are
// still in cache) and stores its mean. The pool's pass over the tensor and one kernel boundary
// disappear (16 of efficientnet_b0's 100 launches). The conv's output keeps its other readers.
// Variants that cannot compute the means in the same kernel add a plane-mean launch of their own
// (ops/conv_ops.cpp), so the fusion is always correct.
#include "ops/core/op_def.hpp"
#include "runtime/compiler/optimizer.hpp"

namespace oi {

int pass_fuse_plane_mean(Graph& g, std::string* detail) {
  int fused = 0;
  for (size_t pi = 0; pi < g.nodes.size(); ++pi) {
    Node& pool = g.nodes[pi];
    if (pool.removed || pool.op_type != "GlobalAveragePool" || !pool.domain.empty() || pool.inputs.size() != 1 ||
        pool.outputs.size() != 1 || pool.outputs[0] < 0 || !pool.epilogue.empty())
      continue;
    const int y = pool.inputs[0], m = pool.outputs[0];
    if (y < 0 || g.values[y].producer < 0) continue;
    const Value& yv = g.values[y];
    if (!yv.shape_known || (yv.shape.size() != 3 && yv.shape.size() != 4) || yv.dtype != DType::Float32 ||
        g.values[m].dtype != DType::Float32)
      continue;
    const int ci = yv.producer;
    Node& conv = g.nodes[ci];
    // A depthwise conv (one input channel per group), without a fused input scale, with one output.
    if (conv.removed || conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 ||
        conv.inputs.size() > 3 || conv.outputs.size() != 1 || conv.outputs[0] != y || conv.epilogue.has_post())
      continue;
    const int x = conv.inputs[0], w = conv.inputs[1];
    if (x < 0 || w < 0 || !g.values[x].shape_known || !g.values[w].shape_known || g.values[w].shape.size() < 3)
      continue;
    const int64_t groups = conv.attr_int("group", 1);
    if (groups <= 1 || g.values[x].shape[1] != groups || g.values[w].shape[1] != 1) continue;
    conv.outputs.push_back(m);
    g.values[m].producer = static_cast<int>(ci);
    absorb(conv, pool);
    pool.removed = true;
    ++fused;
  }
  if (detail) *detail = std::to_string(fused) + " GlobalAveragePool computed by the depthwise Conv before it";
  return fused;
}

}  // namespace oi
