// The Python extension `ocl_infer._ocl_infer`: a thin layer over the public C++ API
// (include/ocl_infer/ocl_infer.hpp). The onnxruntime-shaped API (InferenceSession, NodeArg, ...)
// is written in Python on top of it (python/ocl_infer/__init__.py); this file only converts
// numpy arrays, options and results, translates the C++ error classes into Python exceptions and
// releases the GIL while the device works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace py = pybind11;
using ocl_infer::DType;
using ocl_infer::Tensor;

namespace {

// numpy dtype -> element type; InputError for types the runtime has no tensor type for.
DType dtype_of(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f') {
    if (size == 4) return DType::Float32;
    if (size == 2) return DType::Float16;
    if (size == 8) return DType::Float64;
  } else if (kind == 'i') {
    if (size == 1) return DType::Int8;
    if (size == 2) return DType::Int16;
    if (size == 4) return DType::Int32;
    if (size == 8) return DType::Int64;
  } else if (kind == 'u') {
    if (size == 1) return DType::UInt8;
    if (size == 2) return DType::UInt16;
    if (size == 4) return DType::UInt32;
    if (size == 8) return DType::UInt64;
  } else if (kind == 'b') {
    return DType::Bool;
  }
  throw ocl_infer::InputError("numpy dtype '" + dt.attr("name").cast<std::string>() +
                              "' has no ocl-infer tensor type (float16/32/64, int8-64, uint8-64, bool)");
}

// Element type -> numpy dtype; bfloat16 (no numpy type) is returned widened to float32.
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Float32: case DType::BFloat16: return py::dtype("float32");
    case DType::Float16: return py::dtype("float16");
    case DType::Float64: return py::dtype("float64");
    case DType::Int8: return py::dtype("int8");
    case DType::Int16: return py::dtype("int16");
    case DType::Int32: return py::dtype("int32");
    case DType::Int64: return py::dtype("int64");
    case DType::UInt8: return py::dtype("uint8");
    case DType::UInt16: return py::dtype("uint16");
    case DType::UInt32: return py::dtype("uint32");
    case DType::UInt64: return py::dtype("uint64");
    case DType::Bool: return py::dtype("bool");
    default: break;
  }
  throw ocl_infer::InputError(std::string("an output of type ") + ocl_infer::dtype_name(t) +
                              " cannot be returned to Python");
}

// A C-contiguous array (the Python layer makes it so) copied into a tensor.
Tensor to_tensor(const std::string& name, const py::array& a) {
  if (!(a.flags() & py::array::c_style))
    throw ocl_infer::InputError("input '" + name + "': the array must be C-contiguous");
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  Tensor t(dtype_of(a.dtype()), shape);
  if (t.bytes.size() != static_cast<size_t>(a.nbytes()))
    throw ocl_infer::InputError("input '" + name + "': unexpected array size");
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), a.data(), t.bytes.size());
  return t;
}

py::array to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  py::array a(numpy_dtype(t.dtype), shape);
  if (t.dtype == DType::BFloat16) {
    // The upper half of a float32.
    auto* out = static_cast<uint32_t*>(a.mutable_data());
    const auto* in = t.data<uint16_t>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
  } else if (!t.bytes.empty()) {
    std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  }
  return a;
}

py::dict value_info(const ocl_infer::ValueInfo& v) {
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = ocl_infer::dtype_name(v.dtype);
  d["onnx_type"] = static_cast<int>(v.dtype);
  py::list shape;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] >= 0)
      shape.append(v.shape[i]);
    else if (i < v.dim_names.size() && !v.dim_names[i].empty())
      shape.append(v.dim_names[i]);
    else
      shape.append(py::none());
  }
  d["shape"] = shape;
  return d;
}

py::dict device_dict(const ocl_infer::DeviceInfo& d) {
  py::dict r;
  r["index"] = d.index;
  r["name"] = d.name;
  r["type"] = d.type;
  r["vendor"] = d.vendor;
  r["platform"] = d.platform;
  r["driver_version"] = d.driver_version;
  r["device_version"] = d.device_version;
  r["opencl_c_version"] = d.opencl_c_version;
  r["global_mem_bytes"] = d.global_mem_bytes;
  r["max_alloc_bytes"] = d.max_alloc_bytes;
  r["compute_units"] = d.compute_units;
  r["fp64"] = d.fp64;
  r["fp16"] = d.fp16;
  return r;
}

ocl_infer::Precision precision_of(const std::string& p) {
  if (p == "fp32" || p == "float32") return ocl_infer::Precision::Float32;
  if (p == "fp16" || p == "float16") return ocl_infer::Precision::Float16;
  throw ocl_infer::InputError("precision '" + p +
                              "': use \"fp32\" or \"fp16\" (int8: load a quantized model, see ocl_infer.quantize)");
}

// Options from the keyword arguments the Python layer passes (every key known there).
ocl_infer::SessionOptions session_options(const py::dict& o) {
  ocl_infer::SessionOptions s;
  for (auto item : o) {
    const std::string key = py::str(item.first);
    const py::handle v = item.second;
    if (v.is_none()) continue;
    if (key == "device") s.device = py::str(v);
    else if (key == "precision") s.precision = precision_of(py::str(v));
    else if (key == "fp32_ops") s.fp32_ops = v.cast<std::vector<std::string>>();
    else if (key == "cache_dir") s.cache_dir = py::str(v);
    else if (key == "profiling") s.profiling = v.cast<bool>();
    else if (key == "optimization_level") s.optimization_level = v.cast<int>();
    else if (key == "disabled_passes") s.disabled_passes = v.cast<std::vector<std::string>>();
    else if (key == "plan_memory") s.plan_memory = v.cast<bool>();
    else if (key == "max_memory_bytes") s.max_memory_bytes = v.cast<uint64_t>();
    else if (key == "kernel_variants") s.kernel_variants = py::str(v);
    else if (key == "tuning_cache") s.tuning_cache = py::str(v);
    else if (key == "tune") s.tune = v.cast<bool>();
    else if (key == "tune_budget_seconds") s.tune_budget_seconds = v.cast<double>();
    else if (key == "keep_warm") s.keep_warm = v.cast<int>();
    else if (key == "plan_time_input_limit") s.plan_time_input_limit = v.cast<int64_t>();
    else if (key == "shape_generic") s.shape_generic = v.cast<int>();
    else if (key == "log") {
      // Called from the session's threads: take the GIL for the Python callable.
      auto fn = std::make_shared<py::object>(py::reinterpret_borrow<py::object>(v));
      s.log = [fn](const std::string& line) {
        py::gil_scoped_acquire gil;
        try {
          (*fn)(line);
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("ocl_infer log callback");
        }
      };
    } else {
      throw ocl_infer::InputError("unknown session option '" + key + "'");
    }
  }
  return s;
}

std::map<std::string, Tensor> to_feeds(const py::dict& feeds) {
  std::map<std::string, Tensor> r;
  for (auto item : feeds) {
    const std::string name = py::str(item.first);
    r[name] = to_tensor(name, item.second.cast<py::array>());
  }
  return r;
}

// A session plus the mutex-free parts the Python side needs. The C++ Session serialises run().
class PySession {
 public:
  PySession(const py::object& model, const py::dict& options) {
    const ocl_infer::SessionOptions so = session_options(options);
    if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
        py::isinstance<py::memoryview>(model)) {
      const std::string bytes = py::isinstance<py::bytes>(model) ? model.cast<std::string>()
                                                                  : py::bytes(model).cast<std::string>();
      py::gil_scoped_release nogil;
      session_ = std::make_unique<ocl_infer::Session>(ocl_infer::Session::from_memory(bytes.data(), bytes.size(), so));
    } else {
      const std::string path = py::str(model);
      py::gil_scoped_release nogil;
      session_ = std::make_unique<ocl_infer::Session>(ocl_infer::Session::from_file(path, so));
    }
  }

  py::list inputs() const {
    py::list r;
    for (const auto& v : session_->inputs()) r.append(value_info(v));
    return r;
  }
  py::list outputs() const {
    py::list r;
    for (const auto& v : session_->outputs()) r.append(value_info(v));
    return r;
  }
  py::dict device() const { return device_dict(session_->device()); }

  py::dict run(const py::dict& feeds, const std::vector<std::string>& fetch) {
    const std::map<std::string, Tensor> in = to_feeds(feeds);
    std::map<std::string, Tensor> out;
    {
      py::gil_scoped_release nogil;
      ocl_infer::RunOptions ro;
      ro.fetch = fetch;
      out = session_->run(in, ro);
    }
    py::dict r;
    for (const auto& [name, t] : out) r[py::str(name)] = to_numpy(t);
    return r;
  }

  py::dict stats() const {
    const ocl_infer::SessionStats s = session_->stats();
    py::dict d;
    d["load_ms"] = s.load_ms;
    d["plan_ms"] = s.plan_ms;
    d["graph_ms"] = s.graph_ms;
    d["lower_ms"] = s.lower_ms;
    d["upload_ms"] = s.upload_ms;
    d["programs_ms"] = s.programs_ms;
    d["compile_ms"] = s.compile_ms;
    d["programs_built"] = s.programs_built;
    d["programs_cached"] = s.programs_cached;
    d["kernel_launches"] = s.kernel_launches;
    d["tuned_problems"] = s.tuned_problems;
    d["tuned_improved"] = s.tuned_improved;
    d["tuning_seconds"] = s.tuning_seconds;
    d["heuristic_kernel_ms"] = s.heuristic_kernel_ms;
    d["tuned_kernel_ms"] = s.tuned_kernel_ms;
    d["tuning_cache"] = s.tuning_cache;
    d["keep_warm"] = s.keep_warm;
    d["keep_warm_spin"] = s.keep_warm_spin;
    d["keep_warm_trial_runs"] = s.keep_warm_trial_runs;
    d["plans_kept"] = s.plans_kept;
    d["plan_reuses"] = s.plan_reuses;
    return d;
  }

  py::list profile() const {
    py::list r;
    for (const auto& l : session_->profile()) {
      py::dict d;
      d["index"] = l.index;
      d["nodes"] = l.node_names;
      d["op_types"] = l.op_types;
      d["output_shape"] = l.output_shape;
      d["kernel"] = l.kernel;
      d["variant"] = l.variant;
      d["variant_source"] = l.variant_source;
      d["global"] = l.global;
      d["local"] = l.local;
      d["launches"] = l.launches;
      d["runs"] = l.runs;
      d["avg_us"] = l.avg_us;
      d["min_us"] = l.min_us;
      d["max_us"] = l.max_us;
      d["flops"] = l.flops;
      d["bytes"] = l.bytes;
      d["timestamp_problem"] = l.timestamp_problem;
      r.append(d);
    }
    return r;
  }
  void reset_profile() { session_->reset_profile(); }
  std::vector<double> inference_us() const { return session_->profiled_inference_us(); }
  std::vector<double> wall_us() const { return session_->profiled_wall_us(); }
  std::string dump(const std::string& what) const { return session_->dump(what); }
  py::list executed_nodes() const {
    py::list r;
    for (const auto& n : session_->executed_nodes()) {
      py::dict d;
      d["name"] = n.name;
      d["covers"] = n.covers;
      d["op_types"] = n.op_types;
      d["outputs"] = n.outputs;
      r.append(d);
    }
    return r;
  }

 private:
  std::unique_ptr<ocl_infer::Session> session_;
};

py::list list_devices() {
  py::list r;
  for (const auto& d : ocl_infer::list_devices()) r.append(device_dict(d));
  return r;
}

py::list operator_catalog() {
  py::list r;
  for (const auto& o : ocl_infer::operator_catalog()) {
    py::dict d;
    d["domain"] = o.domain;
    d["op_type"] = o.op_type;
    d["since_versions"] = o.since_versions;
    d["max_opset"] = o.max_opset;
    d["fp16_storage"] = o.fp16_storage;
    d["notes"] = o.notes;
    r.append(d);
  }
  return r;
}

py::tuple quantize_model(const std::string& path, const py::list& calibration, const std::string& method,
                         double percentile, bool per_channel, const std::string& activation_type,
                         const std::vector<std::string>& exclude_nodes, const py::dict& session) {
  ocl_infer::QuantizeOptions q;
  q.method = method;
  q.percentile = percentile;
  q.per_channel = per_channel;
  if (activation_type == "uint8") q.activation_type = DType::UInt8;
  else if (activation_type == "int8") q.activation_type = DType::Int8;
  else throw ocl_infer::InputError("activation_type '" + activation_type + "': use \"uint8\" or \"int8\"");
  q.exclude_nodes = exclude_nodes;
  q.session = session_options(session);
  std::vector<std::map<std::string, Tensor>> inputs;
  for (auto feeds : calibration) inputs.push_back(to_feeds(feeds.cast<py::dict>()));
  ocl_infer::QuantizeReport report;
  std::string bytes;
  {
    py::gil_scoped_release nogil;
    bytes = ocl_infer::quantize_model(path, inputs, q, &report);
  }
  py::dict rep;
  rep["calibration_inputs"] = report.calibration_inputs;
  rep["weights_quantized"] = report.weights_quantized;
  rep["biases_quantized"] = report.biases_quantized;
  rep["float_nodes"] = report.float_nodes;
  rep["excluded"] = report.excluded;
  py::list ranges;
  for (const auto& a : report.activations) {
    py::dict d;
    d["tensor"] = a.tensor;
    d["min"] = a.min;
    d["max"] = a.max;
    d["scale"] = a.scale;
    d["zero_point"] = a.zero_point;
    ranges.append(d);
  }
  rep["activations"] = ranges;
  return py::make_tuple(py::bytes(bytes), rep);
}

}  // namespace

PYBIND11_MODULE(_ocl_infer, m) {
  m.doc() = "ocl-infer's C++ runtime (use the ocl_infer package, not this module)";
  // Translators run newest first: the base class is registered first.
  static py::exception<ocl_infer::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ocl_infer::ModelError> model_error(m, "ModelError", error.ptr());
  static py::exception<ocl_infer::UnsupportedError> unsupported(m, "UnsupportedError", error.ptr());
  static py::exception<ocl_infer::InputError> input_error(m, "InputError", error.ptr());
  static py::exception<ocl_infer::DeviceError> device_error(m, "DeviceError", error.ptr());
  static py::exception<ocl_infer::KernelBuildError> build_error(m, "KernelBuildError", device_error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ocl_infer::KernelBuildError& e) {
      build_error(e.what());
    } catch (const ocl_infer::DeviceError& e) {
      device_error(e.what());
    } catch (const ocl_infer::InputError& e) {
      input_error(e.what());
    } catch (const ocl_infer::UnsupportedError& e) {
      unsupported(e.what());
    } catch (const ocl_infer::ModelError& e) {
      model_error(e.what());
    } catch (const ocl_infer::Error& e) {
      error(e.what());
    }
  });

  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, const py::dict&>(), py::arg("model"), py::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("device", &PySession::device)
      .def("run", &PySession::run, py::arg("feeds"), py::arg("fetch"))
      .def("stats", &PySession::stats)
      .def("profile", &PySession::profile)
      .def("reset_profile", &PySession::reset_profile)
      .def("inference_us", &PySession::inference_us)
      .def("wall_us", &PySession::wall_us)
      .def("dump", &PySession::dump, py::arg("what"))
      .def("executed_nodes", &PySession::executed_nodes);
  m.def("list_devices", &list_devices);
  m.def("release_shared_contexts", &ocl_infer::release_shared_contexts,
        py::call_guard<py::gil_scoped_release>());
  m.def("operator_catalog", &operator_catalog);
  m.def("supported_operators", &ocl_infer::supported_operators);
  m.def("model_is_quantized", &ocl_infer::model_is_quantized, py::arg("path"));
  m.def("quantize_model", &quantize_model);
  m.def("version", &ocl_infer::version);
  m.def("run_compile_helper", &ocl_infer::run_compile_helper);
}
