// Shared launcher for kernels/elementwise.cl, used by the elementwise ops and by ops that reduce to
// an elementwise pass (Clip, Sum, Mean, Cast ...).
#pragma once

#include <string>
#include <vector>

#include "ops/build_context.hpp"

namespace oi {

struct ActivationDef;

// Launches `macro` (e.g. "ADD", "WHERE", "CAST") over `inputs` (1 to 3 operands, broadcast
// numpy-style to the output's shape) writing `out`; element types come from the operands' storage
// types. `defines` adds build options such as "-DALPHA=0.1f".
void launch_elementwise(BuildContext& ctx, const std::string& macro, const std::vector<Operand>& inputs,
                        const Operand& out, const std::string& defines = "");

// y = act(x) for a row of the activation table, with its parameters.
void launch_activation(BuildContext& ctx, const ActivationDef& act, double alpha, double beta, const Operand& in,
                       const Operand& out);

// A float literal for build options: "0.100000001f", "INFINITY", "(-INFINITY)", "NAN".
std::string float_literal(double v);

// Build options that name the OpenCL types: "-DTA=float -DTO=long [-DUSE_FP64]"; a float16
// operand TX also gets "-DSX=F16 -DCX=float" (kernels/storage.cl: stored as half, computed in
// float).
std::string type_defines(const std::vector<std::pair<std::string, DType>>& names);

// Rounds n up to a multiple of `to`.
inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace oi
