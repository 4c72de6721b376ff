// `clustersim validate profile FILE`: every measured point of a calibration profile against what
// the simulator predicts for it with that profile's models.
//   collectives  simulated on the profile's machine rebuilt from the catalog
//                (drivers/inventory_machine.h) with the profile's link efficiencies and step
//                latencies and its collective launch latency;
//                a point measured with a forced algorithm runs with it, and with the forced
//                protocol or else the faster one;
//   GEMMs        the profile's compute model with the point itself left out of the table
//                (leave-one-out: how well the table and the curve predict an unmeasured shape);
//   memory       the fitted t0 + bytes / bandwidth.
// Errors are summarised per kind, link class and size range (docs/calibration.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/cli_common.h"
#include "apps/cmd_validate.h"
#include "calibration/profile_model.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/inventory_machine.h"
#include "sim/collectives/collective_simulator.h"

namespace cs::cli {
namespace {

struct Checked {
  std::string kind;   // "collective", "gemm", "memory"
  std::string group;  // "all_reduce nvlink", ...
  std::string what;   // one line describing the point
  std::string range;  // size range
  double measured_s = 0, predicted_s = 0;
  std::string provenance;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

std::string byte_range(Bytes b) {
  if (b.value() < 64 * 1024) return "< 64 KiB";
  if (b.value() < 16 * 1024 * 1024) return "64 KiB - 16 MiB";
  return ">= 16 MiB";
}

std::string flop_range(Flops f) {
  if (f.value() < 1e9) return "< 1 GFLOP";
  if (f.value() < 1e11) return "1 - 100 GFLOP";
  return ">= 100 GFLOP";
}

// Nothing for "auto" and "ll128": the simulator picks.
std::optional<coll::Protocol> protocol(const std::string& p) { return parse_enum(coll::kProtocolNames, p); }

void check_collectives(const cal::ProfileModel& pm, const ValidateOptions& o, std::vector<Checked>& out) {
  const cal::Profile& p = pm.profile();
  if (p.collectives.empty()) return;
  coll::Machine machine = drv::inventory_machine(p.inventory, o.nic, o.profile);
  machine.protocol = drv::calibrate_protocol(pm, machine.protocol).protocol;
  coll::CollectiveSimulator sim(machine);
  const auto gpus = machine.cluster.gpus();
  for (std::size_t i = 0; i < p.collectives.size(); ++i) {
    const cal::CollectivePoint& c = p.collectives[i];
    if (c.status != cal::PointStatus::kOk || !c.timing) continue;
    const std::string where = "/points/collectives/" + std::to_string(i);
    if (c.ranks < 2 || static_cast<std::size_t>(c.ranks) > gpus.size()) {
      throw ConfigError(o.profile, where + "/ranks", "expected 2 to " + std::to_string(gpus.size()) + " ranks (the inventory's GPUs)");
    }
    coll::CollectiveSpec spec;
    spec.op = *parse_collective_op(c.op);
    spec.size = c.bytes;
    spec.ranks.assign(gpus.begin(), gpus.begin() + c.ranks);
    // A forced algorithm runs forced, with the forced protocol or else the faster one (as NCCL's
    // tuner picks the protocol when only NCCL_ALGO is set).
    const auto algo = parse_collective_algorithm(c.algorithm);
    const auto proto = protocol(c.protocol);
    std::optional<coll::CollectiveResult> r;
    if (c.algorithm != "auto" && algo) {
      spec.algorithm = *algo;
      if (proto) r = sim.run_fixed(spec, *algo, *proto, nullptr);
    }
    const Duration predicted = r ? r->time : sim.run(spec, c.algorithm != "auto" ? where + "/algorithm" : where).time;
    Checked k;
    k.kind = "collective";
    k.group = c.op + " " + c.link_class;
    k.what = c.op + " " + std::to_string(c.ranks) + " ranks " + format_bytes(c.bytes) + " " + c.algorithm + "/" + c.protocol;
    k.range = byte_range(c.bytes);
    k.measured_s = to_seconds(c.timing->median);
    k.predicted_s = to_seconds(predicted);
    k.provenance = "simulated";
    if (k.measured_s > 0) out.push_back(k);
  }
}

void check_gemms(const cal::ProfileModel& pm, std::vector<Checked>& out) {
  const cal::Profile& p = pm.profile();
  for (const cal::GemmPoint& g : p.gemm) {
    if (g.status != cal::PointStatus::kOk || !g.timing || !pm.has_gemm(g.shape.dtype)) continue;
    // The models alone, with this shape left out of its dtype's table.
    cal::Profile loo;
    loo.models.gemm = p.models.gemm;
    for (cal::GemmModel& m : loo.models.gemm) {
      if (m.dtype != g.shape.dtype) continue;
      std::erase_if(m.table, [&](const cal::GemmTableEntry& e) { return e.m == g.shape.m && e.n == g.shape.n && e.k == g.shape.k; });
    }
    const cal::Estimate e = cal::ProfileModel(std::move(loo)).gemm(g.shape);
    Checked k;
    k.kind = "gemm";
    k.group = "gemm " + g.shape.dtype;
    k.what = g.shape.dtype + " " + std::to_string(g.shape.m) + "x" + std::to_string(g.shape.n) + "x" + std::to_string(g.shape.k);
    k.range = flop_range(g.shape.flops());
    k.measured_s = to_seconds(g.timing->median);
    k.predicted_s = to_seconds(e.time);
    k.provenance = cal::to_string(e.provenance);
    if (k.measured_s > 0) out.push_back(k);
  }
}

void check_memory(const cal::ProfileModel& pm, std::vector<Checked>& out) {
  for (const cal::MemoryPoint& m : pm.profile().memory) {
    if (m.status != cal::PointStatus::kOk || !m.timing) continue;
    const auto e = pm.memory(m.bytes);
    if (!e) return;
    Checked k;
    k.kind = "memory";
    k.group = "memory " + m.kernel;
    k.what = m.kernel + " " + format_bytes(m.bytes);
    k.range = byte_range(m.bytes);
    k.measured_s = to_seconds(m.timing->median);
    k.predicted_s = to_seconds(e->time);
    k.provenance = cal::to_string(e->provenance);
    if (k.measured_s > 0) out.push_back(k);
  }
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return quantile(v, q);
}

}  // namespace

int run_validate_profile(const ValidateOptions& o) {
  const cal::ProfileModel pm(cal::load_profile(o.profile));
  std::vector<Checked> points;
  check_collectives(pm, o, points);
  check_gemms(pm, points);
  check_memory(pm, points);

  // Groups: (kind group, size range), in a stable order.
  std::map<std::pair<std::string, std::string>, std::vector<double>> groups;
  for (const Checked& k : points) groups[{k.group, k.range}].push_back(std::fabs(k.error()));
  nlohmann::json jgroups = nlohmann::json::array();
  for (const auto& [key, errors] : groups) {
    jgroups.push_back({{"group", key.first}, {"range", key.second}, {"points", errors.size()},
                       {"median_abs_error_pct", 100 * percentile(errors, 0.5)},
                       {"p90_abs_error_pct", 100 * percentile(errors, 0.9)},
                       {"worst_abs_error_pct", 100 * percentile(errors, 1.0)}});
  }
  const cal::Profile& p = pm.profile();
  if (o.json) {
    nlohmann::json jp = nlohmann::json::array();
    for (const Checked& k : points) {
      jp.push_back({{"kind", k.kind}, {"group", k.group}, {"point", k.what}, {"range", k.range},
                    {"measured_s", k.measured_s}, {"predicted_s", k.predicted_s}, {"error_pct", 100 * k.error()},
                    {"provenance", k.provenance}});
    }
    const nlohmann::json out = {{"profile", o.profile}, {"kind", p.provenance.kind}, {"groups", jgroups}, {"points", jp}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "clustersim validate profile: " << o.profile << " (" << p.provenance.kind << ", "
            << (p.inventory.gpus.empty() ? std::string("no GPU") : p.inventory.gpus.front().name) << ", "
            << points.size() << " points)\n"
            << "  collectives simulated on the rebuilt machine with the profile's link efficiencies; GEMMs leave-one-out\n"
            << "  group                      size range          points   median |err|   p90 |err|   worst\n";
  for (const auto& g : jgroups) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-26s %-18s %7d %13.1f%% %10.1f%% %7.1f%%\n", g["group"].get<std::string>().c_str(),
                  g["range"].get<std::string>().c_str(), g["points"].get<int>(), g["median_abs_error_pct"].get<double>(),
                  g["p90_abs_error_pct"].get<double>(), g["worst_abs_error_pct"].get<double>());
    std::cout << line;
  }
  if (!points.empty()) {
    const auto worst = std::max_element(points.begin(), points.end(),
                                        [](const Checked& a, const Checked& b) { return std::fabs(a.error()) < std::fabs(b.error()); });
    std::cout << "  worst point: " << worst->what << ": measured " << format_duration(duration_from_seconds(worst->measured_s))
              << ", predicted " << format_duration(duration_from_seconds(worst->predicted_s)) << " ("
              << fixed(100 * worst->error(), 1) << "%)\n";
  }
  return 0;
}

}  // namespace cs::cli
