// A sweep (docs/sweep-format.md): a base experiment and parameters that vary it, expanded into
// points, each one experiment simulated on its own. A parameter is a JSON pointer into the
// experiment ("/plan/tp", "/cluster"), into the cluster file it names ("cluster:/fabric/spines")
// or into the hardware catalog ("hardware:/gpus/H100-SXM/efficiency/gemm/value"); its values come
// from axes (a cartesian product, the first axis varying slowest), zipped axes, or a list of points.
//
// Everything that is wrong with the sweep file itself (a pointer that names nothing, an empty
// axis, a value of the wrong type or one its target refuses) is a ConfigError naming the sweep
// file and the JSON path of the value, found by load_sweep before any point runs. What is wrong
// only with a combination (a plan that does not divide, does not fit memory) is the point's own:
// run_sweep_point reports it as the row's status and reason.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/experiment.h"
#include "results/sweep_row.h"

namespace cs::drv {

enum class SweepTarget { kExperiment, kCluster, kHardware };

struct SweepParameter {
  std::string name;     // the column: the parameter as written ("/plan/tp", "cluster:/fabric/spines") or its "name"
  std::string pointer;  // the JSON pointer inside its target
  SweepTarget target = SweepTarget::kExperiment;
};

struct Sweep {
  std::string file;       // the sweep file, as errors name it
  std::string name;
  nlohmann::json base;    // the base experiment
  std::string base_file;  // the file that holds it (the sweep file when it is written inline)
  std::string base_path;  // its JSON path there ("" for a file of its own, "/experiment" inline)
  std::string base_dir;   // resolves its relative cluster, model and profile paths
  std::vector<SweepParameter> parameters;
  std::vector<std::vector<nlohmann::json>> points;  // per point, one value per parameter
  // The price catalog every point's energy and cost use (--prices, --set-price).
  std::string prices;
  std::vector<std::string> price_overrides;

  std::vector<std::string> columns() const;  // the parameters' names, in order
};

// At most this many points (the product of the axes' lengths).
inline constexpr std::size_t kMaxSweepPoints = 1'000'000;

// Reads and checks a sweep file; the checks try every value of every parameter on the base
// experiment (and on each cluster the sweep names) before returning.
Sweep load_sweep(const std::string& path);

// The experiment of point `i`: the base with the point's values. InputErrors are the point's.
Experiment sweep_point_experiment(const Sweep& s, std::size_t i);

struct PointResult {
  results::PointStatus status = results::PointStatus::kOk;
  std::string row;  // the whole line, newline included
};

// Simulates point `i` and formats its row; never throws for the point's input.
PointResult run_sweep_point(const Sweep& s, std::size_t i, results::RowFormat format);

// The key of point `i`'s row (results/sweep_row.h, sweep_row_key).
std::string sweep_point_key(const Sweep& s, std::size_t i, results::RowFormat format);

}  // namespace cs::drv
