// Build options for kernels/epilogue.cl, shared by the kernels that take a fused activation /
// residual add (Node::epilogue).
#pragma once

#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

// "-DEPILOGUE_ACT=ACT_RELU -DEPILOGUE_ACT_VECTOR -DHAS_RESIDUAL ..." for the node's epilogue (""
// when empty), from the activation table's row.
std::string epilogue_defines(const Epilogue& e);

// For kernels that take the epilogue at run time (kernels/epilogue.cl): identity, Relu and Clip
// become the bounds *lo and *hi (else -inf, +inf), the residual is the kernel's pointer (null when
// absent), and only other activations remain as build options, returned.
std::string epilogue_defines_runtime(const Epilogue& e, float* lo, float* hi);

}  // namespace oi
