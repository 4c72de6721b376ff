// `clustersim validate nccl`: NCCL all-reduce bus bandwidth on one 8-GPU node against published
// nccl-tests results (configs/validation/nccl-single-node.json), or, with --table, another file of
// records (configs/validation/nccl-multi-node.json: several servers). Fit records (constants were
// fitted on them) and check records are reported apart; --refit reproduces each fitted constant
// from its records; --sensitivity shows which values each point rests on.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "apps/cli_common.h"
#include "apps/cmd_validate.h"
#include "core/config.h"
#include "core/statistics.h"
#include "drivers/nccl_validation.h"
#include "drivers/sensitivity.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::cli {
namespace {

// Sizes of at least this many bytes are summarised (smaller ones are a few microseconds of
// latency, printed but not summarised).
constexpr std::int64_t kSummarisedFrom = std::int64_t{1} << 20;

nlohmann::json summary(const std::vector<drv::NcclPoint>& points, const std::string& use) {
  std::vector<double> e;
  for (const auto& p : points) {
    if (p.use == use && p.size.value() >= kSummarisedFrom) e.push_back(std::fabs(p.error()));
  }
  if (e.empty()) return {{"points", 0}};
  return {{"points", e.size()}, {"median_abs_error_pct", 100 * median(e)},
          {"worst_abs_error_pct", 100 * *std::max_element(e.begin(), e.end())}};
}

}  // namespace

int run_validate_nccl(const ValidateOptions& o) {
  const ConfigDocument doc = ConfigDocument::load(o.table.empty() ? std::string(CS_CONFIG_DIR) + "/validation/nccl-single-node.json" : o.table);
  if (o.refit) {
    const auto values = drv::refit_nccl(doc);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : values) {
      out.push_back({{"value_of", v.constant}, {"file", v.file}, {"record", v.record}, {"fitted", v.fitted}, {"in_use", v.in_use},
                     {"how", v.how}});
      if (!o.json) {
        std::cout << v.constant << " (" << v.file << "): " << v.fitted << " from record " << v.record << " (in use: " << v.in_use
                  << ")\n    " << v.how << "\n";
      }
    }
    if (o.json) std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (o.sensitivity) {
    const auto rows = drv::nccl_sensitivity(doc, {0.9, 1.1}, progress_line);
    clear_progress();
    std::vector<std::string> names;
    for (const auto& p : drv::validate_nccl(doc)) names.push_back(p.cluster.substr(4) + " " + p.label);
    print_sensitivity(rows, names, o.json);
    return 0;
  }
  const auto points = drv::validate_nccl(doc);
  if (o.json) {
    nlohmann::json jp = nlohmann::json::array();
    for (const auto& p : points) {
      jp.push_back({{"record", p.record}, {"use", p.use}, {"cluster", p.cluster}, {"ranks", p.ranks}, {"size", p.label}, {"bytes", p.size.value()},
                    {"published_busbw_GBps", p.published_busbw_GBps}, {"predicted_busbw_GBps", p.predicted_busbw_GBps},
                    {"error_pct", 100 * p.error()}, {"algorithm", p.algorithm}});
    }
    const nlohmann::json out = {{"points", jp}, {"fit", summary(points, "fit")}, {"check", summary(points, "check")}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (o.table.empty()) {
    std::cout << "clustersim validate nccl: all-reduce bus bandwidth (GB/s) on one 8-GPU node, nccl-tests results\n";
  } else {
    std::cout << "clustersim validate nccl: bus bandwidth (GB/s), records of " << o.table << "\n";
  }
  std::cout << "  record                    use      cluster       ranks    size   published  predicted   error  algorithm\n";
  for (const auto& p : points) {
    char line[240];
    std::snprintf(line, sizeof line, "  %-25s %-8s %-13s %5d %7s %11.2f %10.2f %+7.1f%%  %s\n", p.record.c_str(), p.use.c_str(),
                  p.cluster.c_str(), p.ranks, p.label.c_str(), p.published_busbw_GBps, p.predicted_busbw_GBps, 100 * p.error(),
                  p.algorithm.c_str());
    std::cout << line;
  }
  for (const char* use : {"fit", "check"}) {
    const nlohmann::json s = summary(points, use);
    std::cout << "  " << use << " points >= 1 MiB: " << s["points"].get<int>();
    if (s["points"].get<int>() > 0) {
      std::printf(", median |error| %.1f%%, worst %.1f%%", s["median_abs_error_pct"].get<double>(), s["worst_abs_error_pct"].get<double>());
    }
    std::cout << (std::string(use) == "fit" ? " (constants were fitted on these records: they validate little)\n" : "\n");
  }
  return 0;
}

}  // namespace cs::cli
