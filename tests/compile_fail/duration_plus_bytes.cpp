// Duration + Bytes must not compile: a length of time and a byte count are different dimensions.
#include "core/units.h"

void snippet() {
  const cs::Duration d = cs::nanoseconds(1);
  const cs::Bytes b = cs::bytes(1);
#ifdef CS_COMPILE_FAIL_CONTROL
  const auto sum = d + d;
#else
  const auto sum = d + b;
#endif
  (void)sum;
  (void)b;
}
