// Post-training static quantization (ocl_infer::quantize_model): calibrate on the runtime, then
// rewrite the model's own Graph into the QDQ form ONNX Runtime's quantizer writes, and serialize
// it. What gets quantized:
//   - the activations read or written by Conv, Gemm, MatMul, Add, Concat, MaxPool,
//     GlobalAveragePool and the data movers (Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Pad),
//     uint8 asymmetric (or int8 symmetric) per tensor; a Relu/Clip right after a Conv/Gemm/MatMul/
//     Add moves the quantization point to its own output (fuse_qdq then applies it in the integer
//     kernel's epilogue), and the reshaping ops and MaxPool give their output their input's
//     parameters (they then run on the 8-bit values);
//   - the constant weights of Conv, Gemm and MatMul: int8 symmetric, per output channel;
//   - their biases: int32 with scale x_scale * w_scale[c], as quantizers write them.
// Every consumer of a quantized tensor reads its DequantizeLinear, so the written model is valid
// QDQ whatever the runtime fuses.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "ocl_infer/ocl_infer.hpp"
#include "onnx/loader.hpp"
#include "onnx/writer.hpp"
#include "runtime/ir/host_math.hpp"

namespace ocl_infer {

namespace {

using oi::Graph;
using oi::Node;
using oi::Value;

bool in(const std::string& s, std::initializer_list<const char*> list) {
  for (const char* x : list)
    if (s == x) return true;
  return false;
}

bool is_quantized_op(const Node& n) {
  return in(n.op_type, {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
                        "ConvInteger", "MatMulInteger", "QLinearAdd", "QLinearMul", "QLinearConcat",
                        "QLinearGlobalAveragePool", "QLinearSigmoid", "QLinearLeakyRelu"});
}

bool is_product(const Node& n) { return n.domain.empty() && in(n.op_type, {"Conv", "Gemm", "MatMul"}); }
bool moves_data(const Node& n) {
  return n.domain.empty() && in(n.op_type, {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Pad"});
}
bool quantizable(const Node& n) {
  return n.domain.empty() && (is_product(n) || moves_data(n) ||
                              in(n.op_type, {"Add", "Concat", "GlobalAveragePool", "Relu", "Clip"}));
}
bool is_activation(const Node& n) { return n.domain.empty() && in(n.op_type, {"Relu", "Clip"}); }

// Inputs of node n that carry activations to quantize (not shapes, axes or bounds).
std::vector<int> activation_slots(const Node& n) {
  if (n.op_type == "Add" || n.op_type == "Concat") {
    std::vector<int> all;
    for (size_t k = 0; k < n.inputs.size(); ++k) all.push_back(static_cast<int>(k));
    return all;
  }
  if (n.op_type == "MatMul") return {0, 1};
  return {0};
}

struct Stats {
  float min = INFINITY, max = -INFINITY;
  std::vector<double> hist;  // percentile: over [min, max]; entropy: |x| over [0, max|x|]
  bool seen = false;
};

constexpr int kBins = 2048;

void add_minmax(Stats& s, const Tensor& t) {
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isnan(p[i])) continue;
    s.min = std::min(s.min, p[i]);
    s.max = std::max(s.max, p[i]);
  }
  s.seen = true;
}

void add_histogram(Stats& s, const Tensor& t, bool absolute) {
  if (s.hist.empty()) s.hist.assign(kBins, 0.0);
  const float* p = t.data<float>();
  const double lo = absolute ? 0.0 : s.min;
  const double hi = absolute ? std::max(std::fabs(s.min), std::fabs(s.max)) : s.max;
  const double width = hi > lo ? (hi - lo) / kBins : 1.0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(p[i])) continue;
    const double v = absolute ? std::fabs(p[i]) : p[i];
    const int b = std::min(kBins - 1, std::max(0, static_cast<int>((v - lo) / width)));
    s.hist[static_cast<size_t>(b)] += 1;
  }
}

// The range that keeps `percentile` % of the values on each side.
void percentile_range(const Stats& s, double percentile, float* lo, float* hi) {
  double total = 0;
  for (double h : s.hist) total += h;
  const double width = (static_cast<double>(s.max) - s.min) / kBins;
  const double tail = total * (1.0 - percentile / 100.0);
  double acc = 0;
  int b = 0;
  for (; b < kBins && acc + s.hist[static_cast<size_t>(b)] <= tail; ++b) acc += s.hist[static_cast<size_t>(b)];
  *lo = static_cast<float>(s.min + b * width);
  acc = 0;
  b = kBins - 1;
  for (; b >= 0 && acc + s.hist[static_cast<size_t>(b)] <= tail; --b) acc += s.hist[static_cast<size_t>(b)];
  *hi = static_cast<float>(s.min + (b + 1) * width);
}

// TensorRT's entropy calibration on the |x| histogram: the threshold whose clipped distribution
// loses the least information (KL divergence) when quantized to 128 levels.
float entropy_threshold(const Stats& s) {
  // The first bin holds the exact zeros (half of a ReLU output), which every range represents
  // exactly: left in, they dominate both distributions and drive the threshold towards 0.
  std::vector<double> h = s.hist;
  if (!h.empty()) h[0] = 0;
  const double amax = std::max(std::fabs(s.min), std::fabs(s.max));
  const int levels = 128;
  double best_kl = INFINITY;
  int best = kBins;
  std::vector<double> p, q;
  for (int i = levels; i <= kBins; ++i) {
    p.assign(h.begin(), h.begin() + i);
    for (int k = i; k < kBins; ++k) p[static_cast<size_t>(i - 1)] += h[static_cast<size_t>(k)];
    q.assign(static_cast<size_t>(i), 0.0);
    const double chunk = static_cast<double>(i) / levels;
    for (int j = 0; j < levels; ++j) {
      const int a = static_cast<int>(std::floor(j * chunk)), b = std::max(a + 1, static_cast<int>(std::floor((j + 1) * chunk)));
      double sum = 0;
      int nonzero = 0;
      for (int k = a; k < b && k < i; ++k) sum += h[static_cast<size_t>(k)], nonzero += h[static_cast<size_t>(k)] > 0;
      for (int k = a; k < b && k < i; ++k)
        if (h[static_cast<size_t>(k)] > 0) q[static_cast<size_t>(k)] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int k = 0; k < i; ++k) ps += p[static_cast<size_t>(k)], qs += q[static_cast<size_t>(k)];
    if (ps <= 0 || qs <= 0) continue;
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      const double pk = p[static_cast<size_t>(k)] / ps, qk = q[static_cast<size_t>(k)] / qs;
      if (pk <= 0) continue;
      kl += qk > 0 ? pk * std::log(pk / qk) : pk * 30.0;  // an empty quantized bin costs a lot
    }
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return static_cast<float>((best + 0.5) * amax / kBins);
}

struct QParam {
  float scale = 1;
  int zero = 0;
};

QParam activation_param(float lo, float hi, DType t) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  QParam q;
  if (t == DType::Int8) {
    const float amax = std::max(std::fabs(lo), std::fabs(hi));
    q.scale = amax > 0 ? amax / 127.0f : 1.0f;
    return q;
  }
  if (hi <= lo) return q;
  q.scale = (hi - lo) / 255.0f;
  q.zero = static_cast<int>(std::min(255.0f, std::max(0.0f, std::nearbyint(-lo / q.scale))));
  return q;
}

Tensor scalar_float(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// Appends constants, Q/DQ nodes and values to the graph being rewritten.
struct Rewriter {
  Graph& g;
  std::vector<Node>& out;
  std::set<std::string> names;

  int constant(const std::string& name, Tensor t) { return g.add_constant(unique(name), std::move(t)); }
  int value(const std::string& name, DType t) {
    const int v = g.add_value(unique(name));
    g.values[static_cast<size_t>(v)].dtype = t;
    return v;
  }
  std::string unique(const std::string& base) {
    std::string n = base;
    for (int k = 1; names.count(n) || g.find_value(n) >= 0; ++k) n = base + "_" + std::to_string(k);
    names.insert(n);
    return n;
  }
  void node(const std::string& op, const std::string& name, std::vector<int> ins, std::vector<int> outs,
            int64_t axis = -1) {
    Node n;
    n.op_type = op;
    n.name = unique(name);
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    if (axis >= 0) {
      oi::Attribute a;
      a.kind = oi::Attribute::Kind::Int;
      a.i = axis;
      n.attrs["axis"] = a;
    }
    out.push_back(std::move(n));
  }
};

}  // namespace

std::string quantize_model(const std::string& model_path, const std::vector<std::map<std::string, Tensor>>& calibration,
                           const QuantizeOptions& options, QuantizeReport* report) {
  if (calibration.empty()) throw InputError("quantization needs at least one calibration input");
  if (!in(options.method, {"minmax", "percentile", "entropy"}))
    throw InputError("unknown calibration method '" + options.method + "' (minmax, percentile or entropy)");
  if (options.method == "percentile" && !(options.percentile > 50 && options.percentile <= 100))
    throw InputError("percentile must be in (50, 100], got " + std::to_string(options.percentile));
  if (options.activation_type != DType::UInt8 && options.activation_type != DType::Int8)
    throw InputError("activations can be quantized to uint8 or int8 only");

  Graph g = oi::load_onnx_file(model_path);
  for (const Node& n : g.nodes)
    if (is_quantized_op(n))
      throw ModelError("'" + model_path + "' is already quantized (node '" + n.name + "' is " + n.op_type +
                       "); run it as it is");
  std::set<std::string> exclude(options.exclude_nodes.begin(), options.exclude_nodes.end());
  QuantizeReport rep;
  for (const Node& n : g.nodes)
    if (exclude.count(n.name)) rep.excluded.push_back(n.name);
  for (const std::string& e : options.exclude_nodes)
    if (std::find(rep.excluded.begin(), rep.excluded.end(), e) == rep.excluded.end())
      throw InputError("--exclude names node '" + e + "', which the model does not have");

  // The calibration session runs every ONNX node on its own, so every value can be fetched.
  SessionOptions so = options.session;
  so.optimization_level = 0;
  so.precision = Precision::Float32;
  Session session = Session::from_file(model_path, so);
  const auto first = session.run(calibration[0]);
  std::set<std::string> fetchable;
  for (const ExecutedNode& e : session.executed_nodes())
    for (const std::string& o : e.outputs) fetchable.insert(o);
  std::map<std::string, DType> output_types;
  for (const auto& [name, t] : first) {
    output_types[name] = t.dtype;
    // The written model declares the outputs' ranks too (open dims keep their names).
    const int v = g.find_value(name);
    if (v >= 0 && g.values[static_cast<size_t>(v)].shape.empty()) {
      Value& val = g.values[static_cast<size_t>(v)];
      val.shape = t.shape;
      val.dim_names.resize(t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (!val.dim_names[d].empty()) val.shape[d] = -1;
    }
  }

  // Which nodes and tensors.
  const size_t nv = g.values.size();
  std::vector<bool> qnode(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) qnode[i] = quantizable(g.nodes[i]) && !exclude.count(g.nodes[i].name);
  auto readers = [&](int v) {
    std::vector<int> r;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int x : g.nodes[i].inputs)
        if (x == v) r.push_back(static_cast<int>(i));
    return r;
  };
  // A product/Add output read only by a fused activation is quantized after the activation.
  auto feeds_activation = [&](int v) {
    const int p = g.values[static_cast<size_t>(v)].producer;
    if (p < 0 || !qnode[static_cast<size_t>(p)] || !(is_product(g.nodes[static_cast<size_t>(p)]) || g.nodes[static_cast<size_t>(p)].op_type == "Add"))
      return false;
    if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return false;
    auto r = readers(v);
    return r.size() == 1 && qnode[static_cast<size_t>(r[0])] && is_activation(g.nodes[static_cast<size_t>(r[0])]) &&
           g.nodes[static_cast<size_t>(r[0])].inputs[0] == v;
  };
  std::vector<bool> want(nv, false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!qnode[i]) continue;
    const Node& n = g.nodes[i];
    for (int k : activation_slots(n))
      if (k < static_cast<int>(n.inputs.size()) && n.inputs[static_cast<size_t>(k)] >= 0)
        want[static_cast<size_t>(n.inputs[static_cast<size_t>(k)])] = true;
    if (!n.outputs.empty() && n.outputs[0] >= 0) want[static_cast<size_t>(n.outputs[0])] = true;
  }
  std::vector<std::string> fetch;
  for (size_t v = 0; v < nv; ++v) {
    if (!want[v]) continue;
    const Value& val = g.values[v];
    const bool input = std::find(g.inputs.begin(), g.inputs.end(), static_cast<int>(v)) != g.inputs.end();
    if (val.data || feeds_activation(static_cast<int>(v)) || (!input && !fetchable.count(val.name)) ||
        (input && val.dtype != DType::Float32)) {
      want[v] = false;
      continue;
    }
    if (!input) fetch.push_back(val.name);
  }

  // Calibration: min/max, then (percentile, entropy) a histogram within them.
  std::map<std::string, Stats> stats;
  const bool hist = options.method != "minmax";
  const size_t total = calibration.size() * (hist ? 2 : 1);
  RunOptions ro;
  ro.fetch = fetch;
  for (int pass = 0; pass < (hist ? 2 : 1); ++pass)
    for (size_t c = 0; c < calibration.size(); ++c) {
      auto outs = session.run(calibration[c], ro);
      for (size_t v = 0; v < nv; ++v) {
        if (!want[v]) continue;
        const std::string& name = g.values[v].name;
        auto it = outs.find(name);
        const Tensor* t = it != outs.end() ? &it->second : nullptr;
        if (!t) {
          auto ci = calibration[c].find(name);
          if (ci != calibration[c].end()) t = &ci->second;
        }
        if (!t || t->dtype != DType::Float32) {
          want[v] = false;
          continue;
        }
        if (pass == 0) add_minmax(stats[name], *t);
        else add_histogram(stats[name], *t, options.method == "entropy");
      }
      if (options.progress) options.progress(pass * calibration.size() + c + 1, total);
    }

  // Parameters per tensor, in graph order so that data movers inherit from their input.
  std::vector<QParam> param(nv);
  std::vector<bool> has_param(nv, false);
  auto set_range = [&](int v) {
    const Stats& s = stats[g.values[static_cast<size_t>(v)].name];
    float lo = s.min, hi = s.max;
    if (!s.seen || !std::isfinite(lo) || !std::isfinite(hi)) lo = hi = 0;
    if (options.method == "percentile" && !s.hist.empty()) percentile_range(s, options.percentile, &lo, &hi);
    if (options.method == "entropy" && !s.hist.empty()) {
      const float t = entropy_threshold(s);
      lo = std::max(lo, -t);
      hi = std::min(hi, t);
    }
    param[static_cast<size_t>(v)] = activation_param(lo, hi, options.activation_type);
    has_param[static_cast<size_t>(v)] = true;
    rep.activations.push_back({g.values[static_cast<size_t>(v)].name, s.min, s.max, param[static_cast<size_t>(v)].scale,
                               param[static_cast<size_t>(v)].zero});
  };
  for (int v : g.inputs)
    if (want[static_cast<size_t>(v)]) set_range(v);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (int x : n.inputs)
      if (x >= 0 && want[static_cast<size_t>(x)] && !has_param[static_cast<size_t>(x)]) set_range(x);
    if (n.outputs.empty() || n.outputs[0] < 0 || !want[static_cast<size_t>(n.outputs[0])]) continue;
    const int y = n.outputs[0], x = n.inputs.empty() ? -1 : n.inputs[0];
    if (qnode[i] && moves_data(n) && x >= 0 && has_param[static_cast<size_t>(x)]) {
      param[static_cast<size_t>(y)] = param[static_cast<size_t>(x)];
      has_param[static_cast<size_t>(y)] = true;
      const Stats& s = stats[g.values[static_cast<size_t>(y)].name];
      rep.activations.push_back({g.values[static_cast<size_t>(y)].name, s.min, s.max, param[static_cast<size_t>(y)].scale,
                                 param[static_cast<size_t>(y)].zero});
    } else {
      set_range(y);
    }
  }

  // Rewrite.
  std::vector<Node> nodes;
  Rewriter rw{g, nodes, {}};
  std::vector<int> dq_of(nv, -1);  // quantized tensor -> its DequantizeLinear output
  const DType at = options.activation_type;
  auto quantize_tensor = [&](int v, int source) {
    // source: the value holding the float data (v itself, or a renamed producer output).
    const std::string name = g.values[static_cast<size_t>(v)].name;
    const QParam p = param[static_cast<size_t>(v)];
    const int s = rw.constant(name + "_scale", scalar_float(p.scale));
    Tensor zt(at, {});
    oi::host_set_i(zt, 0, p.zero);
    const int z = rw.constant(name + "_zero_point", zt);
    const int q = rw.value(name + "_quantized", at);
    rw.node("QuantizeLinear", name + "_QuantizeLinear", {source, s, z}, {q});
    const bool is_out = std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
    const int d = is_out ? v : rw.value(name + "_dequantized", DType::Float32);
    rw.node("DequantizeLinear", name + "_DequantizeLinear", {q, s, z}, {d});
    dq_of[static_cast<size_t>(v)] = d;
  };
  for (int v : g.inputs)
    if (want[static_cast<size_t>(v)]) quantize_tensor(v, v);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    const std::vector<int> original_inputs = n.inputs;
    for (int& x : n.inputs)
      if (x >= 0 && dq_of[static_cast<size_t>(x)] >= 0) x = dq_of[static_cast<size_t>(x)];
    if (qnode[i] && is_product(n) && n.inputs.size() >= 2 && n.inputs[1] >= 0) {
      const Value wv = g.values[static_cast<size_t>(n.inputs[1])];  // a copy: constants are added below
      const bool gemm = n.op_type == "Gemm";
      const bool ok_gemm = !gemm || (n.attr_int("transA", 0) == 0 && n.attr_float("alpha", 1) == 1);
      if (wv.data && wv.dtype == DType::Float32 && wv.shape.size() >= 2 && ok_gemm &&
          (n.op_type != "MatMul" || wv.shape.size() == 2)) {
        const Tensor& w = *wv.data;
        int64_t axis = 0;
        if (gemm) axis = n.attr_int("transB", 0) ? 0 : 1;
        if (n.op_type == "MatMul") axis = 1;
        const int64_t channels = options.per_channel ? w.shape[static_cast<size_t>(axis)] : 1;
        int64_t inner = 1;
        for (size_t d = static_cast<size_t>(axis) + 1; d < w.shape.size(); ++d) inner *= w.shape[d];
        const int64_t outer_len = w.shape[static_cast<size_t>(axis)];
        std::vector<float> amax(static_cast<size_t>(channels), 0.0f);
        const float* wp = w.data<float>();
        auto channel_of = [&](int64_t k) { return options.per_channel ? (k / inner) % outer_len : 0; };
        for (int64_t k = 0; k < w.numel(); ++k)
          amax[static_cast<size_t>(channel_of(k))] = std::max(amax[static_cast<size_t>(channel_of(k))], std::fabs(wp[k]));
        Tensor scale(DType::Float32, options.per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{});
        for (int64_t c = 0; c < channels; ++c)
          scale.data<float>()[c] = amax[static_cast<size_t>(c)] > 0 ? amax[static_cast<size_t>(c)] / 127.0f : 1.0f;
        Tensor wq(DType::Int8, w.shape);
        for (int64_t k = 0; k < w.numel(); ++k) {
          const float q = std::nearbyint(wp[k] / scale.data<float>()[channel_of(k)]);
          wq.data<int8_t>()[k] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, q)));
        }
        Tensor wz(DType::Int8, scale.shape);
        const std::string base = wv.name;
        const int qv = rw.constant(base + "_quantized", wq), sv = rw.constant(base + "_scale", scale),
                  zv = rw.constant(base + "_zero_point", wz);
        const int dv = rw.value(base + "_dequantized", DType::Float32);
        rw.node("DequantizeLinear", base + "_DequantizeLinear", {qv, sv, zv}, {dv}, options.per_channel ? axis : -1);
        n.inputs[1] = dv;
        ++rep.weights_quantized;
        // Bias: int32 at scale x_scale * w_scale[c], when x is quantized.
        const int x = original_inputs[0];
        const bool gemm_bias_ok = !gemm || n.attr_float("beta", 1) == 1;
        if (n.inputs.size() >= 3 && n.inputs[2] >= 0 && x >= 0 && has_param[static_cast<size_t>(x)] &&
            dq_of[static_cast<size_t>(x)] >= 0 && gemm_bias_ok && n.op_type != "MatMul") {
          const Value bv = g.values[static_cast<size_t>(n.inputs[2])];
          const int64_t cols = w.shape[static_cast<size_t>(axis)];
          if (bv.data && bv.dtype == DType::Float32 && bv.data->numel() == cols) {
            const float xs = param[static_cast<size_t>(x)].scale;
            Tensor bq(DType::Int32, {cols}), bs(DType::Float32, {cols});
            for (int64_t c = 0; c < cols; ++c) {
              const float s = xs * scale.data<float>()[options.per_channel ? c : 0];
              bs.data<float>()[c] = s;
              const double q = std::nearbyint(static_cast<double>(bv.data->data<float>()[c]) / s);
              bq.data<int32_t>()[c] = static_cast<int32_t>(std::min(2147483647.0, std::max(-2147483647.0, q)));
            }
            const std::string bn = bv.name;
            const int bqv = rw.constant(bn + "_quantized", bq), bsv = rw.constant(bn + "_scale", bs),
                      bzv = rw.constant(bn + "_zero_point", Tensor(DType::Int32, {cols}));
            const int bdv = rw.value(bn + "_dequantized", DType::Float32);
            rw.node("DequantizeLinear", bn + "_DequantizeLinear", {bqv, bsv, bzv}, {bdv}, 0);
            n.inputs[2] = bdv;
            ++rep.biases_quantized;
          }
        }
      }
    }
    if (!qnode[i] && !in(n.op_type, {"Constant", "ConstantOfShape", "Shape", "Identity"}))
      rep.float_nodes.push_back(n.name + " (" + n.op_type + ")");
    // Outputs to quantize: a graph output keeps its name on the DequantizeLinear; the node then
    // writes a renamed float value.
    for (int& o : n.outputs)
      if (o >= 0 && want[static_cast<size_t>(o)] && has_param[static_cast<size_t>(o)] &&
          std::find(g.outputs.begin(), g.outputs.end(), o) != g.outputs.end()) {
        const std::string name = g.values[static_cast<size_t>(o)].name;
        o = rw.value(name + "_float", DType::Float32);
      }
    nodes.push_back(n);
    for (size_t k = 0; k < g.nodes[i].outputs.size(); ++k) {
      const int o = g.nodes[i].outputs[k];
      if (o < 0 || !want[static_cast<size_t>(o)] || !has_param[static_cast<size_t>(o)]) continue;
      quantize_tensor(o, n.outputs[k]);
    }
  }
  g.nodes = std::move(nodes);
  g.compact();
  const std::string bytes = oi::save_onnx(g, output_types);
  rep.calibration_inputs = calibration.size();
  if (report) *report = std::move(rep);
  return bytes;
}

bool model_is_quantized(const std::string& path) {
  const Graph g = oi::load_onnx_file(path);
  return std::any_of(g.nodes.begin(), g.nodes.end(), is_quantized_op);
}

}  // namespace ocl_infer
