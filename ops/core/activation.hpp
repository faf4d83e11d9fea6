// The one table of activations. Each row gives everything the runtime needs to know about one
// activation, and every use comes from it:
//   - the elementwise op (ops/elementwise.cpp registers one unary op per row with an ONNX op type),
//   - the kernel expression: the macro ACT_<KERNEL> in kernels/activation.cl, shared by the
//     elementwise kernel and the fused epilogue of conv/gemm/norm kernels (scalar and vector),
//   - host evaluation for constant folding (`host`),
//   - the fusion pass's op -> activation mapping (`onnx_op`, parameters from attributes).
// Adding an activation: one row in ops/core/activation.cpp, one macro in kernels/activation.cl (if
// it is not a composition of existing ones), one reference formula in the tests.
#pragma once

#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

struct ActivationParam {
  const char* attr = nullptr;  // ONNX attribute name; nullptr: the parameter is unused
  float def = 0.0f;            // its default
};

struct ActivationDef {
  const char* name;     // "Relu"; how dumps and profiles name it
  const char* onnx_op;  // the ONNX op that applies exactly this (nullptr: only a fused pattern)
  int since_version;    // of that op
  const char* kernel;   // kernels/activation.cl macro suffix: ACT_<kernel>(x, ALPHA, BETA)
  ActivationParam alpha, beta;
  // Accepts integer inputs as an elementwise op (the macro must then be type-generic).
  bool integers;
  // The macro is exact applied to whole vectors (same bits as lane by lane): kernels may use it on
  // floatN directly; otherwise they apply it lane by lane.
  bool vector_exact;
  // y = f(x) in double, for constant folding (same formula as the kernel macro).
  double (*host)(double x, double alpha, double beta);
  // Functions <vector_fn>_float4/8/16 in activation.cl that apply it to whole vectors (nullptr:
  // none). Unlike vector_exact, a lane may differ from the scalar macro in the last bit where the
  // device's vector exp() does; used where a lane-by-lane loop would leave the work unvectorised.
  const char* vector_fn = nullptr;
};

// Every row, terminated by a row with name == nullptr.
const ActivationDef* activations();
// The row whose onnx_op is `op_type` (default domain), or nullptr.
const ActivationDef* activation_for_op(const std::string& op_type);
// The row named `name`, or nullptr.
const ActivationDef* activation_named(const std::string& name);

// The activation a node applies to its input 0, with its parameters read from the node's
// attributes (or, for Clip from opset 11, from its constant min/max inputs); false when the node is
// not a plain activation or a parameter is not a known constant.
bool activation_of_node(const Graph& g, const Node& n, Epilogue* e);

}  // namespace oi
