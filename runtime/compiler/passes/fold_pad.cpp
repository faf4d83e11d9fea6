// A zero constant Pad on the spatial dims in front of a Conv becomes part of the Conv's pads
// (TensorFlow and some PyTorch exports pad explicitly, often asymmetrically); so does an 8-bit Pad
// with the input zero point in front of a QLinearConv / ConvInteger.
#include <algorithm>

#include "runtime/ir/host_math.hpp"
#include "runtime/compiler/optimizer.hpp"

namespace oi {

namespace {

// The pads of a constant Pad node as [begin..., end...] and its pad value, or empty when not a
// plain constant pad.
std::vector<int64_t> constant_pads(const Graph& g, const Node& p, double* pad_value) {
  if (p.attr_string("mode", "constant") != "constant") return {};
  std::vector<int64_t> pads;
  double value = 0;
  if (g.opset() < 11) {
    pads = p.attr_ints("pads", {});
    value = p.attr_float("value", 0.f);
  } else {
    if (p.inputs.size() < 2 || p.inputs[1] < 0 || !g.values[p.inputs[1]].data) return {};
    const Tensor& t = *g.values[p.inputs[1]].data;
    for (int64_t i = 0; i < t.numel(); ++i) pads.push_back(host_get_i(t, i));
    if (p.inputs.size() > 2 && p.inputs[2] >= 0) {
      if (!g.values[p.inputs[2]].data) return {};
      value = host_get_f(*g.values[p.inputs[2]].data, 0);
    }
    if (p.inputs.size() > 3 && p.inputs[3] >= 0) return {};  // explicit axes
  }
  *pad_value = value;
  return pads;
}

}  // namespace

int pass_fold_pad(Graph& g, std::string* detail) {
  int folded = 0, dropped = 0;
  for (auto& p : g.nodes) {
    if (p.removed || p.op_type != "Pad" || p.inputs.empty() || p.inputs[0] < 0 || p.outputs.empty()) continue;
    // A Pad that pads nothing (DenseNet exports some before AveragePool) is an identity.
    std::vector<int64_t> raw;
    if (g.opset() < 11) raw = p.attr_ints("pads", {});
    else if (p.inputs.size() > 1 && p.inputs[1] >= 0 && g.values[p.inputs[1]].data)
      for (int64_t i = 0; i < g.values[p.inputs[1]].data->numel(); ++i) raw.push_back(host_get_i(*g.values[p.inputs[1]].data, i));
    if (!raw.empty() && std::all_of(raw.begin(), raw.end(), [](int64_t v) { return v == 0; })) {
      bool is_output = false;
      for (int o : g.outputs) is_output |= o == p.outputs[0];
      if (!is_output) {
        replace_uses(g, p.outputs[0], p.inputs[0]);
        p.removed = true;
        ++dropped;
        continue;
      }
    }
    int r = g.sole_reader(p.outputs[0]);
    if (r < 0) continue;
    Node& conv = g.nodes[r];
    // A float Conv pads with 0; an integer one (QLinearConv, ConvInteger) with its input zero
    // point, which contributes nothing to its sums.
    const bool qconv = conv.op_type == "QLinearConv" || conv.op_type == "ConvInteger";
    if ((conv.op_type != "Conv" && !qconv) || !conv.domain.empty() || conv.inputs.empty() ||
        conv.inputs[0] != p.outputs[0])
      continue;
    if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") continue;
    double value = 0, conv_zero = 0;
    if (qconv && conv.inputs.size() > 2 && conv.inputs[2] >= 0) {
      if (!g.values[conv.inputs[2]].data) continue;
      conv_zero = static_cast<double>(host_get_i(*g.values[conv.inputs[2]].data, 0));
    }
    std::vector<int64_t> pads = constant_pads(g, p, &value);
    if (value != conv_zero) continue;
    const size_t rank = g.values[p.inputs[0]].shape.size();
    if (pads.size() != 2 * rank || rank < 3) continue;
    bool ok = pads[0] == 0 && pads[1] == 0 && pads[rank] == 0 && pads[rank + 1] == 0;
    for (auto v : pads) ok &= v >= 0;
    if (!ok) continue;
    const size_t sp = rank - 2;
    std::vector<int64_t> cp = conv.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
    if (cp.size() != 2 * sp) continue;
    for (size_t d = 0; d < sp; ++d) {
      cp[d] += pads[2 + d];
      cp[sp + d] += pads[rank + 2 + d];
    }
    Attribute a;
    a.kind = Attribute::Kind::Ints;
    a.ints = cp;
    conv.attrs["pads"] = a;
    conv.inputs[0] = p.inputs[0];
    absorb(conv, p);
    // Keep the Pad listed first: it ran before the Conv.
    std::rotate(conv.covers.begin(), conv.covers.end() - 1, conv.covers.end());
    p.removed = true;
    ++folded;
  }
  if (detail)
    *detail = std::to_string(folded) + " Pad folded into Conv / QLinearConv pads, " + std::to_string(dropped) + " empty Pad removed";
  return folded + dropped;
}

}  // namespace oi
