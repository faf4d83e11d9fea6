// Placeholder: this family's rows are not written yet.
#include "ops/op.hpp"

namespace oi {

void add_conv_ops(std::vector<OpDef>&) {}

}  // namespace oi
