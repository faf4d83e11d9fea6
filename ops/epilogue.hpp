// Build options and arguments for kernels/epilogue.cl, shared by the kernels that take a fused
// activation / residual add (Node::epilogue).
#pragma once

#include <string>

#include "runtime/graph.hpp"

namespace oi {

// "-DACT_RELU -DHAS_RESIDUAL ..." for the node's epilogue ("" when empty).
std::string epilogue_defines(const Epilogue& e);

}  // namespace oi
