#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tools/cli_io.hpp"

namespace cli {

using ocl_infer::DType;
using ocl_infer::InputError;
using ocl_infer::Tensor;

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
const NpyType kTypes[] = {
    {"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<f2", DType::Float16},
    {"|i1", DType::Int8},    {"|u1", DType::UInt8},   {"<i2", DType::Int16},
    {"<u2", DType::UInt16},  {"<i4", DType::Int32},   {"<u4", DType::UInt32},
    {"<i8", DType::Int64},   {"<u8", DType::UInt64},  {"|b1", DType::Bool},
};

// Value of `key` in the header dict, e.g. 'descr': '<f4' -> "<f4", 'shape': (1, 3) -> "(1, 3)".
std::string header_field(const std::string& h, const std::string& key) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  auto colon = h.find(':', k);
  if (colon == std::string::npos) return "";
  size_t p = h.find_first_not_of(' ', colon + 1);
  if (p == std::string::npos) return "";
  if (h[p] == '\'') {
    auto e = h.find('\'', p + 1);
    return e == std::string::npos ? "" : h.substr(p + 1, e - p - 1);
  }
  if (h[p] == '(') {
    auto e = h.find(')', p);
    return e == std::string::npos ? "" : h.substr(p, e - p + 1);
  }
  auto e = h.find_first_of(",}", p);
  return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  auto bad = [&](const std::string& why) { return InputError("'" + path + "' is not a valid .npy file: " + why); };
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw bad("bad magic");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h16;
    if (!f.read(reinterpret_cast<char*>(&h16), 2)) throw bad("truncated header");
    hlen = h16;
  } else if (magic[6] == 2 || magic[6] == 3) {
    if (!f.read(reinterpret_cast<char*>(&hlen), 4)) throw bad("truncated header");
  } else {
    throw bad("unknown format version " + std::to_string(magic[6]));
  }
  if (hlen > (1u << 20)) throw bad("header too large");
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) throw bad("truncated header");
  std::string descr = header_field(h, "descr"), order = header_field(h, "fortran_order"),
              shape = header_field(h, "shape");
  if (descr.empty() || shape.empty()) throw bad("header lacks descr or shape");
  const bool fortran = order.find("True") != std::string::npos;
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  Tensor t;
  bool found = false;
  for (auto& ty : kTypes)
    if (descr == ty.descr) {
      t.dtype = ty.dtype;
      found = true;
    }
  if (!found) throw bad("unsupported dtype '" + descr + "' (big-endian, strings and objects are not supported)");
  std::string dims = shape.substr(1, shape.size() - 2);
  std::stringstream ss(dims);
  std::string item;
  // The claimed size, overflow-checked, must be what the file holds after the header: nothing is
  // allocated before that is known.
  uint64_t count = 1;
  bool overflow = false;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" "), b = item.find_last_not_of(" L");
    if (a == std::string::npos) continue;
    std::string num = item.substr(a, b - a + 1);
    if (num.empty() || num.size() > 18 || num.find_first_not_of("0123456789") != std::string::npos)
      throw bad("bad shape '" + shape + "'");
    t.shape.push_back(std::stoll(num));
    overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(t.shape.back()), &count);
  }
  uint64_t want = 0;
  overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(ocl_infer::dtype_size(t.dtype)), &want);
  const std::streamoff here = f.tellg();
  f.seekg(0, std::ios::end);
  const uint64_t left = static_cast<uint64_t>(f.tellg() - here);
  f.seekg(here);
  if (overflow || want > left)
    throw bad("shape " + shape + " needs " + (overflow ? std::string("more than 2^64") : std::to_string(want)) +
              " bytes but the file holds " + std::to_string(left) + " after its header");
  t.bytes.resize(static_cast<size_t>(want));
  if (!t.bytes.empty() && !f.read(reinterpret_cast<char*>(t.bytes.data()), t.bytes.size()))
    throw bad("data is truncated (expected " + std::to_string(t.bytes.size()) + " bytes)");
  if (fortran && t.shape.size() > 1) {
    // Column-major on disk (the first dim varies fastest): gather into row-major order.
    const size_t es = ocl_infer::dtype_size(t.dtype);
    const size_t rank = t.shape.size();
    std::vector<int64_t> fstride(rank, 1);
    for (size_t d = 1; d < rank; ++d) fstride[d] = fstride[d - 1] * t.shape[d - 1];
    std::vector<uint8_t> c(t.bytes.size());
    std::vector<int64_t> coord(rank, 0);
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off += coord[d] * fstride[d];
      std::memcpy(c.data() + i * es, t.bytes.data() + off * es, es);
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < t.shape[d]) break;
        coord[d] = 0;
      }
    }
    t.bytes = std::move(c);
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (auto& ty : kTypes)
    if (ty.dtype == t.dtype) descr = ty.descr;
  if (!descr) throw InputError(std::string("cannot write ") + ocl_infer::dtype_name(t.dtype) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 || i + 1 < t.shape.size() ? "," : "");
  shape += ")";
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(h.size());
  f.write(reinterpret_cast<const char*>(&hl), 2);
  f.write(h.data(), h.size());
  f.write(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  if (!f) throw InputError("writing '" + path + "' failed");
}

Tensor read_tensor_file(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot != std::string::npos && path.substr(dot) == ".npy") return read_npy(path);
  return ocl_infer::read_tensor_proto(path);
}

std::string safe_file_name(const std::string& name) {
  std::string s = name;
  for (auto& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

int64_t count_non_finite(const ocl_infer::Tensor& t) {
  int64_t bad = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype) {
      case ocl_infer::DType::Float32: bad += !std::isfinite(t.data<float>()[i]); break;
      case ocl_infer::DType::Float64: bad += !std::isfinite(t.data<double>()[i]); break;
      case ocl_infer::DType::Float16: bad += (t.data<uint16_t>()[i] & 0x7c00u) == 0x7c00u; break;
      default: return 0;
    }
  }
  return bad;
}

}  // namespace cli
