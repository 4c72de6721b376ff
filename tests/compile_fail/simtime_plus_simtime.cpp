// SimTime + SimTime must not compile: two points on the clock do not add (a point plus a
// Duration does).
#include "core/units.h"

void snippet() {
  const cs::SimTime t1 = cs::kTimeZero + cs::nanoseconds(1);
  const cs::SimTime t2 = cs::kTimeZero + cs::nanoseconds(2);
#ifdef CS_COMPILE_FAIL_CONTROL
  const auto sum = t1 + (t2 - t1);
#else
  const auto sum = t1 + t2;
#endif
  (void)sum;
}
