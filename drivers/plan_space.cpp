#include "drivers/plan_space.h"

#include <algorithm>

#include "core/errors.h"
#include "workloads/memory.h"

namespace cs::drv {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// A reason for a plan validate_plan refuses, by the key it names.
std::string reason_of(const ConfigError& e) {
  const std::string& p = e.json_path();
  if (p == "/tp") return "tp does not suit the model's heads";
  if (p == "/cp" || p == "/cp_comm_type") return "cp does not divide the sequence or the heads";
  if (p == "/ep") return "ep does not divide the experts";
  if (p == "/global_batch" || p == "/micro_batch") return "the batch does not split into enough micro-batches";
  if (p == "/pp" || p == "/layers_per_stage" || p == "/virtual_stages") return "the layers do not split into the stages";
  return "refused at " + p;
}

// Whether `f` offers plan `p` (plan_space.h lists the rules).
bool framework_offers(Framework f, const wl::ParallelPlan& p) {
  using S = wl::PipelineSchedule;
  switch (f) {
    case Framework::kMegatronLm2021:
      return p.zero == wl::ZeroStage::kNone && !p.sequence_parallel && p.recompute != wl::Recompute::kSelective && p.cp == 1 &&
             p.schedule != S::kZbH1;
    case Framework::kMegatronCore:
      return p.zero <= wl::ZeroStage::kOptimizer && p.schedule != S::kZbH1;
    case Framework::kDeepSpeed:
      return p.schedule == S::kOneFOneB && p.cp == 1;
    case Framework::kTorchFsdp:
      return p.tp == 1 && p.pp == 1 && p.cp == 1 && (p.zero == wl::ZeroStage::kGradients || p.zero == wl::ZeroStage::kParameters) &&
             p.recompute != wl::Recompute::kSelective;
    case Framework::kTorchTitan:
      return p.zero == wl::ZeroStage::kParameters;
  }
  return true;
}

}  // namespace

std::string describe_plan(const wl::ParallelPlan& p) {
  std::string s = "tp " + std::to_string(p.tp) + " pp " + std::to_string(p.pp) + " dp " + std::to_string(p.dp);
  if (p.cp > 1) s += " cp " + std::to_string(p.cp);
  if (p.ep > 1) s += " ep " + std::to_string(p.ep);
  s += " mb " + std::to_string(p.micro_batch) + " " + enum_name(wl::kPipelineScheduleNames, p.schedule);
  if (p.schedule == wl::PipelineSchedule::kInterleaved) s += " v " + std::to_string(p.virtual_stages);
  s += " zero " + std::to_string(static_cast<int>(p.zero));
  s += std::string(" recompute ") + enum_name(wl::kRecomputeNames, p.recompute);
  if (p.sequence_parallel) s += " sp";
  return s;
}

PlanSpace enumerate_plans(const wl::Model& model, const wl::ParallelPlan& base, int gpus, const hw::GpuSpec& gpu,
                          const SpaceOptions& options) {
  const std::set<std::string>& keep = options.keep;
  const int per_server = options.per_server;
  PlanSpace space;
  const auto kept = [&](const char* dim) { return keep.count(dim) > 0; };
  // The values of a dimension: all of them, or the base plan's alone when it is kept.
  const auto only = [&](const char* dim, auto all, auto base_value) {
    return kept(dim) ? decltype(all){base_value} : all;
  };
  const bool transformer = model.family == wl::ModelFamily::kTransformer;
  const int layers = wl::pipeline_layers(model);
  const int heads = transformer ? model.transformer.heads : 1;
  const bool moe = transformer && model.transformer.is_moe();
  const auto drop = [&](const std::string& why, std::size_t n = 1) {
    space.dropped[why] += n;
    space.considered += n;
  };
  for (int tp : only("tp", divisors(gpus), base.tp)) {
    if (gpus % tp != 0 || (!transformer && tp > 1) || heads % tp != 0) continue;  // not formed: tp must divide the heads
    // Not formed: tensor parallelism stays inside a server, every group of it (tp divides the server).
    if ((tp > per_server || per_server % tp != 0) && !kept("tp")) continue;
    std::vector<int> cps = {1};
    if (transformer && base.sequence_length >= 8192) {
      for (int c = 2; c <= 8; c *= 2) {
        if ((gpus / tp) % c == 0 && base.sequence_length % c == 0) cps.push_back(c);
      }
    }
    for (int cp : only("cp", cps, base.cp)) {
      if ((gpus / tp) % cp != 0) continue;
      for (int pp : only("pp", divisors(gpus / (tp * cp)), base.pp)) {
        if ((gpus / (tp * cp)) % pp != 0 || pp > layers || (layers % pp != 0 && !kept("pp"))) continue;  // not formed: an even split only
        const int dp = gpus / (tp * cp * pp);
        std::vector<int> eps = {1};
        if (kept("ep")) {
          eps = {base.ep};
        } else if (moe) {
          eps.clear();
          for (int e : divisors(dp * cp)) {
            if (model.transformer.experts % e == 0) eps.push_back(e);
          }
        }
        std::vector<std::pair<wl::PipelineSchedule, int>> schedules = {{wl::PipelineSchedule::kOneFOneB, 1}};
        if (kept("schedule")) {
          schedules = {{base.schedule, base.virtual_stages}};
        } else if (pp > 1) {
          schedules.push_back({wl::PipelineSchedule::kZbH1, 1});
          for (int v : {2, 3, 4, 6, 8}) {
            if ((layers / pp) % v == 0) schedules.push_back({wl::PipelineSchedule::kInterleaved, v});
          }
        }
        std::vector<int> mbs;
        for (int b = 1; b <= 1024; b *= 2) mbs.push_back(b);
        if (std::find(mbs.begin(), mbs.end(), base.micro_batch) == mbs.end()) mbs.push_back(base.micro_batch);
        std::sort(mbs.begin(), mbs.end());
        if (kept("micro_batch")) mbs = {base.micro_batch};
        const std::vector<wl::ZeroStage> zeros = only(
            "zero",
            pp == 1 ? std::vector<wl::ZeroStage>{wl::ZeroStage::kNone, wl::ZeroStage::kOptimizer, wl::ZeroStage::kGradients, wl::ZeroStage::kParameters}
                    : std::vector<wl::ZeroStage>{wl::ZeroStage::kNone, wl::ZeroStage::kOptimizer},
            base.zero);
        const std::vector<wl::Recompute> recomputes = only(
            "recompute",
            transformer ? std::vector<wl::Recompute>{wl::Recompute::kNone, wl::Recompute::kSelective, wl::Recompute::kFull}
                        : std::vector<wl::Recompute>{wl::Recompute::kNone},
            base.recompute);
        const std::vector<bool> sps = only("sequence_parallel", tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false},
                                           base.sequence_parallel && tp > 1);
        const std::size_t per_mb = eps.size() * schedules.size() * zeros.size() * recomputes.size() * sps.size();
        if (base.global_batch % dp != 0) {
          drop("the global batch does not split over the data-parallel replicas", mbs.size() * per_mb);
          continue;
        }
        const int per_replica = base.global_batch / dp;
        for (int mb : mbs) {
          if (per_replica % mb != 0) {
            drop("the micro-batch does not divide the batch per replica", per_mb);
            continue;
          }
          const int m = per_replica / mb;
          for (int ep : eps) {
            for (const auto& [schedule, v] : schedules) {
              const std::size_t per_schedule = zeros.size() * recomputes.size() * sps.size();
              if (pp > 1 && m < pp) {
                drop("fewer micro-batches than pipeline stages", per_schedule);
                continue;
              }
              if (schedule == wl::PipelineSchedule::kInterleaved && m % pp != 0) {
                drop("interleaved: micro-batches not a multiple of the stages", per_schedule);
                continue;
              }
              for (wl::ZeroStage zero : zeros) {
                for (wl::Recompute recompute : recomputes) {
                  for (bool sp : sps) {
                    wl::ParallelPlan p = base;
                    p.tp = tp, p.cp = cp, p.pp = pp, p.dp = dp, p.ep = ep;
                    p.schedule = schedule;
                    p.virtual_stages = v;
                    p.layers_per_stage.clear();
                    p.micro_batch = mb;
                    p.zero = zero;
                    if (zero != wl::ZeroStage::kParameters) p.zero_prefetch = 1;
                    p.recompute = recompute;
                    p.sequence_parallel = sp;
                    // The base plan's overlap flags where they apply to this plan (a framework
                    // preset sets them for its usual plans): the parameter all-gather's with
                    // ZeRO-1/2, TP communication overlap with sequence parallelism.
                    if (zero != wl::ZeroStage::kOptimizer && zero != wl::ZeroStage::kGradients) p.overlap_param_gather = false;
                    if (tp == 1 || !sp) p.tp_comm_overlap = false;
                    if (options.framework && !framework_offers(*options.framework, p)) {
                      drop(std::string("not a plan ") + enum_name(kFrameworkNames, *options.framework) + " offers");
                      continue;
                    }
                    try {
                      const wl::MemoryEstimate mem = wl::peak_memory(wl::estimate_memory(model, p, gpu));
                      if (static_cast<double>(mem.total.value()) > (1 - options.headroom) * static_cast<double>(mem.capacity.value())) {
                        drop(mem.fits ? "fits in GPU memory without the headroom" : "does not fit in GPU memory");
                        continue;
                      }
                    } catch (const ConfigError& e) {
                      drop(reason_of(e));
                      continue;
                    }
                    ++space.considered;
                    space.plans.push_back(std::move(p));
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return space;
}

}  // namespace cs::drv
