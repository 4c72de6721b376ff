// Constructing Bytes from a real number must not compile (it would truncate silently):
// Bytes(1.5) was 1 before the floating-point constructor was deleted.
#include "core/units.h"

void snippet() {
  const double size = 1.5;
#ifdef CS_COMPILE_FAIL_CONTROL
  const cs::Bytes b = cs::scale(cs::bytes(1), size);
#else
  const cs::Bytes b(size);
#endif
  (void)b;
}
