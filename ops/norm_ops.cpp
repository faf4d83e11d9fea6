// Placeholder: this family's rows are not written yet.
#include "ops/op.hpp"

namespace oi {

void add_norm_ops(std::vector<OpDef>&) {}

}  // namespace oi
