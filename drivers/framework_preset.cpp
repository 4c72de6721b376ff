#include "drivers/framework_preset.h"

#include <algorithm>

namespace cs::drv {

void apply_framework_defaults(Framework f, const ConfigNode& n, wl::ParallelPlan& p) {
  const auto unset = [&](const char* key) { return !n.has(key); };
  const auto set_bool = [&](const char* key, bool& field, bool value) {
    if (unset(key)) field = value;
  };
  const auto set_bucket_parameters = [&](double parameters) {
    if (unset("dp_bucket")) p.dp_bucket_mib = parameters * p.grad_reduce_bytes / (1024.0 * 1024.0);
  };
  const bool tp = p.tp > 1;
  switch (f) {
    case Framework::kMegatronLm2021:
      if (unset("recompute")) p.recompute = wl::Recompute::kFull;
      set_bool("flash_attention", p.flash_attention, false);
      set_bool("sequence_parallel", p.sequence_parallel, false);
      set_bool("tp_comm_overlap", p.tp_comm_overlap, false);
      set_bool("dp_overlap", p.dp_overlap, false);
      if (unset("zero")) p.zero = wl::ZeroStage::kNone;
      return;
    case Framework::kMegatronCore:
      set_bool("sequence_parallel", p.sequence_parallel, tp);
      set_bool("tp_comm_overlap", p.tp_comm_overlap, tp && p.sequence_parallel);
      if (unset("zero")) p.zero = wl::ZeroStage::kOptimizer;
      set_bool("overlap_param_gather", p.overlap_param_gather,
               p.zero == wl::ZeroStage::kOptimizer || p.zero == wl::ZeroStage::kGradients);
      set_bool("dp_overlap", p.dp_overlap, true);
      set_bool("flash_attention", p.flash_attention, true);
      if (unset("grad_reduce_dtype")) p.grad_reduce_bytes = 4;
      if (unset("recompute")) p.recompute = wl::Recompute::kNone;
      set_bucket_parameters(std::max(40e6, 1e6 * p.dp));
      return;
    case Framework::kDeepSpeed:
      if (unset("zero")) p.zero = wl::ZeroStage::kParameters;
      if (unset("zero_unit")) p.zero_unit = wl::ZeroUnit::kModule;
      set_bool("reshard_after_forward", p.reshard_after_forward, true);
      set_bool("dp_overlap", p.dp_overlap, true);
      if (unset("grad_reduce_dtype")) p.grad_reduce_bytes = 2;
      set_bucket_parameters(5e8);
      return;
    case Framework::kTorchFsdp:
      if (unset("zero")) p.zero = wl::ZeroStage::kParameters;
      if (unset("zero_unit")) p.zero_unit = wl::ZeroUnit::kLayer;
      set_bool("reshard_after_forward", p.reshard_after_forward, true);
      set_bool("dp_overlap", p.dp_overlap, true);
      set_bool("flash_attention", p.flash_attention, true);
      if (unset("grad_reduce_dtype")) p.grad_reduce_bytes = 2;
      return;
    case Framework::kTorchTitan:
      if (unset("zero")) p.zero = wl::ZeroStage::kParameters;
      if (unset("zero_unit")) p.zero_unit = wl::ZeroUnit::kLayer;
      set_bool("reshard_after_forward", p.reshard_after_forward, true);
      set_bool("dp_overlap", p.dp_overlap, true);
      set_bool("flash_attention", p.flash_attention, true);
      set_bool("sequence_parallel", p.sequence_parallel, tp);
      set_bool("tp_comm_overlap", p.tp_comm_overlap, false);
      if (unset("grad_reduce_dtype")) p.grad_reduce_bytes = 4;
      return;
  }
}

}  // namespace cs::drv
