// Builds small ONNX models in memory for tests: tests may see protobuf types; the runtime doesn't.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "onnx/onnx.pb.h"

namespace testing_util {

using ocl_infer::DType;
using ocl_infer::Tensor;

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    model_.set_producer_name("ocl-infer-tests");
  }
  // A graph input with a fixed shape (a dim of -1 becomes a symbolic "N").
  ModelBuilder& input(const std::string& name, DType t, const std::vector<int64_t>& shape) {
    auto* vi = model_.mutable_graph()->add_input();
    set_type(vi, t, shape);
    vi->set_name(name);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  // A constant (initializer).
  ModelBuilder& initializer(const std::string& name, const Tensor& t) {
    auto* tp = model_.mutable_graph()->add_initializer();
    tp->set_name(name);
    tp->set_data_type(static_cast<int>(t.dtype));
    for (auto d : t.shape) tp->add_dims(d);
    tp->set_raw_data(t.bytes.data(), t.bytes.size());
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(model_.graph().node_size()));
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *n;
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& proto() { return model_; }
  onnx::ModelProto proto_copy() const { return model_; }

 private:
  static void set_type(onnx::ValueInfoProto* vi, DType t, const std::vector<int64_t>& shape) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int>(t));
    auto* sh = tt->mutable_shape();
    for (auto d : shape) {
      auto* dim = sh->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

// Attribute helpers.
inline void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

// The precision the op-family suites run in: OCL_INFER_TEST_PRECISION=fp16 (ctest registers each
// suite a second time with it) makes
//   - random_tensor return float16-representable values, so that the float32 references see
//     exactly what the device sees,
//   - run_model/open_session run the model with Precision::Float16, every float32 graph input
//     and output passing through Cast(float16) -> Cast(float32): the op under test then reads and
//     writes float16 storage (graph inputs and outputs themselves keep float32),
//   - rel_error allow each element one float16 rounding of the reference (2^-11 |ref| + 2^-24) on
//     top of the suite's float32 tolerance: with float32 arithmetic inside the kernels, rounding
//     the stored output is the only error fp16 storage adds to one op on representable inputs.
//     (Tests of chains that round intermediate values state their own tolerances.)
inline bool fp16_mode() {
  static const bool on = [] {
    const char* e = std::getenv("OCL_INFER_TEST_PRECISION");
    return e && std::string(e) == "fp16";
  }();
  return on;
}

// `v` rounded to the nearest float16 (as a float).
inline float to_half(float v) { return ocl_infer::half_to_float(ocl_infer::float_to_half(v)); }

// The most one float16 rounding of `v` can move it: half an ulp (2^-11 |v|), or half the smallest
// subnormal step below float16's normal range (bounded by 2^-24).
inline double half_rounding(double v) { return std::ldexp(std::fabs(v), -11) + std::ldexp(1.0, -24); }

// fp16 mode runs every other combination of a suite's case loops (`k` counts them), alternating
// so that every case and every path still runs in some combination: the float16 paths are the
// same macros in every kernel shape, and each combination costs a program build (CI time).
inline bool fp16_sampled_out(int k) { return fp16_mode() && k % 2 != 0; }

// Random float32 tensor with values in [lo, hi) (float16-representable in fp16 mode).
inline Tensor random_tensor(const std::vector<int64_t>& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::Float32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = d(rng);
    if (fp16_mode()) v = to_half(v);
    t.data<float>()[i] = v;
  }
  return t;
}

inline Tensor make_tensor(DType dt, const std::vector<int64_t>& shape, const void* data) {
  Tensor t(dt, shape);
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data, t.bytes.size());  // (data may be null when empty)
  return t;
}

// The element type `name` has in graph `g`, followed through its producers: Cast gives its `to`,
// ops that produce integers or booleans give Undefined (never wrapped), the rest keep the type of
// their data input. Test-only; a wrong answer shows as a dtype mismatch, never as a silent pass.
inline int traced_dtype(const onnx::GraphProto& g, const std::string& name, int depth = 0) {
  if (depth > 200) return 0;
  for (auto& in : g.input())
    if (in.name() == name) return in.type().tensor_type().elem_type();
  for (auto& t : g.initializer())
    if (t.name() == name) return t.data_type();
  static const std::set<std::string> not_float = {
      "Shape", "Size", "ArgMax", "ArgMin", "NonZero", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf", "Constant", "ConstantOfShape",
      "TopK", "Unique", "OneHot", "EyeLike", "RandomNormal", "RandomUniform", "Multinomial"};
  for (auto& n : g.node())
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k) != name) continue;
      if (not_float.count(n.op_type()) || (n.op_type() == "MaxPool" && k == 1)) return 0;
      if (n.op_type() == "Cast") {
        for (auto& a : n.attribute())
          if (a.name() == "to") return static_cast<int>(a.i());
        return 0;
      }
      const int data = n.op_type() == "Where" ? 1 : 0;
      return n.input_size() > data ? traced_dtype(g, n.input(data), depth + 1) : 0;
    }
  return 0;
}

// The model's bytes as the current precision runs them (see fp16_mode). The input casts come
// first in the node list, so the op under test stays where it was relative to its inputs.
inline std::string model_bytes(const ModelBuilder& m) {
  if (!fp16_mode()) return m.bytes();
  onnx::ModelProto p = m.proto_copy();
  auto* g = p.mutable_graph();
  const int f32 = static_cast<int>(DType::Float32);
  std::vector<bool> float_out;
  for (auto& o : g->output())
    float_out.push_back((o.type().tensor_type().elem_type() ? o.type().tensor_type().elem_type()
                                                            : traced_dtype(*g, o.name())) == f32);
  std::map<std::string, std::string> renamed;  // graph input -> its float16 round trip
  for (auto& in : g->input())
    if (in.type().tensor_type().elem_type() == f32) renamed[in.name()] = in.name() + "__fp16_in";
  for (auto& n : *g->mutable_node())
    for (auto& i : *n.mutable_input())
      if (renamed.count(i)) i = renamed[i];
  google::protobuf::RepeatedPtrField<onnx::NodeProto> head, tail;
  auto cast_pair = [&](google::protobuf::RepeatedPtrField<onnx::NodeProto>& list, const std::string& from,
                       const std::string& to) {
    for (int k = 0; k < 2; ++k) {
      auto* n = list.Add();
      n->set_op_type("Cast");
      n->set_name("fp16_test_cast_" + to + std::to_string(k));
      n->add_input(k == 0 ? from : to + "__half");
      n->add_output(k == 0 ? to + "__half" : to);
      attr_i(*n, "to", k == 0 ? static_cast<int>(DType::Float16) : f32);
    }
  };
  for (auto& [in, inner] : renamed) cast_pair(head, in, inner);
  for (int k = 0; k < g->output_size(); ++k) {
    if (!float_out[k]) continue;
    const std::string out = g->output(k).name(), inner = out + "__fp16_out";
    for (auto& n : *g->mutable_node()) {
      for (auto& o : *n.mutable_output())
        if (o == out) o = inner;
      for (auto& i : *n.mutable_input())
        if (i == out) i = inner;
    }
    cast_pair(tail, inner, out);
  }
  head.MergeFrom(g->node());
  head.MergeFrom(tail);
  g->mutable_node()->Swap(&head);
  return p.SerializeAsString();
}

// A session on the model in the current precision.
// OCL_INFER_TEST_NO_MEMORY_PLAN=1 gives every tensor its own buffer (tools/oclgrind_check.sh: an
// access past a tensor's end is then outside any allocation, where oclgrind sees it).
inline ocl_infer::Session open_session(const ModelBuilder& m, ocl_infer::SessionOptions opt = {}) {
  const std::string b = model_bytes(m);
  if (fp16_mode()) opt.precision = ocl_infer::Precision::Float16;
  if (const char* e = std::getenv("OCL_INFER_TEST_NO_MEMORY_PLAN"); e && std::string(e) == "1") opt.plan_memory = false;
  // OCL_INFER_TEST_VERBOSE=1: the session log (device, compilation, kernel build warnings) on stderr.
  if (const char* e = std::getenv("OCL_INFER_TEST_VERBOSE"); e && std::string(e) == "1" && !opt.log)
    opt.log = [](const std::string& line) { std::fprintf(stderr, "ocl-infer: %s\n", line.c_str()); };
  return ocl_infer::Session::from_memory(b.data(), b.size(), opt);
}

// The device the tests run on (the default one: $OCL_INFER_DEVICE, else the first GPU or
// accelerator, else the first CPU device), as an Identity session finds it.
inline const ocl_infer::DeviceInfo& test_device() {
  static const ocl_infer::DeviceInfo d = [] {
    ModelBuilder m;
    m.input("x", ocl_infer::DType::Float32, {1}).output("y");
    m.node("Identity", {"x"}, {"y"});
    return open_session(m).device();
  }();
  return d;
}

// Runs a built model once on the default device.
inline std::map<std::string, Tensor> run_model(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds) {
  return open_session(m).run(feeds);
}

// Max |a-b| / max(1, max|b|); checks shapes match first (returns +inf when they differ). In fp16
// mode each element's error is counted beyond one float16 rounding of b.
inline double rel_error(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape || a.dtype != b.dtype) return INFINITY;
  double mx = 1, err = 0;
  for (int64_t i = 0; i < b.numel(); ++i) mx = std::max<double>(mx, std::fabs(b.data<float>()[i]));
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double want = b.data<float>()[i], got = a.data<float>()[i];
    double e = std::fabs(got - want);
    if (std::isnan(got) != std::isnan(want)) return INFINITY;
    if (fp16_mode()) e = std::max(0.0, e - half_rounding(want));
    err = std::max(err, e);
  }
  return err / mx;
}

}  // namespace testing_util
