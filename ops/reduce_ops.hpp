// Index geometry shared by the kernels that reduce over a set of axes: the reductions, and the
// normalizations that compute statistics over rows (LayerNormalization, InstanceNormalization,
// MeanVarianceNormalization).
#pragma once

#include <string>
#include <vector>

#include "ops/build_context.hpp"

namespace oi {

// A row-major tensor's index space split into kept dims (one output per kept index, in row-major
// order of the kept dims) and reduced dims (walked for each output). Size-1 dims are dropped and
// neighbouring dims of the same kind merged, so NK and NR are usually 0 to 2.
struct ReduceGeometry {
  std::vector<int64_t> kept_dims, kept_strides;  // outer to inner, strides in elements
  std::vector<int64_t> red_dims, red_strides;
  int64_t n_out = 1;  // product of kept dims
  int64_t n_red = 1;  // product of reduced dims

  int nk() const { return static_cast<int>(kept_dims.size()); }
  int nr() const { return static_cast<int>(red_dims.size()); }
  // True when the innermost reduced dim is contiguous (stride 1): threads of one work-group then
  // read neighbouring elements.
  bool inner_contiguous() const { return !red_strides.empty() && red_strides.back() == 1; }
  // The kernel parameter block: kept dims, kept strides, reduced dims, reduced strides (int64),
  // never empty. Read by kept_offset()/red_offset() in kernels/reduce.cl and kernels/norm.cl.
  std::vector<int64_t> params() const;
  // "-DNK=.. -DNR=.."
  std::string defines() const;
};

// `reduced[d]` marks the dims of `shape` that are reduced.
ReduceGeometry reduce_geometry(const Shape& shape, const std::vector<bool>& reduced);

// Work-group size for one group per row of n elements. Only two sizes, since each distinct size
// is another kernel build.
inline size_t row_work_group(int64_t n) {
  return n >= 128 ? 128 : 32;
}

// Picks the work-group size for a kernel that keeps one __local array of WG elements: builds
// kernels/<file>.cl:<entry> with `options` + " -DWG=<n>", starting from `want` (a power of two)
// and halving until the device accepts the size for that kernel. Returns n; *opts receives the
// full build options.
size_t pick_work_group(BuildContext& ctx, const std::string& file, const std::string& entry,
                       const std::string& options, size_t want, std::string* opts);

}  // namespace oi
