#include "onnx/writer.hpp"

#include <set>

#include "onnx/onnx.pb.h"

namespace oi {

using ocl_infer::ModelError;

namespace {

void set_tensor(onnx::TensorProto* tp, const std::string& name, const Tensor& t) {
  if (t.dtype == DType::String || t.dtype == DType::Undefined)
    throw ModelError("cannot write constant '" + name + "': " + ocl_infer::dtype_name(t.dtype) + " tensors are not supported");
  tp->set_name(name);
  tp->set_data_type(static_cast<int>(t.dtype));
  for (int64_t d : t.shape) tp->add_dims(d);
  tp->set_raw_data(t.bytes.data(), t.bytes.size());
}

void set_value_info(onnx::ValueInfoProto* vi, const Value& v, DType t) {
  vi->set_name(v.name);
  if (t == DType::Undefined) return;  // a subgraph's input or output whose type comes from its node
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t));
  if (v.shape.empty() && !v.shape_known && v.dim_names.empty()) return;  // rank unknown
  auto* sh = tt->mutable_shape();
  for (size_t d = 0; d < v.shape.size(); ++d) {
    auto* dim = sh->add_dim();
    if (v.shape[d] >= 0) dim->set_dim_value(v.shape[d]);
    else if (d < v.dim_names.size() && !v.dim_names[d].empty()) dim->set_dim_param(v.dim_names[d]);
  }
}

void write_graph(onnx::GraphProto* gp, const Graph& g, const std::map<std::string, DType>& output_types, bool sub);

void set_attribute(onnx::AttributeProto* a, const std::string& name, const Attribute& at, const Node& n) {
  using A = onnx::AttributeProto;
  a->set_name(name);
  switch (at.kind) {
    case Attribute::Kind::Float: a->set_type(A::FLOAT); a->set_f(at.f); break;
    case Attribute::Kind::Int: a->set_type(A::INT); a->set_i(at.i); break;
    case Attribute::Kind::String: a->set_type(A::STRING); a->set_s(at.s); break;
    case Attribute::Kind::Tensor: a->set_type(A::TENSOR); set_tensor(a->mutable_t(), name, *at.t); break;
    case Attribute::Kind::Floats:
      a->set_type(A::FLOATS);
      for (float f : at.floats) a->add_floats(f);
      break;
    case Attribute::Kind::Ints:
      a->set_type(A::INTS);
      for (int64_t i : at.ints) a->add_ints(i);
      break;
    case Attribute::Kind::Strings:
      a->set_type(A::STRINGS);
      for (auto& s : at.strings) a->add_strings(s);
      break;
    case Attribute::Kind::Graph:
      if (at.g) {
        a->set_type(A::GRAPH);
        a->mutable_g()->set_name(n.name + "_" + name);
        write_graph(a->mutable_g(), *at.g, {}, true);
        break;
      }
      [[fallthrough]];
    default:
      throw ModelError("cannot write node '" + n.name + "' (" + n.op_type + "): attribute '" + name +
                       "' holds an unsupported kind");
  }
}


// A subgraph's captures are not written: its nodes name the enclosing scope's values directly, and
// the node that holds it lists only its formal inputs.
void write_graph(onnx::GraphProto* gp, const Graph& g, const std::map<std::string, DType>& output_types, bool sub) {
  std::set<int> written;
  for (int v : g.inputs) set_value_info(gp->add_input(), g.values[v], g.values[v].dtype);
  for (const Node& n : g.nodes) {
    if (n.removed) continue;
    auto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    const int formal = formal_inputs(n);
    for (int k = 0; k < static_cast<int>(n.inputs.size()); ++k) {
      const int in = n.inputs[k];
      if (k < formal) np->add_input(in >= 0 ? g.values[in].name : "");
      if (in >= 0 && g.values[in].data && g.values[in].producer < 0 && written.insert(in).second)
        set_tensor(gp->add_initializer(), g.values[in].name, *g.values[in].data);
    }
    for (int out : n.outputs) np->add_output(out >= 0 ? g.values[out].name : "");
    for (auto& [name, at] : n.attrs) set_attribute(np->add_attribute(), name, at, n);
  }
  for (int v : g.outputs) {
    const Value& val = g.values[v];
    DType t = val.dtype;
    if (auto it = output_types.find(val.name); it != output_types.end()) t = it->second;
    if (t == DType::Undefined && !sub) throw ModelError("cannot write graph output '" + val.name + "': its type is unknown");
    if (val.data && val.producer < 0 && written.insert(v).second) set_tensor(gp->add_initializer(), val.name, *val.data);
    set_value_info(gp->add_output(), val, t);
  }
}

}  // namespace

std::string save_onnx(const Graph& g, const std::map<std::string, DType>& output_types) {
  onnx::ModelProto mp;
  mp.set_ir_version(g.ir_version > 0 ? g.ir_version : 8);
  mp.set_producer_name("ocl-infer");
  mp.set_producer_version(ocl_infer::version());
  for (auto& [dom, ver] : g.opsets) {
    auto* os = mp.add_opset_import();
    os->set_domain(dom);
    os->set_version(ver);
  }
  auto* gp = mp.mutable_graph();
  gp->set_name("ocl_infer_graph");
  write_graph(gp, g, output_types, false);
  std::string out;
  if (!mp.SerializeToString(&out)) throw ModelError("the model is too large to serialize (protobuf's 2 GB limit)");
  return out;
}

}  // namespace oi
