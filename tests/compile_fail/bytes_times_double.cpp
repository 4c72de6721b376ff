// Scaling Bytes by a real number with * must not compile (bytes(10) * 1.5 was 10): scale()
// names the rounding.
#include "core/units.h"

void snippet() {
  const double factor = 1.5;
#ifdef CS_COMPILE_FAIL_CONTROL
  const cs::Bytes b = cs::scale(cs::bytes(10), factor);
#else
  const cs::Bytes b = cs::bytes(10) * factor;
#endif
  (void)b;
}
