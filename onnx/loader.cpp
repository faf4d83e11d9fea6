#include "onnx/loader.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "onnx/onnx.pb.h"

namespace oi {

using ocl_infer::ModelError;

namespace {

// A name or string from the file, safe for one-line messages: control bytes become \xNN.
std::string printable(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
    if (r.size() > 200) return r + "...";
  }
  return r;
}

bool known_dtype(int t) {
  switch (static_cast<DType>(t)) {
    case DType::Float32: case DType::UInt8: case DType::Int8: case DType::UInt16:
    case DType::Int16: case DType::Int32: case DType::Int64: case DType::Bool:
    case DType::Float16: case DType::Float64: case DType::UInt32: case DType::UInt64: case DType::BFloat16:
      return true;
    default:
      return false;
  }
}

// A file's bytes, in a buffer that is not zeroed first (zeroing a 45 MB model's buffer faulted
// every page in once more before the read did).
struct FileBytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

FileBytes read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  // A regular file is read in one piece into a buffer of its size (a stream copy grew and copied a
  // 45 MB model four times: 60 ms of resnet18's warm start); pipes and the like are streamed.
  struct stat st {};
  const bool have_stat = stat(path.c_str(), &st) == 0;
  if (have_stat && S_ISDIR(st.st_mode)) throw ModelError("the " + what + " '" + path + "' is a directory, not a file");
  std::string streamed;
  if (have_stat && S_ISREG(st.st_mode)) {
    FileBytes r;
    r.size = static_cast<size_t>(st.st_size);
    r.data.reset(new char[std::max<size_t>(r.size, 1)]);
    if (!f.read(r.data.get(), static_cast<std::streamsize>(r.size)))
      throw ModelError("cannot read " + what + " '" + path + "' (" + std::to_string(f.gcount()) + " of " +
                       std::to_string(r.size) + " bytes)");
    if (f.peek() == std::char_traits<char>::eof()) return r;
    // The file grew while read: take the rest too.
    std::stringstream rest;
    rest << f.rdbuf();
    streamed.assign(r.data.get(), r.size);
    streamed += rest.str();
  } else {
    std::stringstream ss;
    ss << f.rdbuf();
    if (f.bad()) throw ModelError("cannot read " + what + " '" + path + "'");
    streamed = ss.str();
  }
  FileBytes r;
  r.size = streamed.size();
  r.data.reset(new char[std::max<size_t>(r.size, 1)]);
  std::memcpy(r.data.get(), streamed.data(), r.size);
  return r;
}

// Copies `count` elements of a typed repeated field into t, converting to t's element type.
template <typename Dst, typename Field>
void copy_field(const Field& f, Tensor& t) {
  Dst* d = t.data<Dst>();
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
}

// Parses a decimal int64 external-data field; fails with a message naming the field.
int64_t parse_i64(const std::string& v, const std::string& what, const std::function<ModelError(const std::string&)>& bad) {
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    throw bad("external data " + what + " '" + printable(v) + "' is not a non-negative integer");
  return std::stoll(v);
}

// Reads bytes [offset, offset + length) of a regular file inside the model's folder, after checking
// both against the file's size (length -1: to the end). Symbolic links are resolved first: a link
// may not lead out of the folder, and FIFOs, devices and sockets are refused.
std::string read_external(const std::string& model_dir, const std::string& location, int64_t offset, int64_t length,
                          uint64_t max_bytes, const std::function<ModelError(const std::string&)>& bad) {
  if (location.empty()) throw bad("external data without a location");
  if (model_dir.empty()) throw bad("external data '" + printable(location) + "' but the model has no folder");
  if (location.find('\0') != std::string::npos || location[0] == '/')
    throw bad("external data location '" + printable(location) + "' must be a relative path inside the model folder");
  char dir_real[PATH_MAX], file_real[PATH_MAX];
  if (!realpath(model_dir.c_str(), dir_real)) throw bad("cannot resolve the model folder '" + printable(model_dir) + "'");
  const std::string path = model_dir + "/" + location;
  if (!realpath(path.c_str(), file_real))
    throw bad("cannot open external data file '" + printable(location) + "': " + std::strerror(errno));
  const std::string dir = std::string(dir_real) + (std::string(dir_real) == "/" ? "" : "/");
  if (std::string(file_real).compare(0, dir.size(), dir) != 0)
    throw bad("external data location '" + printable(location) + "' leads outside the model folder (to '" +
              printable(file_real) + "')");
  struct stat st;
  if (stat(file_real, &st) != 0) throw bad("cannot stat external data file '" + printable(location) + "'");
  if (!S_ISREG(st.st_mode)) throw bad("external data file '" + printable(location) + "' is not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (static_cast<uint64_t>(offset) > size)
    throw bad("external data offset " + std::to_string(offset) + " is beyond the end of '" + printable(location) + "' (" +
              std::to_string(size) + " bytes)");
  const uint64_t len = length < 0 ? size - static_cast<uint64_t>(offset) : static_cast<uint64_t>(length);
  if (len > size - static_cast<uint64_t>(offset))
    throw bad("external data [" + std::to_string(offset) + ", +" + std::to_string(len) + ") runs past the end of '" +
              printable(location) + "' (" + std::to_string(size) + " bytes)");
  if (len > max_bytes) throw bad("external data of " + std::to_string(len) + " bytes exceeds the memory limit");
  std::ifstream f(file_real, std::ios::binary);
  if (!f) throw bad("cannot open external data file '" + printable(location) + "': " + std::strerror(errno));
  std::string r(static_cast<size_t>(len), '\0');
  f.seekg(offset);
  if (len && !f.read(r.data(), static_cast<std::streamsize>(len)))
    throw bad("cannot read " + std::to_string(len) + " bytes of external data from '" + printable(location) + "'");
  return r;
}

Tensor convert_tensor(const onnx::TensorProto& tp, const std::string& model_dir, uint64_t max_bytes) {
  const std::string name = printable(tp.name());
  std::function<ModelError(const std::string&)> bad = [&](const std::string& msg) -> ModelError {
    return ModelError("tensor '" + name + "': " + msg);
  };
  if (!known_dtype(tp.data_type())) {
    if (tp.data_type() == onnx::TensorProto::STRING)
      throw ocl_infer::UnsupportedError("tensor '" + name + "': string tensors are not supported");
    throw bad("unsupported or invalid data type " + std::to_string(tp.data_type()));
  }
  Tensor t;
  t.dtype = static_cast<DType>(tp.data_type());
  // The claimed size, overflow-checked, against the limit: nothing is allocated before this.
  const size_t esize = ocl_infer::dtype_size(t.dtype);
  uint64_t n = 1;
  bool overflow = false;
  for (auto d : tp.dims()) {
    if (d < 0) throw bad("negative dimension " + std::to_string(d));
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
    t.shape.push_back(d);
  }
  uint64_t want = 0;
  overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(esize), &want);
  if (overflow || want > max_bytes)
    throw bad("dims " + ocl_infer::shape_to_string(t.shape) + " claim " +
              (overflow ? std::string("more than 2^64") : std::to_string(want)) + " bytes, beyond the memory limit of " +
              std::to_string(max_bytes) + " bytes");

  std::string external;
  const std::string* raw = nullptr;
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (auto& kv : tp.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = parse_i64(kv.value(), "offset", bad);
      else if (kv.key() == "length") length = parse_i64(kv.value(), "length", bad);
    }
    if (length >= 0 && static_cast<uint64_t>(length) != want)
      throw bad("external data length " + std::to_string(length) + " does not match dims " +
                ocl_infer::shape_to_string(t.shape) + " (" + std::to_string(want) + " bytes)");
    external = read_external(model_dir, location, offset, length < 0 ? -1 : length, max_bytes, bad);
    raw = &external;
  } else if (tp.has_raw_data()) {
    raw = &tp.raw_data();
  }

  if (raw) {
    if (raw->size() != want)
      throw bad("raw data holds " + std::to_string(raw->size()) + " bytes but dims " +
                ocl_infer::shape_to_string(t.shape) + " need " + std::to_string(want));
    t.bytes.assign(raw->begin(), raw->end());  // little-endian host, as ONNX specifies
    return t;
  }
  auto check = [&](int got) {
    if (static_cast<uint64_t>(got) != n)
      throw bad("holds " + std::to_string(got) + " elements but dims " +
                ocl_infer::shape_to_string(t.shape) + " need " + std::to_string(n));
    t.bytes.assign(want, 0);
  };
  switch (t.dtype) {
    case DType::Float32: check(tp.float_data_size()); copy_field<float>(tp.float_data(), t); break;
    case DType::Float64: check(tp.double_data_size()); copy_field<double>(tp.double_data(), t); break;
    case DType::Int64: check(tp.int64_data_size()); copy_field<int64_t>(tp.int64_data(), t); break;
    case DType::UInt32: case DType::UInt64:
      check(tp.uint64_data_size());
      if (t.dtype == DType::UInt32) copy_field<uint32_t>(tp.uint64_data(), t);
      else copy_field<uint64_t>(tp.uint64_data(), t);
      break;
    case DType::Int32: check(tp.int32_data_size()); copy_field<int32_t>(tp.int32_data(), t); break;
    case DType::Int16: check(tp.int32_data_size()); copy_field<int16_t>(tp.int32_data(), t); break;
    case DType::UInt16: check(tp.int32_data_size()); copy_field<uint16_t>(tp.int32_data(), t); break;
    case DType::Float16: case DType::BFloat16: check(tp.int32_data_size()); copy_field<uint16_t>(tp.int32_data(), t); break;
    case DType::Int8: check(tp.int32_data_size()); copy_field<int8_t>(tp.int32_data(), t); break;
    case DType::UInt8: case DType::Bool:
      check(tp.int32_data_size());
      copy_field<uint8_t>(tp.int32_data(), t);
      break;
    default:
      throw bad("unsupported data type");
  }
  return t;
}

void convert_type(const onnx::ValueInfoProto& vi, Value& v) {
  if (!vi.has_type() || !vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  if (tt.has_elem_type() && known_dtype(tt.elem_type())) v.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return;
  v.shape.clear();
  v.dim_names.clear();
  bool all_known = true;
  for (auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      v.shape.push_back(d.dim_value());
      v.dim_names.push_back("");
    } else {
      v.shape.push_back(-1);
      v.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
      all_known = false;
    }
  }
  v.shape_known = all_known;
}

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& model_dir, uint64_t max_bytes) {
  Attribute r;
  using A = onnx::AttributeProto;
  auto type = a.type();
  if (type == A::UNDEFINED) {  // very old models leave the type out
    if (a.has_f()) type = A::FLOAT;
    else if (a.has_i()) type = A::INT;
    else if (a.has_s()) type = A::STRING;
    else if (a.has_t()) type = A::TENSOR;
    else if (a.floats_size()) type = A::FLOATS;
    else if (a.ints_size()) type = A::INTS;
    else if (a.strings_size()) type = A::STRINGS;
  }
  switch (type) {
    case A::FLOAT: r.kind = Attribute::Kind::Float; r.f = a.f(); break;
    case A::INT: r.kind = Attribute::Kind::Int; r.i = a.i(); break;
    case A::STRING: r.kind = Attribute::Kind::String; r.s = a.s(); break;
    case A::TENSOR:
      r.kind = Attribute::Kind::Tensor;
      r.t = std::make_shared<Tensor>(convert_tensor(a.t(), model_dir, max_bytes));
      break;
    case A::FLOATS:
      r.kind = Attribute::Kind::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      r.kind = Attribute::Kind::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      r.kind = Attribute::Kind::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::GRAPH: case A::GRAPHS: r.kind = Attribute::Kind::Graph; break;
    default: r.kind = Attribute::Kind::Other; break;
  }
  return r;
}


// Names visible from enclosing scopes while a subgraph is read (nullptr for the model's graph).
struct Scope {
  const Scope* parent = nullptr;
  const std::set<std::string>* names = nullptr;
  bool sees(const std::string& n) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->names->count(n)) return true;
    return false;
  }
};

struct LoadState {
  std::string model_dir;
  uint64_t max_bytes = 0;
  uint64_t total = 0;  // bytes of constants read so far, against max_bytes
  std::map<std::string, int> opsets;
};

// Reads one graph: the model's (outer == nullptr) or a subgraph of a node (If, Loop, Scan), whose
// reads of enclosing scopes' values become its captures (see Graph::captures).
Graph load_graph(onnx::GraphProto& gp, const Scope* outer, LoadState& st, const std::string& where) {
  Graph g;
  g.opsets = st.opsets;
  std::map<std::string, int> ids;
  auto value_id = [&](const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    int id = g.add_value(name);
    ids[name] = id;
    return id;
  };

  // Initializers are constants; a model input that is also an initializer is a constant too. Their
  // total counts against the memory limit as each is read.
  for (auto& init : *gp.mutable_initializer()) {
    if (init.name().empty()) throw ModelError(where + "an initializer has no name");
    int id = value_id(init.name());
    Value& v = g.values[id];
    auto t = std::make_shared<Tensor>(convert_tensor(init, st.model_dir, st.max_bytes - st.total));
    // The copy in the tensor is the one kept: the parsed bytes go now, so that the next
    // initializer's allocation can reuse their memory instead of faulting in fresh pages.
    std::string().swap(*init.mutable_raw_data());
    st.total += t->bytes.size();
    v.dtype = t->dtype;
    v.shape = t->shape;
    v.shape_known = true;
    v.data = t;
  }
  for (auto& in : gp.input()) {
    int id = value_id(in.name());
    if (g.values[id].data) continue;
    convert_type(in, g.values[id]);
    if (outer) {  // a body's inputs take their types from the node; declared ones are hints
      g.values[id].shape_known = false;
      g.inputs.push_back(id);
      continue;
    }
    if (!in.has_type() || !in.type().has_tensor_type())
      throw ocl_infer::UnsupportedError("model input '" + in.name() + "' is not a tensor");
    if (g.values[id].dtype == DType::Undefined)
      throw ocl_infer::UnsupportedError("model input '" + in.name() + "' has an unsupported element type " +
                                        std::to_string(in.type().tensor_type().elem_type()));
    g.inputs.push_back(id);
  }

  std::set<std::string> produced;
  for (int id : g.inputs) produced.insert(g.values[id].name);
  for (auto& init : gp.initializer()) produced.insert(init.name());
  const int nn = gp.node_size();
  std::map<std::string, int> producer_of;
  for (int i = 0; i < nn; ++i)
    for (auto& o : gp.node(i).output())
      if (!o.empty()) {
        if (producer_of.count(o) || produced.count(o))
          throw ModelError(where + "value '" + printable(o) + "' is produced more than once");
        producer_of[o] = i;
      }
  std::set<std::string> local = produced;
  for (auto& [name, i] : producer_of) local.insert(name);
  const Scope here{outer, &local};

  // Subgraphs first: their outer reads are the node's implicit inputs, which order the nodes.
  std::vector<std::map<std::string, Graph>> subs(nn);
  std::vector<std::vector<std::string>> implicit(nn);
  for (int i = 0; i < nn; ++i) {
    auto& np = *gp.mutable_node(i);
    for (auto& a : *np.mutable_attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPHS)
        throw ocl_infer::UnsupportedError(where + "node '" + printable(np.name()) + "' (" + np.op_type() +
                                          ") has a list-of-graphs attribute '" + a.name() + "'");
      if (a.type() != onnx::AttributeProto::GRAPH && !(a.type() == onnx::AttributeProto::UNDEFINED && a.has_g()))
        continue;
      std::string nm = np.name().empty() ? np.op_type() : np.name();
      Graph sub = load_graph(*a.mutable_g(), &here, st, where + "node '" + printable(nm) + "' " + a.name() + ": ");
      for (int c : sub.captures)
        if (std::find(implicit[i].begin(), implicit[i].end(), sub.values[c].name) == implicit[i].end())
          implicit[i].push_back(sub.values[c].name);
      subs[i].emplace(a.name(), std::move(sub));
    }
    // Every subgraph of the node captures the union, in one order.
    for (auto& [name, sub] : subs[i]) {
      std::vector<int> caps;
      for (const std::string& c : implicit[i]) {
        int id = sub.find_value(c);
        if (id < 0 || std::find(sub.captures.begin(), sub.captures.end(), id) == sub.captures.end())
          id = sub.add_value(c);
        caps.push_back(id);
      }
      sub.captures = caps;
    }
  }
  auto reads_of = [&](int n) {
    std::vector<std::string> r(gp.node(n).input().begin(), gp.node(n).input().end());
    r.insert(r.end(), implicit[n].begin(), implicit[n].end());
    return r;
  };
  // A name no local node, input or initializer defines: an enclosing scope's value (captured), or
  // an error.
  auto check_read = [&](const std::string& in, int reader) {
    if (in.empty() || local.count(in)) return;
    if (outer && outer->sees(in)) {
      int id = value_id(in);
      if (std::find(g.captures.begin(), g.captures.end(), id) == g.captures.end()) g.captures.push_back(id);
      return;
    }
    if (reader < 0) throw ModelError(where + "graph output '" + printable(in) + "' is not produced by any node, input or initializer");
    const auto& np = gp.node(reader);
    std::string nm = np.name().empty() ? np.op_type() : np.name();
    throw ModelError(where + "node '" + printable(nm) + "' (" + np.op_type() + ") reads value '" + printable(in) +
                     "', which no node, input or initializer defines");
  };

  // ONNX requires nodes in topological order; accept any order by sorting, and report cycles.
  std::vector<int> order;
  {
    std::vector<int> state(nn, 0);  // 0 new, 1 on stack, 2 done
    std::vector<std::vector<std::string>> reads(nn);
    for (int i = 0; i < nn; ++i) reads[i] = reads_of(i);
    for (int start = 0; start < nn; ++start) {
      if (state[start]) continue;
      std::vector<std::pair<int, int>> stack{{start, 0}};
      state[start] = 1;
      while (!stack.empty()) {
        auto& [n, k] = stack.back();
        if (k < static_cast<int>(reads[n].size())) {
          const std::string& in = reads[n][k++];
          check_read(in, n);
          auto it = producer_of.find(in);
          if (in.empty() || it == producer_of.end()) continue;
          int p = it->second;
          if (state[p] == 1) throw ModelError(where + "the graph has a cycle through value '" + printable(in) + "'");
          if (state[p] == 0) {
            state[p] = 1;
            stack.push_back({p, 0});
          }
        } else {
          state[n] = 2;
          order.push_back(n);
          stack.pop_back();
        }
      }
    }
  }

  std::set<std::string> names;
  for (int idx : order) {
    const auto& np = gp.node(idx);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name();
    if (n.name.empty() || names.count(n.name)) n.name = n.op_type + "_" + std::to_string(idx);
    names.insert(n.name);
    for (auto& a : np.attribute()) {
      if (a.name().empty()) throw ModelError(where + "node '" + n.name + "' has an attribute without a name");
      auto sub = subs[idx].find(a.name());
      if (sub != subs[idx].end()) {
        Attribute r;
        r.kind = Attribute::Kind::Graph;
        r.g = std::make_shared<const Graph>(std::move(sub->second));
        n.attrs[a.name()] = std::move(r);
        continue;
      }
      n.attrs[a.name()] = convert_attribute(a, st.model_dir, st.max_bytes - st.total);
    }
    for (auto& in : np.input()) n.inputs.push_back(in.empty() ? -1 : value_id(in));
    for (auto& in : implicit[idx]) n.inputs.push_back(value_id(in));
    for (auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int id = value_id(out);
      g.values[id].producer = static_cast<int>(g.nodes.size());
      n.outputs.push_back(id);
    }
    g.nodes.push_back(std::move(n));
  }
  // Declared types of intermediate values are hints; shape inference recomputes them.
  for (auto& out : gp.output()) {
    check_read(out.name(), -1);
    auto it = ids.find(out.name());
    if (it == ids.end())
      throw ModelError(where + "graph output '" + printable(out.name()) + "' is not produced by any node, input or initializer");
    Value& v = g.values[it->second];
    Value declared;
    if (out.has_type()) convert_type(out, declared);
    g.declared_outputs.push_back(declared);
    if (v.producer >= 0 && v.dtype == DType::Undefined) {
      Value hint;
      convert_type(out, hint);
      v.dim_names = hint.dim_names;
      if (outer) v.dtype = hint.dtype;  // a body output's declared type: the type of a 0-trip Loop's scan output
    }
    g.outputs.push_back(it->second);
  }
  if (g.outputs.empty()) throw ModelError(where + "the graph has no outputs");
  return g;
}

}  // namespace

Graph load_onnx(const void* data, size_t size, const std::string& model_dir, uint64_t max_bytes) {
  if (size == 0) throw ModelError("the model file is empty");
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw ModelError("the model is larger than 2 GB; store its weights as external data");
  onnx::ModelProto mp;
  {
    google::protobuf::io::ArrayInputStream ais(data, static_cast<int>(size));
    google::protobuf::io::CodedInputStream cis(&ais);
    cis.SetRecursionLimit(64);
    if (!mp.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
      throw ModelError("not a valid ONNX model (protobuf parsing failed: truncated or not ONNX)");
  }
  if (!mp.has_graph() || (mp.graph().node_size() == 0 && mp.graph().output_size() == 0))
    throw ModelError("not a valid ONNX model (no graph)");

  LoadState st;
  st.model_dir = model_dir;
  st.max_bytes = max_bytes;
  for (auto& os : mp.opset_import()) {
    std::string dom = os.domain() == "ai.onnx" ? "" : os.domain();
    if (os.version() < 0 || os.version() > 100000)
      throw ModelError("opset import of domain '" + printable(os.domain()) + "' has an invalid version " +
                       std::to_string(os.version()));
    st.opsets[dom] = static_cast<int>(os.version());
  }
  if (st.opsets.empty()) st.opsets[""] = 1;  // IR version 2 models have no opset_import
  // Operators change meaning between opsets: a newer opset than the registry implements would run
  // with the older semantics, so it is refused rather than guessed.
  if (st.opsets.count("") && st.opsets[""] > kMaxOpset)
    throw ocl_infer::UnsupportedError("the model imports opset " + std::to_string(st.opsets[""]) +
                                      " of the default ONNX domain; ocl-infer implements opsets 1 to " +
                                      std::to_string(kMaxOpset));
  Graph g = load_graph(*mp.mutable_graph(), nullptr, st, "");
  g.ir_version = mp.ir_version();
  g.constant_bytes = st.total;
  g.producer = mp.producer_name() + (mp.producer_version().empty() ? "" : " " + mp.producer_version());
  return g;
}

Graph load_onnx_file(const std::string& path, uint64_t max_bytes) {
  const FileBytes bytes = read_file(path, "model");
  std::string dir = ".";
  if (auto slash = path.find_last_of('/'); slash != std::string::npos) dir = path.substr(0, slash);
  try {
    return load_onnx(bytes.data.get(), bytes.size, dir, max_bytes);
  } catch (const ocl_infer::UnsupportedError& e) {
    throw ocl_infer::UnsupportedError(path + ": " + e.what());
  } catch (const ModelError& e) {
    throw ModelError(path + ": " + e.what());
  }
}

Tensor load_tensor_proto(const void* data, size_t size, std::string* name, uint64_t max_bytes) {
  onnx::TensorProto tp;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !tp.ParseFromArray(data, static_cast<int>(size)))
    throw ModelError("not a valid TensorProto (protobuf parsing failed)");
  if (name) *name = tp.name();
  return convert_tensor(tp, "", max_bytes);
}

}  // namespace oi
