// Bandwidth + Bytes must not compile: a rate and an amount are different dimensions.
#include "core/units.h"

void snippet() {
  const cs::Bandwidth bw = cs::gigabits_per_second(400);
  const cs::Bytes b = cs::bytes(1);
#ifdef CS_COMPILE_FAIL_CONTROL
  const auto sum = bw + bw;
#else
  const auto sum = bw + b;
#endif
  (void)sum;
  (void)b;
}
