#include "drivers/serving_capacity.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "drivers/serving_sim.h"
#include "sim/collectives/machine.h"

namespace cs::drv {
namespace {

void require_slo(const ServingScenario& s) {
  if (s.slo.ttft.count() == 0 && s.slo.tpot.count() == 0) {
    throw ConfigError(s.file, "/slo", "capacity planning needs an SLO: \"slo\": {\"ttft\": ..., \"tpot\": ...}");
  }
}

// The mean offered rate of a scenario's stream, requests per second.
double offered_rate(const ServingScenario& s, const results::ServingMetrics& m, const results::ServingRun& run) {
  if (s.requests.trace.empty()) return s.requests.rate;
  SimTime last = kTimeZero;
  for (const auto& r : run.requests) last = std::max(last, r.arrival);
  const double span = to_seconds(last - run.requests.front().arrival);
  return span > 0 ? static_cast<double>(m.requests - 1) / span : 0;
}

CapacityProbe probe(const ServingScenario& s, double load) {
  const results::ServingRun run = simulate_serving(s);
  CapacityProbe p;
  p.load = load;
  p.metrics = results::serving_metrics(run);
  p.rate = offered_rate(s, p.metrics, run);
  p.meets = meets_slo(s, p.metrics);
  return p;
}

ServingScenario at_load(const ServingScenario& base, double load) {
  ServingScenario s = base;
  if (s.requests.trace.empty()) {
    s.requests.rate = base.requests.rate * load;
  } else {
    s.requests.time_scale = base.requests.time_scale / load;
  }
  return s;
}

// Narrows [pass, fail] (a load that meets the SLO, one that does not) until `close`, keeping the
// best probe that met it.
template <class T, class Run, class Mid, class Close>
void bisect(T& pass, T& fail, CapacityResult& out, Run run, Mid mid, Close close) {
  while (!close(pass, fail)) {
    const T m = mid(pass, fail);
    CapacityProbe p = run(m);
    if (p.meets) {
      pass = m;
      out.best = p;
    } else {
      fail = m;
    }
  }
}

}  // namespace

bool meets_slo(const ServingScenario& s, const results::ServingMetrics& m) {
  if (m.completed == 0 || m.lost > 0 || m.rejected > 0) return false;
  if (s.slo.ttft.count() > 0 && m.ttft.p90 > to_seconds(s.slo.ttft)) return false;
  if (s.slo.tpot.count() > 0 && m.tpot.count > 0 && m.tpot.p99 > to_seconds(s.slo.tpot)) return false;
  return true;
}

CapacityResult find_max_rate(const ServingScenario& base, double tolerance) {
  require_slo(base);
  CapacityResult out;
  const auto run = [&](double load) {
    out.probes.push_back(probe(at_load(base, load), load));
    return out.probes.back();
  };
  double lo = 0, hi = 0;
  CapacityProbe first = run(1.0);
  if (first.meets) {
    lo = 1;
    out.best = first;
    for (double x = 2; x <= 1 << 20; x *= 2) {
      CapacityProbe p = run(x);
      if (!p.meets) {
        hi = x;
        break;
      }
      lo = x;
      out.best = p;
    }
    if (hi == 0) return out;  // met at every load tried
  } else {
    hi = 1;
    for (double x = 0.5; x >= 1.0 / (1 << 20); x /= 2) {
      CapacityProbe p = run(x);
      if (p.meets) {
        lo = x;
        out.best = p;
        break;
      }
      hi = x;
    }
    if (lo == 0) return out;  // no load meets the SLO
  }
  bisect(lo, hi, out, run, [](double a, double b) { return std::sqrt(a * b); },
         [&](double pass, double fail) { return (fail - pass) / pass <= tolerance; });
  return out;
}

CapacityResult find_min_replicas(const ServingScenario& base) {
  require_slo(base);
  CapacityResult out;
  const auto run = [&](int n) {
    ServingScenario s = base;
    s.replicas = n;
    s.failures.events.clear();  // failure events name replicas of the base deployment
    out.probes.push_back(probe(s, n));
    return out.probes.back();
  };
  const coll::Machine machine = coll::load_machine(base.cluster, base.cluster_overrides);
  const int most = static_cast<int>((static_cast<std::int64_t>(machine.cluster.gpus().size()) - base.first_gpu) / base.tp);
  if (most < 1) throw ConfigError(base.file, "/replicas", "the cluster has no room for one replica");
  int lo = 0, hi = 0;  // lo fails (0: none tried), hi meets
  for (int n = 1;; n = std::min(2 * n, most)) {
    CapacityProbe p = run(n);
    if (p.meets) {
      hi = n;
      out.best = p;
      break;
    }
    lo = n;
    if (n == most) return out;  // even the whole cluster does not meet the SLO
  }
  bisect(hi, lo, out, run, [](int a, int b) { return b + (a - b) / 2; }, [](int pass, int fail) { return pass - fail <= 1; });
  return out;
}

}  // namespace cs::drv
