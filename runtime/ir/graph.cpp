#include "runtime/ir/graph.hpp"

#include <algorithm>

namespace oi {

using ocl_infer::ModelError;

namespace {
[[noreturn]] void bad_kind(const Node& n, const std::string& a, const char* want) {
  throw ModelError("node '" + n.name + "' (" + n.op_type + "): attribute '" + a + "' is not " +
                   want);
}
}  // namespace

int64_t Node::attr_int(const std::string& a, int64_t def) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::Int) bad_kind(*this, a, "an int");
  return it->second.i;
}

float Node::attr_float(const std::string& a, float def) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return def;
  if (it->second.kind == Attribute::Kind::Int) return static_cast<float>(it->second.i);
  if (it->second.kind != Attribute::Kind::Float) bad_kind(*this, a, "a float");
  return it->second.f;
}

std::string Node::attr_string(const std::string& a, const std::string& def) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::String) bad_kind(*this, a, "a string");
  return it->second.s;
}

std::vector<int64_t> Node::attr_ints(const std::string& a, const std::vector<int64_t>& def) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return def;
  if (it->second.kind == Attribute::Kind::Int) return {it->second.i};
  if (it->second.kind != Attribute::Kind::Ints) bad_kind(*this, a, "a list of ints");
  return it->second.ints;
}

std::vector<float> Node::attr_floats(const std::string& a, const std::vector<float>& def) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return def;
  if (it->second.kind == Attribute::Kind::Float) return {it->second.f};
  if (it->second.kind != Attribute::Kind::Floats) bad_kind(*this, a, "a list of floats");
  return it->second.floats;
}

const Tensor* Node::attr_tensor(const std::string& a) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return nullptr;
  if (it->second.kind != Attribute::Kind::Tensor) bad_kind(*this, a, "a tensor");
  return it->second.t.get();
}

const Graph* first_subgraph(const Node& n) {
  for (auto& [name, a] : n.attrs)
    if (a.kind == Attribute::Kind::Graph && a.g) return a.g.get();
  return nullptr;
}

int formal_inputs(const Node& n) {
  const Graph* sub = first_subgraph(n);
  return static_cast<int>(n.inputs.size()) - (sub ? static_cast<int>(sub->captures.size()) : 0);
}

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
  return it == opsets.end() ? 0 : it->second;
}

int Graph::find_value(const std::string& name) const {
  auto it = std::find_if(values.begin(), values.end(),
                         [&](const Value& v) { return v.name == name; });
  return it == values.end() ? -1 : static_cast<int>(it - values.begin());
}

int Graph::add_value(const std::string& name) {
  values.push_back(Value{});
  values.back().name = name;
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_constant(const std::string& name, Tensor t) {
  const int id = add_value(name);
  Value& v = values.back();
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.shape_known = true;
  v.data = std::make_shared<const Tensor>(std::move(t));
  return id;
}

void Graph::compact() {
  std::vector<Node> kept;
  for (auto& n : nodes)
    if (!n.removed) kept.push_back(std::move(n));
  nodes = std::move(kept);
  for (auto& v : values) v.producer = -1;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int o : nodes[i].outputs)
      if (o >= 0) values[o].producer = static_cast<int>(i);
}

std::vector<Graph::Use> Graph::uses(int v) const {
  std::vector<Use> r;
  if (v < 0) return r;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.removed) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] == v) r.push_back({static_cast<int>(i), static_cast<int>(k)});
    if (n.epilogue.residual == v) r.push_back({static_cast<int>(i), kResidual});
  }
  return r;
}

bool Graph::is_output(int v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

bool Graph::is_read(int v) const {
  return is_output(v) || !uses(v).empty();
}

int Graph::sole_reader(int v) const {
  if (is_output(v)) return -1;
  auto u = uses(v);
  return u.size() == 1 ? u[0].node : -1;
}

std::string covered_ops(const Node& n) {
  if (n.covers.empty()) return n.op_type;
  std::string s;
  for (auto& [name, op] : n.covers) s += (s.empty() ? "" : "+") + op;
  return s;
}

int64_t numel(const Shape& s) {
  // Saturates instead of overflowing; a 0 dim gives 0 (negative dims mean "unknown": -1).
  int64_t n = 1;
  bool overflow = false;
  for (auto d : s) {
    if (d == 0) return 0;
    if (d < 0) return -1;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  return overflow ? INT64_MAX : n;
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16:
    case DType::Int32: case DType::UInt32: case DType::Int64: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) s[i] = da;
    else if (da == 1) s[i] = db;
    else return false;
  }
  *out = s;
  return true;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

std::string describe_node(const Graph& g, const Node& n) {
  std::string dom = n.domain.empty() ? "" : n.domain + ".";
  return "node '" + n.name + "' (" + dom + n.op_type + ", opset " +
         std::to_string(g.opset(n.domain)) + ")";
}

}  // namespace oi
