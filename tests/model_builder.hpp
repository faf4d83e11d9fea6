// Builds small ONNX models in memory for tests: tests may see protobuf types; the runtime doesn't.
#pragma once

#include <cstring>
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

// Random float32 tensor with values in [lo, hi).
inline Tensor random_tensor(const std::vector<int64_t>& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::Float32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline Tensor make_tensor(DType dt, const std::vector<int64_t>& shape, const void* data) {
  Tensor t(dt, shape);
  std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

// Runs a built model once on the default device.
inline std::map<std::string, Tensor> run_model(const ModelBuilder& m, const std::map<std::string, Tensor>& feeds) {
  std::string b = m.bytes();
  ocl_infer::SessionOptions opt;
  auto s = ocl_infer::Session::from_memory(b.data(), b.size(), opt);
  return s.run(feeds);
}

// Max |a-b| / max(1, max|b|); checks shapes match first (returns +inf when they differ).
inline double rel_error(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape || a.dtype != b.dtype) return INFINITY;
  double mx = 1, err = 0;
  for (int64_t i = 0; i < b.numel(); ++i) mx = std::max<double>(mx, std::fabs(b.data<float>()[i]));
  for (int64_t i = 0; i < b.numel(); ++i)
    err = std::max<double>(err, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return err / mx;
}

}  // namespace testing_util
