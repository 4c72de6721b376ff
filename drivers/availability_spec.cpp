#include "drivers/availability_spec.h"

namespace cs::drv {

AvailabilitySpec parse_availability(const ConfigNode& n) {
  n.expect_only({"description", "mtbf_per_gpu", "interruptions", "window", "gpus", "checkpoint_interval", "save_time",
                 "restart_time", "seed"});
  if (auto d = n.find("description")) d->as_string();
  AvailabilitySpec s;
  s.where = n.path();
  if (n.has("mtbf_per_gpu") == n.has("interruptions")) {
    n.fail("expected one of \"mtbf_per_gpu\" (such as \"50700h\") or \"interruptions\" with \"window\" (and \"gpus\")");
  }
  if (auto m = n.find("mtbf_per_gpu")) {
    for (const char* key : {"window", "gpus"}) {
      if (n.has(key)) n.at(key).fail("\"" + std::string(key) + "\" goes with \"interruptions\", not with \"mtbf_per_gpu\"");
    }
    s.mtbf_per_gpu = as_long_duration(*m);
  } else {
    s.interruptions = n.at("interruptions").as_int(1, 1'000'000'000);
    s.window = as_long_duration(n.at("window"));
    if (auto g = n.find("gpus")) s.observed_gpus = static_cast<int>(g->as_int(1, 1 << 24));
  }
  if (auto c = n.find("checkpoint_interval")) {
    if (!(c->is_string() && c->as_string() == "optimal")) s.checkpoint_interval = as_long_duration(*c);
  }
  if (auto v = n.find("save_time")) s.save_time = as_long_duration(*v);
  if (auto v = n.find("restart_time")) s.restart_time = as_long_duration(*v);
  if (auto v = n.find("seed")) s.seed = static_cast<std::uint64_t>(v->as_int(0, std::int64_t{1} << 53));
  return s;
}

}  // namespace cs::drv
