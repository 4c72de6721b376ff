#include "drivers/nccl_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "core/errors.h"
#include "core/unit_parse.h"
#include "drivers/config_paths.h"
#include "drivers/perturbation.h"
#include "hardware/catalog.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"

namespace cs::drv {
namespace {

// nccl-tests prints binary sizes: "1M" = 2^20 bytes.
Bytes nccl_tests_size(const ConfigNode& where, const std::string& label) {
  const char unit = label.empty() ? ' ' : label.back();
  const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : -1;
  std::int64_t n = 0;
  try {
    n = std::stoll(label.substr(0, label.size() - 1));
  } catch (const std::exception&) {
    n = 0;
  }
  if (shift < 0 || n <= 0) where.fail("expected sizes such as \"1K\", \"64M\", \"8G\"; got \"" + label + "\"");
  return Bytes{n << shift};
}

coll::CollectiveSpec all_reduce(const coll::Machine& m, Bytes size) {
  coll::CollectiveSpec spec;
  spec.op = CollectiveOp::kAllReduce;
  spec.size = size;
  spec.ranks.assign(m.cluster.gpus().begin(), m.cluster.gpus().end());
  return spec;
}

// What a record measured: its op ("op", default all_reduce), its ranks ("ranks": the first n GPUs
// of the cluster in rank order, default all) and the algorithm the measurement forced
// ("algorithm", NCCL_ALGO; default auto, NCCL's own choice).
coll::CollectiveSpec record_spec(const ConfigNode& record, const coll::Machine& m, Bytes size) {
  coll::CollectiveSpec spec = all_reduce(m, size);
  if (auto op = record.find("op")) spec.op = op->as_enum(kCollectiveOpNames);
  if (auto ranks = record.find("ranks")) {
    const auto n = static_cast<std::size_t>(ranks->as_int(2, static_cast<std::int64_t>(spec.ranks.size())));
    spec.ranks.resize(n);
  }
  if (auto a = record.find("algorithm")) spec.algorithm = a->as_enum(kCollectiveAlgorithmNames);
  return spec;
}

// The record's own cluster-file overrides ("cluster_overrides": ["/servers/0/count=2"]): the
// bundled cluster resized or changed to the measured machine.
std::vector<std::string> record_cluster_overrides(const ConfigNode& record) {
  std::vector<std::string> out;
  if (auto o = record.find("cluster_overrides")) {
    for (const ConfigNode& e : o->elements()) out.push_back(e.as_string());
  }
  return out;
}

double busbw_GBps(const coll::CollectiveSpec& spec, Duration t) {
  return static_cast<double>(spec.size.value()) / to_seconds(t) / 1e9 * busbw_factor(spec.op, spec.ranks.size());
}

// The minimum of a unimodal f on [lo, hi] to within tol (golden-section search).
double minimize(const std::function<double(double)>& f, double lo, double hi, double tol) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  while (b - a > tol) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = f(d);
    }
  }
  return (a + b) / 2;
}

std::string fixed(double v, int decimals, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v, unit);
  return buf;
}

const SourcedFact& fact_of(const std::string& file, const std::string& constant, const ConfigNode& where) {
  const SourcedFact* f = nullptr;
  if (file.rfind("configs/hardware/", 0) == 0) {
    f = hw::Catalog::builtin().fact(constant);
  } else {
    auto it = coll::ProtocolParams::builtin().facts.find(constant);
    if (it != coll::ProtocolParams::builtin().facts.end()) f = &it->second;
  }
  if (f == nullptr) where.fail("no value \"" + constant + "\" in " + file);
  return *f;
}

}  // namespace

coll::Machine nccl_machine(const std::string& cluster, const MachineOverrides& o) {
  const hw::Catalog catalog = hw::Catalog::builtin_with(o.hardware, "", "overrides");
  return coll::load_machine(resolve_config(cluster, "", "clusters"), o.cluster, catalog);
}

std::vector<NcclPoint> validate_nccl(const ConfigDocument& doc, const OverridesFor& overrides_for) {
  std::vector<NcclPoint> out;
  for (const ConfigNode& record : doc.root().at("records").elements()) {
    const ConfigNode measured = record.at("measured");
    const auto table = measured.find("busbw_GBps_by_size");
    if (!table) continue;
    const std::string cluster = record.at("cluster").as_string();
    MachineOverrides overrides;
    if (overrides_for) overrides = overrides_for(ConfigDocument::load(resolve_config(cluster, "", "clusters")).json());
    std::vector<std::string> cluster_overrides = record_cluster_overrides(record);
    cluster_overrides.insert(cluster_overrides.end(), overrides.cluster.begin(), overrides.cluster.end());
    overrides.cluster = std::move(cluster_overrides);
    const coll::Machine machine = nccl_machine(cluster, overrides);
    coll::CollectiveSimulator sim(machine);
    std::vector<NcclPoint> points;
    for (const auto& [label, published] : table->members()) {
      NcclPoint p;
      p.record = record.at("id").as_string();
      p.use = record.at("use").as_string();
      p.cluster = cluster;
      p.label = label;
      p.size = nccl_tests_size(published, label);
      p.published_busbw_GBps = published.as_number();
      const coll::CollectiveSpec spec = record_spec(record, machine, p.size);
      const coll::CollectiveResult r = sim.run(spec, published.path());
      p.ranks = static_cast<int>(spec.ranks.size());
      p.predicted_busbw_GBps = busbw_GBps(spec, r.time);
      p.algorithm = std::string(to_string(r.algorithm)) + "/" + coll::to_string(r.protocol);
      points.push_back(std::move(p));
    }
    std::stable_sort(points.begin(), points.end(), [](const NcclPoint& a, const NcclPoint& b) { return a.size < b.size; });
    out.insert(out.end(), points.begin(), points.end());
  }
  return out;
}

std::vector<RefitValue> refit_nccl(const ConfigDocument& doc) {
  std::vector<RefitValue> out;
  for (const ConfigNode& record : doc.root().at("records").elements()) {
    const auto fits = record.find("fits");
    if (!fits) continue;
    const std::string id = record.at("id").as_string();
    const ConfigNode measured = record.at("measured");
    for (const auto& [constant, how] : fits->members()) {
      const std::string file = how.as_string().substr(0, how.as_string().find(':'));
      const SourcedFact& fact = fact_of(file, constant, how);
      RefitValue v{constant, file, id, "", fact.value, how.as_string().substr(file.size() + 2)};
      const std::string cluster = resolve_config(record.at("cluster").as_string(), "", "clusters");
      const nlohmann::json cluster_doc = ConfigDocument::load(cluster).json();
      if (constant == "/link_classes/nvlink/efficiency") {
        // The NCCL developer's figures: effective per-link rate after the 128-byte payload over
        // the line rate.
        v.fitted = fixed(measured.at("effective_after_128B_payload_GBps").as_number() /
                             measured.at("nvlink_line_rate_per_dir_GBps").as_number(), 2, "");
      } else if (constant == "/link_classes/nvlink/step_latency") {
        // Least squares in log busbw over the record's sizes >= 1 MiB, the step latency varied.
        const ConfigNode table = measured.at("busbw_GBps_by_size");
        auto cost = [&](double step_us) {
          const Perturbation p = set_value(fact, fixed(step_us * 1e6, 0, "ps"), cluster_doc);
          const coll::Machine m = nccl_machine(record.at("cluster").as_string(), {p.cluster_overrides, p.hardware_overrides});
          coll::CollectiveSimulator sim(m);
          double sum = 0;
          for (const auto& [label, published] : table.members()) {
            const Bytes size = nccl_tests_size(published, label);
            if (size < Bytes{1 << 20}) continue;
            const coll::CollectiveSpec spec = all_reduce(m, size);
            const double e = std::log(busbw_GBps(spec, sim.run(spec).time) / published.as_number());
            sum += e * e;
          }
          return sum;
        };
        v.fitted = fixed(minimize(cost, 0.5, 50.0, 0.01), 1, "us");
      } else if (constant.rfind("/nvlink/", 0) == 0 && constant.ends_with("/switch_reduction_per_gpu")) {
        // The rate at which the simulated NVLS all-reduce of 8 GiB over the node's GPUs reaches
        // the published NVLS algbw (the busbw grows with the rate until NVLink bounds it).
        const double target = measured.at("allreduce_nvls_algbw_GBps").as_number();
        auto algbw = [&](double rate_GBps) {
          const Perturbation p = set_value(fact, fixed(rate_GBps, 3, "GB/s"), cluster_doc);
          const coll::Machine m = nccl_machine(record.at("cluster").as_string(), {p.cluster_overrides, p.hardware_overrides});
          coll::CollectiveSimulator sim(m);
          const coll::CollectiveSpec spec = all_reduce(m, Bytes{std::int64_t{8} << 30});
          std::string why;
          const auto r = sim.run_fixed(spec, CollectiveAlgorithm::kNvls, coll::Protocol::kSimple, &why);
          if (!r) throw InternalError("NVLS does not apply to " + cluster + ": " + why);
          return static_cast<double>(spec.size.value()) / to_seconds(r->time) / 1e9;
        };
        double lo = 10, hi = 5000;
        for (int i = 0; i < 60 && hi - lo > 0.01; ++i) {
          const double mid = (lo + hi) / 2;
          (algbw(mid) < target ? lo : hi) = mid;
        }
        v.fitted = fixed((lo + hi) / 2, 0, "GB/s");
      } else {
        how.fail("no refit procedure for \"" + constant + "\" (clustersim knows the NVLink efficiency and step latency and the NVSwitch reduction rate)");
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace cs::drv
