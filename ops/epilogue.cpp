#include "ops/epilogue.hpp"

#include "ops/elementwise.hpp"

namespace oi {

std::string epilogue_defines(const Epilogue& e) {
  using Act = Epilogue::Act;
  std::string s;
  switch (e.act) {
    case Act::None: break;
    case Act::Relu: s += " -DACT_RELU"; break;
    case Act::Clip: s += " -DACT_CLIP"; break;
    case Act::LeakyRelu: s += " -DACT_LEAKYRELU"; break;
    case Act::Sigmoid: s += " -DACT_SIGMOID"; break;
    case Act::Tanh: s += " -DACT_TANH"; break;
    case Act::HardSigmoid: s += " -DACT_HARDSIGMOID"; break;
    case Act::HardSwish: s += " -DACT_HARDSWISH"; break;
    case Act::Silu: s += " -DACT_SILU"; break;
    case Act::Gelu: s += " -DACT_GELU"; break;
  }
  if (e.act == Act::Clip || e.act == Act::LeakyRelu || e.act == Act::HardSigmoid || e.act == Act::HardSwish)
    s += " -DACT_ALPHA=" + float_literal(e.alpha) + " -DACT_BETA=" + float_literal(e.beta);
  if (e.residual >= 0) s += " -DHAS_RESIDUAL";
  return s;
}

}  // namespace oi
