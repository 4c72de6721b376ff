// Must compile: the correct operations next to each misuse the other snippets try, with the same
// include and command line. If this fails, the compile_fail tests prove nothing.
#include "core/units.h"

#include <type_traits>

void snippet() {
  const cs::Bytes b = cs::bytes(1) + cs::bytes(2);
  const cs::Flops f = cs::flops(1) + cs::flops(2);
  const cs::SimTime t = cs::kTimeZero + cs::nanoseconds(1);
  const cs::Duration d = (t - cs::kTimeZero) + cs::nanoseconds(1);
  const cs::Bandwidth bw = cs::gigabits_per_second(400) + cs::gigabytes_per_second(1);
  cs::Bytes assigned = cs::bytes(0);
  assigned = cs::scale(b, 1.5);
  const cs::Duration moved = cs::transfer_time(b, bw) + cs::compute_time(f, cs::teraflops_per_second(1));
  static_assert(std::is_same_v<decltype(t - t), cs::Duration>);
  (void)d;
  (void)assigned;
  (void)moved;
}
