// Shared launcher for kernels/elementwise.cl, used by the elementwise ops and by ops that reduce to
// an elementwise pass (Clip, Sum, Mean, Cast ...).
#pragma once

#include <string>
#include <vector>

#include "ops/op.hpp"

namespace oi {

// Launches `macro` (e.g. "RELU", "ADD", "WHERE") over `inputs` (1 to 3 value ids, broadcast
// numpy-style to the output's shape) writing value `output`. `defines` adds build options such as
// "-DALPHA=0.1f".
void launch_elementwise(OpContext& ctx, const std::string& macro, const std::vector<int>& inputs,
                        int output, const std::string& defines = "");

// A float literal for build options: "0.100000001f", "INFINITY", "(-INFINITY)", "NAN".
std::string float_literal(double v);

// Build options that name the OpenCL types: "-DTA=float -DTO=long [-DUSE_FP64]".
std::string type_defines(const std::vector<std::pair<std::string, DType>>& names);

// Rounds n up to a multiple of `to`.
inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace oi
