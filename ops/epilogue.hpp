// Build options for kernels/epilogue.cl, shared by the kernels that take a fused activation /
// residual add (Node::epilogue).
#pragma once

#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

// "-DEPILOGUE_ACT=ACT_RELU -DEPILOGUE_ACT_VECTOR -DHAS_RESIDUAL ..." for the node's epilogue (""
// when empty), from the activation table's row.
std::string epilogue_defines(const Epilogue& e);

}  // namespace oi
