#include "ops/build_context.hpp"

#include "runtime/ir/host_math.hpp"

namespace oi {

using ocl_infer::UnsupportedError;

Operand BuildContext::value(int id) const {
  const Value& v = graph().values[id];
  Operand o;
  o.mem = sink_.buffer_of(id);
  o.shape = v.shape;
  o.dtype = sink_.storage_of(id);
  return o;
}

Operand BuildContext::input(int i) const {
  in(i);  // throws when absent
  return value(node().inputs[i]);
}

Operand BuildContext::output(int i) const {
  out_value(i);  // throws when absent
  return value(node().outputs[i]);
}

Operand BuildContext::scratch(DType dtype, const Shape& shape) const {
  Operand o;
  o.shape = shape;
  o.dtype = dtype;
  o.mem = sink_.scratch(std::max<size_t>(static_cast<size_t>(numel(shape)) * ocl_infer::dtype_size(dtype), 4));
  return o;
}

Operand BuildContext::workspace(DType dtype, const Shape& shape) const {
  Operand o;
  o.shape = shape;
  o.dtype = dtype;
  o.mem = sink_.workspace(std::max<size_t>(static_cast<size_t>(numel(shape)) * ocl_infer::dtype_size(dtype), 4));
  return o;
}

Operand BuildContext::constant(const Tensor& t) const {
  Operand o;
  o.shape = t.shape;
  o.dtype = t.dtype;
  o.mem = sink_.constant(t.bytes.data(), t.bytes.size());
  return o;
}

cl_mem BuildContext::constant_floats(const std::vector<float>& data) const {
  return sink_.constant(data.data(), data.size() * sizeof(float));
}

cl_mem BuildContext::constant_floats(HostFloats data) const {
  auto owned = std::make_shared<const HostFloats>(std::move(data));
  return sink_.constant_shared(owned, owned->data(), owned->size() * sizeof(float));
}

void BuildContext::require_storage(DType t) const {
  auto check = [&](int id, const char* what, int k) {
    const DType s = sink_.storage_of(id);
    if (s != t)
      unsupported(std::string(what) + " " + std::to_string(k) + " ('" + graph().values[id].name + "') is stored as " +
                  ocl_infer::dtype_name(s) + "; these kernels take " + ocl_infer::dtype_name(t));
  };
  for (int k = 0; k < num_inputs(); ++k)
    if (has_input(k)) check(node().inputs[k], "input", k);
  for (int k = 0; k < num_outputs(); ++k)
    if (has_output(k)) check(node().outputs[k], "output", k);
}

void BuildContext::require_float_operands() const {
  auto check = [&](int id, const char* what, int k) {
    const DType s = sink_.storage_of(id), t = graph().values[id].dtype;
    const bool f = [](DType d) { return d == DType::Float32 || d == DType::Float16; }(s) &&
                   (t == DType::Float32 || t == DType::Float16);
    if (!f)
      unsupported(std::string(what) + " " + std::to_string(k) + " ('" + graph().values[id].name + "') is " +
                  ocl_infer::dtype_name(t) + "; these kernels take float32 or float16");
  };
  for (int k = 0; k < num_inputs(); ++k)
    if (has_input(k)) check(node().inputs[k], "input", k);
  for (int k = 0; k < num_outputs(); ++k)
    if (has_output(k)) check(node().outputs[k], "output", k);
}

std::string BuildContext::storage_option(const char* macro, DType storage) {
  return storage == DType::Float16 ? std::string(" -D") + macro + "=F16 -D" + macro + "_HALF" : std::string();
}

cl_mem BuildContext::constant_floats(HostFloats data, DType storage) const {
  if (storage != DType::Float16) return constant_floats(std::move(data));
  auto h = std::make_shared<std::vector<uint16_t, CacheLineAllocator<uint16_t>>>(data.size());
  for (size_t i = 0; i < data.size(); ++i) (*h)[i] = float_to_half(data[i]);
  return sink_.constant_shared(h, h->data(), h->size() * sizeof(uint16_t));
}

void resolve_launch(ClRuntime& cl, Launch& l) {
  if (l.kernel) return;
  KernelPtr k = cl.kernel(l.file, l.entry, l.options);
  for (cl_uint i = 0; i < l.args.size(); ++i) {
    const KernelArg& a = l.args[i];
    switch (a.kind) {
      case KernelArg::Kind::Mem:
        cl_check(clSetKernelArg(k.get(), i, sizeof(cl_mem), &a.mem), "clSetKernelArg(buffer)");
        break;
      case KernelArg::Kind::Int32: {
        const int32_t v = static_cast<int32_t>(a.i);
        cl_check(clSetKernelArg(k.get(), i, sizeof v, &v), "clSetKernelArg(int)");
        break;
      }
      case KernelArg::Kind::Int64: {
        const int64_t v = a.i;
        cl_check(clSetKernelArg(k.get(), i, sizeof v, &v), "clSetKernelArg(long)");
        break;
      }
      case KernelArg::Kind::Float32: {
        const float v = static_cast<float>(a.f);
        cl_check(clSetKernelArg(k.get(), i, sizeof v, &v), "clSetKernelArg(float)");
        break;
      }
      case KernelArg::Kind::Float64: {
        const double v = a.f;
        cl_check(clSetKernelArg(k.get(), i, sizeof v, &v), "clSetKernelArg(double)");
        break;
      }
    }
  }
  l.kernel = std::move(k);
}

void BuildContext::require_fp64_support(const std::string& options) {
  if (!caps().fp64 && options.find("-DUSE_FP64") != std::string::npos)
    unsupported("float64 arithmetic needs a device with cl_khr_fp64 (this one has none)");
}

void BuildContext::push(const std::string& file, const std::string& entry, const std::string& options,
                        std::vector<KernelArg> args, std::vector<size_t> global, std::vector<size_t> local,
                        const std::string& first_run_options) {
  Launch l;
  l.file = file;
  l.entry = entry;
  l.options = options;
  l.first_run_options = first_run_options;
  l.args = std::move(args);
  l.kernel_name = file + ":" + entry;
  l.global = std::move(global);
  l.local = std::move(local);
  l.node = node_index();
  l.step = step_;
  l.variant = variant_;
  sink_.add_launch(std::move(l));
}

const char* cl_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "half";  // storage only: kernels/storage.cl converts
    case DType::BFloat16: return "ushort";  // storage only: kernels/storage.cl's BF16
    case DType::Int8: return "char";
    case DType::UInt8: return "uchar";
    case DType::Int16: return "short";
    case DType::UInt16: return "ushort";
    case DType::Int32: return "int";
    case DType::UInt32: return "uint";
    case DType::Int64: return "long";
    case DType::UInt64: return "ulong";
    case DType::Bool: return "uchar";
    default:
      throw UnsupportedError(std::string("tensors of type ") + ocl_infer::dtype_name(t) +
                             " are not supported on the device yet");
  }
}

}  // namespace oi
