// Bytes + Flops must not compile: a byte count and a FLOP count are different dimensions.
#include "core/units.h"

void snippet() {
  const cs::Bytes b = cs::bytes(1);
  const cs::Flops f = cs::flops(1);
#ifdef CS_COMPILE_FAIL_CONTROL
  const auto sum = b + b;
#else
  const auto sum = b + f;
#endif
  (void)sum;
  (void)f;
}
