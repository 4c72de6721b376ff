// An experiment: a cluster, a model and a parallel plan, read from JSON (docs/experiment-format.md).
// drivers/training_run.h simulates one training iteration of it.
#pragma once

#include <string>
#include <vector>

#include <optional>

#include "core/config.h"
#include "drivers/availability_spec.h"
#include "drivers/framework_preset.h"
#include "hardware/catalog.h"
#include "workloads/model.h"
#include "workloads/parallel_plan.h"

namespace cs::drv {

struct Experiment {
  std::string file;                    // what errors call the experiment
  std::string path;                    // JSON path of the experiment object in it ("" for the root)
  std::string name;
  std::string cluster;                 // path or bundled name
  std::vector<std::string> cluster_overrides;
  // "/json/pointer=value" changes to the hardware catalog for this experiment
  // ("/gpus/H100-SXM/efficiency/gemm/value=0.8"): what-ifs on the catalog's values.
  std::vector<std::string> hardware_overrides;
  std::string hardware_overrides_where;  // the JSON path (or option) that named them
  std::string model;                   // path, bundled name or "hf:PATH"
  wl::ParallelPlan plan;
  std::optional<Framework> framework;  // the plan's `framework` preset, if it names one
  bool allow_oom = false;
  bool symmetry = true;                // simulate one rank per pipeline stage (training_graph.h)
  bool fold = true;                    // run the network folded by the switch exchanges where exact (network_fold.h)
  struct Straggler {
    int rank = 0;                      // grid rank (= GPU index in rank order)
    double slowdown = 1;               // its compute takes this many times as long
  };
  std::vector<Straggler> stragglers;   // what-if; breaks symmetry, so it turns it off
  // A calibration profile (docs/calibration-profile.md): compute times, link efficiencies, step
  // latencies and the overlap slowdown come from it where it has them. Empty: the catalog.
  std::string profile;
  std::string profile_where;           // the file and JSON path (or option) that named it
  // A training goal (the experiment's "goal"): train this many tokens (or epochs of a dataset). With
  // it, a run reports time, energy and cost to train (cost/run_energy.h).
  struct Goal {
    double tokens = 0;
    std::string where;                 // its JSON path
  };
  std::optional<Goal> goal;
  // Failures and checkpoints over a long run (the experiment's "availability"): the effective
  // training time ratio and the optimal checkpoint interval (docs/availability.md).
  std::optional<AvailabilitySpec> availability;
  // The price catalog for energy and cost: a file replacing the built-in one (--prices) and
  // "/pointer=value" changes (--set-price); cost/price_catalog.h.
  std::string prices;
  std::vector<std::string> price_overrides;

  // The JSON path of a key of the experiment ("/plan", or "/records/3/experiment/plan").
  std::string at(const std::string& key) const { return path + "/" + key; }
};

// Parses a parallel plan object (an experiment's "plan"; docs/experiment-format.md).
wl::ParallelPlan parse_plan(const ConfigNode& node);
// Parses a training goal object ({"tokens": N} or {"dataset_tokens": D, "epochs": E}).
Experiment::Goal parse_goal(const ConfigNode& node);

// Parses an experiment object (a whole document, or an object inside one, such as a record of a
// validation table); `base_dir` resolves relative cluster and model paths. Errors name the file
// and the JSON path.
Experiment parse_experiment(const ConfigNode& node, const std::string& base_dir);
// The experiment's model: a model file, a bundled model, or a Hugging Face config ("hf:PATH").
wl::Model load_model(const Experiment& e);
// The built-in hardware catalog with the experiment's hardware_overrides applied; a bad pointer
// is a ConfigError at the experiment's file and JSON path, or at the option that gave it
// (--set-hardware).
hw::Catalog experiment_catalog(const Experiment& e);

// Reads an experiment file and applies "--set /json/pointer=value" overrides in order.
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace cs::drv
