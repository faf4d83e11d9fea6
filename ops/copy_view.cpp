#include "ops/copy_view.hpp"

#include <cstring>

#include "ops/elementwise.hpp"

namespace oi {

CopyView permute_view(const Shape& in_shape, const std::vector<int64_t>& perm) {
  CopyView v;
  auto st = strides_of(in_shape);
  for (int64_t p : perm) {
    v.dims.push_back(in_shape[p]);
    v.in_strides.push_back(st[p]);
  }
  v.out_strides = strides_of(v.dims);
  return v;
}

void collapse_view(CopyView& v) {
  CopyView r = v;
  r.dims.clear();
  r.in_strides.clear();
  r.out_strides.clear();
  for (size_t d = 0; d < v.dims.size(); ++d) {
    if (v.dims[d] == 0) {
      r.dims = {0};
      r.in_strides = r.out_strides = {0};
      v = r;
      return;
    }
    if (v.dims[d] == 1) continue;
    if (!r.dims.empty() && r.in_strides.back() == v.in_strides[d] * v.dims[d] &&
        r.out_strides.back() == v.out_strides[d] * v.dims[d]) {
      r.dims.back() *= v.dims[d];
      r.in_strides.back() = v.in_strides[d];
      r.out_strides.back() = v.out_strides[d];
      continue;
    }
    r.dims.push_back(v.dims[d]);
    r.in_strides.push_back(v.in_strides[d]);
    r.out_strides.push_back(v.out_strides[d]);
  }
  if (r.dims.empty()) {
    r.dims = {1};
    r.in_strides = r.out_strides = {1};
  }
  v = r;
}

size_t copy_elem_size(const OpContext& ctx, DType t) {
  size_t es = ocl_infer::dtype_size(t);
  if (es == 0)
    ctx.unsupported(std::string("tensors of type ") + ocl_infer::dtype_name(t) +
                    " are not supported");
  return es;
}

namespace {

// Odometer walk: avoids a division per element, which matters when folding large initializers
// (a transposed weight).
template <typename W>
void host_walk(const CopyView& v, const W* src, W* dst) {
  const size_t nd = v.dims.size();
  std::vector<int64_t> c(nd, 0);
  int64_t si = v.in_offset, di = v.out_offset;
  const int64_t inner = v.dims[nd - 1], is = v.in_strides[nd - 1], os = v.out_strides[nd - 1];
  int64_t total = numel(v.dims);
  for (int64_t done = 0; done < total; done += inner) {
    for (int64_t k = 0; k < inner; ++k) dst[di + k * os] = src[si + k * is];
    for (size_t d = nd - 1; d-- > 0;) {
      si += v.in_strides[d];
      di += v.out_strides[d];
      if (++c[d] < v.dims[d]) break;
      si -= v.in_strides[d] * v.dims[d];
      di -= v.out_strides[d] * v.dims[d];
      c[d] = 0;
    }
  }
}

const char* word_type(size_t es) {
  switch (es) {
    case 1:
      return "uchar";
    case 2:
      return "ushort";
    case 4:
      return "uint";
    case 8:
      return "ulong";
    default:
      return nullptr;
  }
}

}  // namespace

std::string word_option(const OpContext& ctx, DType t) {
  const char* w = word_type(copy_elem_size(ctx, t));
  if (!w)
    ctx.unsupported(std::string("elements of type ") + ocl_infer::dtype_name(t) +
                    " have an unexpected size");
  return std::string("-DE=") + w;
}

std::string index_option(std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s >= (int64_t{1} << 31)) return "";
  return " -DIDX=int";
}

void run_copies_host(OpContext& ctx, const std::vector<CopyView>& views) {
  std::vector<Tensor> outs(ctx.num_outputs());
  for (int o = 0; o < ctx.num_outputs(); ++o)
    if (ctx.has_output(o)) outs[o] = Tensor(ctx.out_value(o).dtype, ctx.out_shape(o));
  for (CopyView v : views) {
    if (!ctx.has_output(v.output)) continue;
    collapse_view(v);
    if (v.dims[0] == 0) continue;
    const Tensor& in = ctx.in_data(v.input);
    Tensor& out = outs[v.output];
    switch (copy_elem_size(ctx, in.dtype)) {
      case 1:
        host_walk(v, in.data<uint8_t>(), out.data<uint8_t>());
        break;
      case 2:
        host_walk(v, in.data<uint16_t>(), out.data<uint16_t>());
        break;
      case 4:
        host_walk(v, in.data<uint32_t>(), out.data<uint32_t>());
        break;
      case 8:
        host_walk(v, in.data<uint64_t>(), out.data<uint64_t>());
        break;
      default:
        ctx.unsupported("unexpected element size");
    }
  }
  for (int o = 0; o < ctx.num_outputs(); ++o)
    if (ctx.has_output(o)) ctx.set_out_data(o, std::move(outs[o]));
}

void run_copies_device(BuildContext& ctx, const std::vector<CopyView>& views) {
  for (CopyView v : views) {
    if (!ctx.has_output(v.output)) continue;
    collapse_view(v);
    const int64_t n = numel(v.dims);
    if (n == 0) continue;
    const std::string opts =
        word_option(ctx, ctx.input(v.input).dtype) +
        index_option({n, numel(ctx.in_shape(v.input)), numel(ctx.out_shape(v.output))});
    const size_t local = ctx.caps().linear_local();
    std::vector<size_t> global{round_up(static_cast<size_t>(n), local)};
    if (v.dims.size() == 1 && v.in_strides[0] == 1 && v.out_strides[0] == 1) {
      ctx.launch("copy", "copy_contiguous", opts, global, {local}, ctx.in_buf(v.input),
                 ctx.out_buf(v.output), v.in_offset, v.out_offset, n);
      continue;
    }
    // A batched transpose (NCHW <-> NHWC, attention heads): [batch,] A, B with the input
    // contiguous along A and the output along B.
    const size_t nd = v.dims.size();
    if ((nd == 2 || nd == 3) && v.in_strides[nd - 2] == 1 && v.out_strides[nd - 1] == 1 && v.dims[nd - 1] < INT32_MAX &&
        v.dims[nd - 2] < INT32_MAX) {
      const int tile = 8;
      const int64_t A = v.dims[nd - 2], B = v.dims[nd - 1], batch = nd == 3 ? v.dims[0] : 1;
      ctx.launch("copy", "copy_transpose", opts + " -DTILE=" + std::to_string(tile),
                 {static_cast<size_t>((A + tile - 1) / tile), static_cast<size_t>((B + tile - 1) / tile),
                  static_cast<size_t>(batch)},
                 {1, 1, 1}, ctx.in_buf(v.input), ctx.out_buf(v.output), v.in_offset, v.out_offset,
                 static_cast<int32_t>(A), static_cast<int32_t>(B), nd == 3 ? v.in_strides[0] : int64_t{0},
                 v.in_strides[nd - 1], nd == 3 ? v.out_strides[0] : int64_t{0}, v.out_strides[nd - 2]);
      continue;
    }
    std::vector<int64_t> p = v.dims;
    p.insert(p.end(), v.in_strides.begin(), v.in_strides.end());
    p.insert(p.end(), v.out_strides.begin(), v.out_strides.end());
    cl_mem pm = ctx.params(p.data(), p.size() * sizeof(int64_t));
    // CPU devices: rows contiguous on both sides move a row (or several short ones) per work-item.
    const int64_t len = v.dims[nd - 1];
    if (ctx.caps().cpu_shaped() && nd >= 2 && v.in_strides[nd - 1] == 1 && v.out_strides[nd - 1] == 1 && len >= 4 &&
        len < INT32_MAX) {
      const int64_t rows = n / len, per = std::max<int64_t>(1, 64 / len);
      ctx.launch("copy", "copy_rows", opts, {static_cast<size_t>((rows + per - 1) / per)}, {1}, ctx.in_buf(v.input),
                 ctx.out_buf(v.output), pm, static_cast<int32_t>(nd), v.in_offset, v.out_offset, rows,
                 static_cast<int32_t>(len), static_cast<int32_t>(per));
      continue;
    }
    ctx.launch("copy", "copy_strided", opts, global, {local}, ctx.in_buf(v.input),
               ctx.out_buf(v.output), pm, static_cast<int32_t>(v.dims.size()), v.in_offset,
               v.out_offset, n);
  }
}

void host_same_bytes(OpContext& ctx, int i, int o) {
  const Tensor& in = ctx.in_data(i);
  Tensor t(in.dtype, ctx.out_shape(o));
  if (t.bytes.size() != in.bytes.size())
    ctx.fail("internal: element count changes from " + ocl_infer::shape_to_string(in.shape) +
             " to " + ocl_infer::shape_to_string(t.shape));
  t.bytes = in.bytes;
  ctx.set_out_data(o, std::move(t));
}

}  // namespace oi
