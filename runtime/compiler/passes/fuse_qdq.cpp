// QDQ models (QuantizeLinear/DequantizeLinear pairs around float ops, as ONNX Runtime's quantizer
// writes them) to integer kernels:
//   DequantizeLinear(x) -> Conv(., DequantizeLinear(W), DequantizeLinear(bias)) [-> activation]
//     -> QuantizeLinear            becomes one QLinearConv with the activation as its epilogue;
//   the same around Gemm (transA=0, alpha=beta=1) and MatMul becomes one QLinearMatMul (an internal
//   9th input carries Gemm's bias as int32).
// Around other ops: Concat of DQ outputs becomes com.microsoft QLinearConcat, Add and Mul of two DQ outputs (with a Relu/Clip after an Add) become
// com.microsoft QLinearAdd / QLinearMul, GlobalAveragePool / Sigmoid / LeakyRelu become their
// QLinear forms, and ops that only move data (Reshape, Flatten, Transpose, MaxPool, Slice, Pad
// with its value quantized, ...)
// run on the 8-bit values when the Q after them has the DQ's parameters.
// Then every DequantizeLinear of a constant that is left (weights of ops without an integer
// kernel) is folded into a float constant, and DequantizeLinear nodes nothing reads are removed.
// Activations between the pairs stay 8-bit; what cannot be fused keeps running as its own
// Q / DQ kernels and float op, so every QDQ model runs.
#include <algorithm>
#include <cmath>

#include "ops/core/activation.hpp"
#include "ops/core/op_def.hpp"
#include "ops/core/quantize.hpp"
#include "runtime/compiler/optimizer.hpp"
#include "runtime/ir/host_math.hpp"

namespace oi {

namespace {

bool live_op(const Graph& g, int node, const char* op) {
  return node >= 0 && !g.nodes[node].removed && g.nodes[node].op_type == op && g.nodes[node].domain.empty();
}

// The DequantizeLinear node that produces value v, or -1.
int dq_of(const Graph& g, int v) {
  const int p = v >= 0 ? g.values[v].producer : -1;
  return live_op(g, p, "DequantizeLinear") ? p : -1;
}

bool is_const(const Graph& g, int v) { return v >= 0 && g.values[v].data != nullptr; }

// Input slot k of node n, or -1.
int input(const Node& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; }

// The quantization parameters of a Q or DQ node: scale and zero-point values (the zero point may
// be -1), the quantized type, and the axis of a per-axis scale.
struct QParams {
  int scale = -1, zero = -1;
  DType type = DType::Undefined;
  int64_t axis = -1;  // -1: per tensor
  int64_t count = 1;
};

// Parameters of Q/DQ node `ni` when they are constants (per tensor, or per axis when
// allow_axis); false otherwise.
bool qparams(const Graph& g, int ni, const Shape& data, bool allow_axis, QParams* q) {
  const Node& n = g.nodes[ni];
  q->scale = input(n, 1);
  q->zero = input(n, 2);
  if (!is_const(g, q->scale) || (q->zero >= 0 && !is_const(g, q->zero))) return false;
  if (g.values[q->scale].dtype != DType::Float32) return false;
  q->count = numel(g.values[q->scale].shape);
  if (q->count > 1) {
    if (!allow_axis || g.values[q->scale].shape.size() != 1) return false;
    const int64_t rank = static_cast<int64_t>(data.size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || data[static_cast<size_t>(axis)] != q->count) return false;
    q->axis = axis;
  }
  const Tensor& s = *g.values[q->scale].data;
  for (int64_t i = 0; i < s.numel(); ++i)
    if (!std::isfinite(host_get_f(s, i)) || host_get_f(s, i) == 0) return false;
  return true;
}

// The zero point of a Q/DQ (a new zero constant of `type` when omitted).
int zero_point_value(Graph& g, const QParams& q, DType type, const std::string& name) {
  if (q.zero >= 0) return q.zero;
  return g.add_constant(name + "_zero_point", Tensor(type, {}));
}

double scalar_f(const Graph& g, int v) { return host_get_f(*g.values[v].data, 0); }

// The chain after a float product: [activation ->] QuantizeLinear with constant per-tensor
// parameters. Returns the Q node (and the activation node or -1) or -1.
int quantized_consumer(const Graph& g, int y, int* act_node, Epilogue* e) {
  *act_node = -1;
  if (g.is_output(y)) return -1;
  int r = g.sole_reader(y);
  if (r < 0) return -1;
  if (!live_op(g, r, "QuantizeLinear")) {
    Epilogue a;
    if (!activation_of_node(g, g.nodes[r], &a) || g.nodes[r].inputs[0] != y) return -1;
    const int z = g.nodes[r].outputs[0];
    if (g.is_output(z)) return -1;
    *act_node = r;
    *e = a;
    r = g.sole_reader(z);
    if (r < 0 || !live_op(g, r, "QuantizeLinear")) return -1;
  }
  QParams q;
  if (!qparams(g, r, g.values[y].shape, false, &q)) return -1;
  if (!is_quantized_type(g.values[g.nodes[r].outputs[0]].dtype)) return -1;
  return r;
}

// The int32 bias of a fused product: bias_f / (x_scale * w_scale[c]) rounded; exact when the bias
// is DequantizeLinear(int32, x_scale * w_scale) as quantizers write it. False when a value does
// not fit comfortably in int32.
bool int_bias(const Graph& g, int bias, double xs, const Tensor& ws, int64_t channels, Tensor* out) {
  Tensor bf;
  const int dq = dq_of(g, bias);
  if (dq >= 0) {
    const Node& n = g.nodes[dq];
    if (!is_const(g, n.inputs[0]) || !is_const(g, input(n, 1)) || (input(n, 2) >= 0 && !is_const(g, input(n, 2))))
      return false;
    const Tensor& b = *g.values[n.inputs[0]].data;
    bool zero_zp = input(n, 2) < 0;
    if (!zero_zp) {
      const Tensor& z = *g.values[input(n, 2)].data;
      zero_zp = true;
      for (int64_t i = 0; i < z.numel(); ++i) zero_zp &= host_get_i(z, i) == 0;
    }
    if (b.dtype == DType::Int32 && zero_zp) {
      // The common case: the integers themselves when the scale is exactly x_scale * w_scale.
      const Tensor& s = *g.values[input(n, 1)].data;
      bool same = numel(b.shape) == channels;
      for (int64_t c = 0; same && c < channels; ++c) {
        const float want = static_cast<float>(xs) * static_cast<float>(host_get_f(ws, ws.numel() == 1 ? 0 : c));
        same = static_cast<float>(host_get_f(s, s.numel() == 1 ? 0 : c)) == want;
      }
      if (same) {
        *out = b;
        out->shape = {channels};
        return true;
      }
    }
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(b.shape.size());
    bf = dequantize_tensor(b, *g.values[input(n, 1)].data, input(n, 2) >= 0 ? g.values[input(n, 2)].data.get() : nullptr,
                           axis);
  } else if (is_const(g, bias) && is_float(g.values[bias].dtype)) {
    bf = *g.values[bias].data;
  } else {
    return false;
  }
  if (bf.numel() != channels) return false;
  Tensor r(DType::Int32, {channels});
  for (int64_t c = 0; c < channels; ++c) {
    const double v = host_get_f(bf, c) / (xs * host_get_f(ws, ws.numel() == 1 ? 0 : c));
    if (!std::isfinite(v) || std::fabs(v) > 1 << 30) return false;
    r.data<int32_t>()[c] = static_cast<int32_t>(std::nearbyint(v));
  }
  *out = std::move(r);
  return true;
}

// Rewrites product node `pi` (Conv, Gemm or MatMul reading DQ outputs) and the Q after it into
// one integer node. Returns true when it did.
bool fuse_product(Graph& g, int pi) {
  Node& p = g.nodes[pi];
  const bool conv = p.op_type == "Conv", gemm = p.op_type == "Gemm";
  const int x = input(p, 0), w = input(p, 1), bias = input(p, 2);
  const int dx = dq_of(g, x), dw = dq_of(g, w);
  if (dx < 0 || dw < 0 || p.outputs.empty() || p.epilogue.residual >= 0 || p.epilogue.act) return false;
  const int xq = g.nodes[dx].inputs[0], wq = g.nodes[dw].inputs[0];
  if (!is_quantized_type(g.values[xq].dtype) || !is_quantized_type(g.values[wq].dtype)) return false;
  QParams qx, qw;
  if (!qparams(g, dx, g.values[xq].shape, false, &qx)) return false;
  const Shape& wshape = g.values[wq].shape;
  if (!qparams(g, dw, wshape, true, &qw)) return false;
  const bool w_const = is_const(g, wq);

  // Output channels (conv) / columns (gemm, matmul), and the axis a per-channel weight scale must
  // have for them.
  int64_t channels = 0, channel_axis = 0;
  bool trans_b = false;
  if (conv) {
    channels = wshape[0];
    channel_axis = 0;
  } else if (gemm) {
    if (p.attr_int("transA", 0) != 0 || p.attr_float("alpha", 1) != 1 || p.attr_float("beta", 1) != 1) return false;
    if (!w_const || g.values[xq].shape.size() != 2 || wshape.size() != 2) return false;
    trans_b = p.attr_int("transB", 0) != 0;
    channels = trans_b ? wshape[0] : wshape[1];
    channel_axis = trans_b ? 0 : 1;
  } else {
    if (bias >= 0 || wshape.size() < 2) return false;  // a fused MatMul bias is float
    channels = wshape.back();
    channel_axis = static_cast<int64_t>(wshape.size()) - 1;
    if (!w_const && qw.count > 1) return false;
    if (wshape.size() > 2 && qw.count > 1) return false;
  }
  if (qw.count > 1 && qw.axis != channel_axis) return false;

  Epilogue e;
  int act = -1;
  const int qn = quantized_consumer(g, p.outputs[0], &act, &e);
  if (qn < 0) return false;
  // Integer bias.
  Tensor b32;
  if (bias >= 0 && !int_bias(g, bias, scalar_f(g, qx.scale), *g.values[qw.scale].data, channels, &b32)) return false;

  QParams qy;
  qparams(g, qn, g.values[p.outputs[0]].shape, false, &qy);
  const int y = g.nodes[qn].outputs[0];
  const std::string base = p.name;
  const int xz = zero_point_value(g, qx, g.values[xq].dtype, base + "_x");
  const int wz = zero_point_value(g, qw, g.values[wq].dtype, base + "_w");
  const int yz = zero_point_value(g, qy, g.values[y].dtype, base + "_y");
  int wv = wq;
  if (trans_b) {
    // Gemm's W [N, K] as QLinearMatMul's B [K, N].
    const Tensor& t = *g.values[wq].data;
    const int64_t N = wshape[0], K = wshape[1];
    Tensor tt(t.dtype, {K, N});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) tt.bytes[static_cast<size_t>(k * N + n)] = t.bytes[static_cast<size_t>(n * K + k)];
    wv = g.add_constant(base + "_weights_kn", std::move(tt));
  }
  int bv = -1;
  if (bias >= 0) bv = g.add_constant(base + "_bias_int32", std::move(b32));

  Node& np = g.nodes[pi];  // add_value may not move nodes, but keep the reference fresh
  absorb(np, g.nodes[dx]);
  absorb(np, g.nodes[dw]);
  if (bias >= 0 && dq_of(g, bias) >= 0) absorb(np, g.nodes[dq_of(g, bias)]);
  if (act >= 0) {
    absorb(np, g.nodes[act]);
    g.nodes[act].removed = true;
  }
  absorb(np, g.nodes[qn]);
  g.nodes[qn].removed = true;
  np.op_type = conv ? "QLinearConv" : "QLinearMatMul";
  np.inputs = {xq, qx.scale, xz, wv, qw.scale, wz, qy.scale, yz};
  if (bv >= 0) np.inputs.push_back(bv);
  if (!conv) {
    for (const char* a : {"transA", "transB", "alpha", "beta"}) np.attrs.erase(a);
  }
  np.outputs = {y};
  np.epilogue = e;
  g.values[y].producer = pi;
  return true;
}

// Same constant per-tensor parameters (equal scales and zero points, an omitted zero point
// counting as 0).
bool same_params(const Graph& g, const QParams& a, const QParams& b) {
  if (a.count != 1 || b.count != 1) return false;
  if (static_cast<float>(scalar_f(g, a.scale)) != static_cast<float>(scalar_f(g, b.scale))) return false;
  const int64_t za = a.zero >= 0 ? host_get_i(*g.values[a.zero].data, 0) : 0;
  const int64_t zb = b.zero >= 0 ? host_get_i(*g.values[b.zero].data, 0) : 0;
  return za == zb;
}

// Ops that only move or select elements: DQ -> op -> Q with the same parameters computes the same
// 8-bit values as the op on the 8-bit input.
bool moves_data(const Node& n) {
  static const char* kOps[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Slice", "Pad"};
  for (const char* op : kOps)
    if (n.op_type == op) return n.op_type != "MaxPool" || n.outputs.size() < 2 || n.outputs[1] < 0;
  return false;
}

void ensure_contrib_opset(Graph& g) {
  if (g.opset("com.microsoft") < 1) g.opsets["com.microsoft"] = 1;
}

// Rewrites the float op before QuantizeLinear `qi` into an op on the 8-bit values. Returns true
// when it did.
bool fuse_into_quantized_op(Graph& g, int qi) {
  const Node& q = g.nodes[qi];
  const int yf = q.inputs[0];
  int pi = yf >= 0 ? g.values[yf].producer : -1;
  if (pi < 0 || g.nodes[pi].removed || !g.nodes[pi].domain.empty() || g.is_output(yf) || g.sole_reader(yf) != qi)
    return false;
  QParams qy;
  if (!qparams(g, qi, g.values[yf].shape, false, &qy)) return false;
  const int y = q.outputs[0];
  const DType t = g.values[y].dtype;
  if (!is_quantized_type(t)) return false;

  // An activation that commutes with a positive scale between an Add and the Q.
  int act = -1;
  Epilogue e;
  {
    Epilogue a;
    const Node& pn = g.nodes[pi];
    if (activation_of_node(g, pn, &a) && pn.inputs[0] >= 0 && a.act &&
        (std::string(a.act->name) == "Relu" || std::string(a.act->name) == "Clip" ||
         std::string(a.act->name) == "LeakyRelu")) {
      const int src = pn.inputs[0];
      const int pp = g.values[src].producer;
      if (pp >= 0 && !g.nodes[pp].removed && g.nodes[pp].op_type == "Add" && g.nodes[pp].domain.empty() &&
          !g.is_output(src) && g.sole_reader(src) == pi) {
        act = pi;
        e = a;
        pi = pp;
      }
    }
  }
  Node& p = g.nodes[pi];
  auto dq_in = [&](int slot, QParams* qp) {
    const int d = dq_of(g, input(p, static_cast<size_t>(slot)));
    if (d < 0) return -1;
    const int xq = g.nodes[d].inputs[0];
    if (g.values[xq].dtype != t || !qparams(g, d, g.values[xq].shape, false, qp)) return -1;
    return d;
  };
  const std::string base = p.name;
  if (act < 0 && moves_data(p)) {
    QParams qx;
    const int d = dq_in(0, &qx);
    if (d < 0 || !same_params(g, qx, qy)) return false;
    for (size_t k = 1; k < p.inputs.size(); ++k)
      if (p.inputs[k] >= 0 && !is_const(g, p.inputs[k])) return false;
    if (p.op_type == "Pad") {
      // The pad value, quantized with the tensor's parameters (0 becomes the zero point).
      double c = 0;
      if (g.opset() < 11) c = p.attr_float("value", 0.f);
      else if (p.inputs.size() > 2 && p.inputs[2] >= 0) c = host_get_f(*g.values[p.inputs[2]].data, 0);
      const float q = quantize_value(static_cast<float>(c), static_cast<float>(scalar_f(g, qy.scale)),
                                     qy.zero >= 0 ? static_cast<int>(host_get_i(*g.values[qy.zero].data, 0)) : 0, t);
      if (g.opset() < 11) {
        Attribute a;
        a.kind = Attribute::Kind::Float;
        a.f = q;
        g.nodes[pi].attrs["value"] = a;
      } else {
        Tensor v(t, {});
        host_set_i(v, 0, static_cast<int64_t>(q));
        const int cv = g.add_constant(base + "_pad_value", std::move(v));
        Node& pn = g.nodes[pi];
        if (pn.inputs.size() < 3) pn.inputs.resize(3, -1);
        pn.inputs[2] = cv;
      }
    }
    Node& pn = g.nodes[pi];
    absorb(pn, g.nodes[d]);
    pn.inputs[0] = g.nodes[d].inputs[0];
  } else if (p.op_type == "Add" || p.op_type == "Mul") {
    if (p.op_type == "Mul" && act >= 0) return false;
    QParams qa, qb;
    const int da = dq_in(0, &qa), db = dq_in(1, &qb);
    if (da < 0 || db < 0) return false;
    const int az = zero_point_value(g, qa, t, base + "_a"), bz = zero_point_value(g, qb, t, base + "_b"),
              yz = zero_point_value(g, qy, t, base + "_y");
    Node& pn = g.nodes[pi];
    absorb(pn, g.nodes[da]);
    absorb(pn, g.nodes[db]);
    pn.inputs = {g.nodes[da].inputs[0], qa.scale, az, g.nodes[db].inputs[0], qb.scale, bz, qy.scale, yz};
    pn.op_type = pn.op_type == "Add" ? "QLinearAdd" : "QLinearMul";
    pn.domain = "com.microsoft";
    ensure_contrib_opset(g);
  } else if (p.op_type == "Concat" && act < 0) {
    std::vector<int> ins{qy.scale, zero_point_value(g, qy, t, base + "_y")};
    std::vector<int> dqs;
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      QParams qk;
      const int d = dq_in(static_cast<int>(k), &qk);
      if (d < 0) return false;
      dqs.push_back(d);
      ins.insert(ins.end(), {g.nodes[d].inputs[0], qk.scale, -2 - static_cast<int>(k)});
    }
    // Zero points made only once every operand qualified (no constants left behind otherwise).
    for (size_t k = 0; k < dqs.size(); ++k) {
      QParams qk;
      qparams(g, dqs[k], g.values[g.nodes[dqs[k]].inputs[0]].shape, false, &qk);
      ins[4 + 3 * k] = zero_point_value(g, qk, t, base + "_x" + std::to_string(k));
    }
    Node& pn = g.nodes[pi];
    for (int d : dqs) absorb(pn, g.nodes[d]);
    pn.inputs = ins;
    pn.op_type = "QLinearConcat";
    pn.domain = "com.microsoft";
    ensure_contrib_opset(g);
  } else if (p.op_type == "GlobalAveragePool" || p.op_type == "Sigmoid" || p.op_type == "LeakyRelu") {
    QParams qx;
    const int d = dq_in(0, &qx);
    if (d < 0) return false;
    const int xz = zero_point_value(g, qx, t, base + "_x"), yz = zero_point_value(g, qy, t, base + "_y");
    Node& pn = g.nodes[pi];
    absorb(pn, g.nodes[d]);
    pn.inputs = {g.nodes[d].inputs[0], qx.scale, xz, qy.scale, yz};
    pn.op_type = "QLinear" + pn.op_type;
    pn.domain = "com.microsoft";
    ensure_contrib_opset(g);
  } else {
    return false;
  }
  Node& pn = g.nodes[pi];
  if (act >= 0) {
    absorb(pn, g.nodes[act]);
    g.nodes[act].removed = true;
    pn.epilogue = e;
  }
  absorb(pn, g.nodes[qi]);
  g.nodes[qi].removed = true;
  pn.outputs[0] = y;
  g.values[y].producer = pi;
  return true;
}

}  // namespace

int pass_fuse_qdq(Graph& g, std::string* detail) {
  int fused = 0, folded = 0, dropped = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.removed || !n.domain.empty()) continue;
    if (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul") continue;
    if (fuse_product(g, static_cast<int>(i))) ++fused;
  }
  int ops = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.removed || n.op_type != "QuantizeLinear" || !n.domain.empty() || n.inputs.empty()) continue;
    if (fuse_into_quantized_op(g, static_cast<int>(i))) ++ops;
  }
  // DequantizeLinear nodes that nothing reads any more go; the ones of constants become constants.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    if (n.removed || n.op_type != "DequantizeLinear" || !n.domain.empty() || n.outputs.empty()) continue;
    const int v = n.outputs[0];
    if (!g.is_read(v)) {
      n.removed = true;
      ++dropped;
      continue;
    }
    bool all_const = true;
    for (int in : n.inputs)
      if (in >= 0 && !is_const(g, in)) all_const = false;
    if (!all_const) continue;
    const OpDef* def = find_op(g, n);
    if (!def || !def->host_fn) continue;
    OpContext ctx(g, static_cast<int>(i));
    def->host_fn(ctx);
    g.nodes[i].removed = true;
    ++folded;
  }
  if (detail)
    *detail = std::to_string(fused) + " DequantizeLinear/Conv|Gemm|MatMul/QuantizeLinear chains made integer kernels, " +
              std::to_string(ops) + " other ops made to run on 8-bit values, " +
              std::to_string(folded) + " constant DequantizeLinear folded, " + std::to_string(dropped) +
              " unread DequantizeLinear removed";
  return fused + ops + folded + dropped;
}

}  // namespace oi
