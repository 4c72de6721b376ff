// Assigning a double to Bytes must not compile: a byte count is built explicitly from a whole
// number (bytes(n), or scale() when a real factor is meant).
#include "core/units.h"

void snippet() {
  cs::Bytes b = cs::bytes(1);
  const double size = 1.5;
#ifdef CS_COMPILE_FAIL_CONTROL
  b = cs::scale(cs::bytes(1), size);
#else
  b = size;
#endif
  (void)b;
}
