#include "ops/epilogue.hpp"

#include <cstring>
#include <limits>

#include "ops/core/activation.hpp"
#include "ops/elementwise.hpp"

namespace oi {

std::string epilogue_defines(const Epilogue& e) {
  std::string s;
  if (e.act) {
    s += std::string(" -DEPILOGUE_ACT=ACT_") + e.act->kernel;
    if (e.act->vector_exact) s += " -DEPILOGUE_ACT_VECTOR";
    else if (e.act->vector_fn) s += std::string(" -DEPILOGUE_ACT_VECTOR_FN=") + e.act->vector_fn;
    if (e.act->alpha.attr || e.act->alpha.def != 0.0f || e.act->beta.attr || e.act->beta.def != 0.0f)
      s += " -DACT_ALPHA=" + float_literal(e.alpha) + " -DACT_BETA=" + float_literal(e.beta);
  }
  if (e.residual >= 0) s += " -DHAS_RESIDUAL";
  return s;
}

std::string epilogue_defines_runtime(const Epilogue& e, float* lo, float* hi) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  *lo = -kInf;
  *hi = kInf;
  if (e.act && std::strcmp(e.act->kernel, "RELU") == 0) {
    *lo = 0.0f;
  } else if (e.act && std::strcmp(e.act->kernel, "CLIP") == 0) {
    *lo = e.alpha;
    *hi = e.beta;
  } else if (e.act) {
    Epilogue compiled = e;
    compiled.residual = -1;
    return epilogue_defines(compiled);
  }
  return "";
}

}  // namespace oi
