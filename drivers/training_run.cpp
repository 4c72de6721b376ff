#include "drivers/training_run.h"

#include <algorithm>
#include <memory>

#include "calibration/profile_model.h"
#include "core/errors.h"
#include "cost/ownership.h"
#include "cost/run_energy.h"
#include "drivers/availability_report.h"
#include "drivers/assumptions.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/graph_run.h"
#include "drivers/plan_warnings.h"
#include "results/findings.h"
#include "results/stall_attribution.h"
#include "sim/collectives/algorithm_tuner.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/network_layout.h"
#include "sim/compute/compute_model.h"
#include "sim/runtime/executor.h"
#include "workloads/flop_conventions.h"
#include "workloads/layer_cost.h"
#include "workloads/memory.h"
#include "workloads/plan_check.h"
#include "workloads/training_graph.h"

namespace cs::drv {
namespace {

// The memory of every pipeline stage; an out-of-memory plan is an input error at the plan unless
// the experiment allows it. Errors of the workload formulas are rethrown at the plan's path.
std::vector<wl::MemoryEstimate> checked_memory(const Experiment& e, const wl::Model& model, const hw::GpuSpec& gpu) {
  try {
    std::vector<wl::MemoryEstimate> stages = wl::estimate_memory(model, e.plan, gpu);
    wl::check_fits(wl::peak_memory(stages), gpu.name, e.allow_oom);
    return stages;
  } catch (const MemoryFitError& err) {
    if (!err.file().empty()) throw;
    throw MemoryFitError(e.file, e.at("plan") + (err.json_path() == "/" ? std::string() : err.json_path()), err.message());
  } catch (const InputError& err) {
    if (!err.file().empty()) throw;
    throw ConfigError(e.file, e.at("plan") + (err.json_path() == "/" ? std::string() : err.json_path()), err.message());
  }
}

std::vector<topo::NodeId> storage_devices(const topo::Cluster& cluster) {
  std::vector<topo::NodeId> storage;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    if (cluster.node(topo::NodeId{i}).kind == topo::NodeKind::kStorage) storage.push_back(topo::NodeId{i});
  }
  return storage;
}

// Throughput, TFLOP/s per GPU (training FLOPs with recomputation, as Megatron's Eq. 3, and model
// FLOPs) and MFU of one iteration of r.iteration on r.gpus GPUs.
void set_throughput(results::IterationResult& r, const Experiment& e, const wl::Model& model, FlopRate peak) {
  const double t = to_seconds(r.iteration);
  r.samples_per_s = e.plan.global_batch / t;
  if (model.family == wl::ModelFamily::kTransformer) r.tokens_per_s = r.samples_per_s * e.plan.sequence_length;
  const Flops train = wl::training_flops(model, e.plan.global_batch, e.plan.sequence_length, e.plan.recompute);
  const Flops useful = wl::model_flops(model, e.plan.global_batch, e.plan.sequence_length);
  r.tflops_per_gpu = train.value() / t / r.gpus / 1e12;
  r.model_tflops_per_gpu = useful.value() / t / r.gpus / 1e12;
  r.mfu = useful.value() / t / r.gpus / peak.value();
  r.flop_conventions.clear();
  for (const wl::FlopCount& c : wl::iteration_flops(model, e.plan)) {
    r.flop_conventions.push_back({c.convention, c.flops.value() / t / r.gpus / 1e12, c.flops.value() / t / r.gpus / peak.value()});
  }
}

}  // namespace

void check_plan_fits(const Experiment& e, const topo::Cluster& cluster, const wl::Model& model) {
  const int gpus = e.plan.gpus();
  if (gpus > static_cast<int>(cluster.gpus().size())) {
    throw ConfigError(e.file, e.at("plan"), "the plan needs " + std::to_string(gpus) + " GPUs but the cluster has " + std::to_string(cluster.gpus().size()));
  }
  // The plan against the model (plan_check.h); memory is checked apart (checked_memory).
  wl::validate_plan(model, e.plan, gpus, e.file, e.at("plan"));
  // The plan's precision must be one the GPUs compute in (V100: fp16, no bf16).
  const char* precision = enum_name(wl::kPrecisionNames, e.plan.precision);
  for (topo::NodeId g : cluster.gpus()) {
    const hw::GpuSpec& spec = cluster.gpu_spec(g);
    if (!spec.peak.count(precision)) {
      throw ConfigError(e.file, e.at("plan") + "/precision",
                        "GPU " + spec.name + " has no " + precision + " peak in the hardware catalog (set \"precision\" to one it has)");
    }
  }
}

namespace {

// The energy of the iteration and the cost of the goal, or the reason the catalog cannot price them.
void add_energy(results::TrainingRun& run, const Experiment& e, const cost::PriceCatalog& prices) {
  const int gpus = run.result.gpus;
  cost::Ownership own;
  try {
    own = cost::ownership(run.cluster, cost::bill_of_materials(run.cluster, prices, hw::Catalog::builtin(), e.cluster), prices);
  } catch (const ConfigError& err) {
    run.energy_unavailable = err.message();
    return;
  }
  // Mean compute over the job's GPUs: the simulated ranks stand for their mirror images.
  double compute = 0;
  for (const results::RankBreakdown& b : run.stalls) compute += to_seconds(b.time[static_cast<int>(results::Stall::kCompute)]);
  if (!run.stalls.empty()) compute /= static_cast<double>(run.stalls.size());
  results::RunEnergy energy;
  energy.iteration = cost::iteration_energy(own, prices, run.result.iteration, duration_from_seconds(compute), gpus);
  energy.pue = prices.facility().pue;
  energy.cost_per_hour = own.per_hour * (static_cast<double>(gpus) / own.bom.gpus);
  if (e.goal && run.result.tokens_per_s > 0) {
    energy.goal = cost::goal_cost(own, prices, energy.iteration, run.result.iteration, run.result.tokens_per_s,
                                  e.goal->tokens, gpus);
  }
  energy.assumptions = cost::assumed_prices(own, prices);
  run.energy = std::move(energy);
}

}  // namespace

results::TrainingRun simulate_training(const Experiment& e) {
  // The price catalog first: a bad --prices file or --set-price is an input error before any work.
  const cost::PriceCatalog prices = cost::PriceCatalog::load(e.prices, e.price_overrides);
  const hw::Catalog catalog = experiment_catalog(e);
  coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, catalog);
  const topo::Cluster& cluster = machine.cluster;
  std::shared_ptr<const cal::ProfileModel> profile;
  nlohmann::json calibration;
  if (!e.profile.empty()) {
    profile = std::make_shared<const cal::ProfileModel>(cal::load_profile(e.profile));
    // Named by a JSON path of the experiment, or by the command-line option.
    const std::string where = e.profile_where.empty() ? "--profile" : e.profile_where;
    check_profile_gpu(*profile, cluster, e.profile, where.rfind('/', 0) == 0 ? e.file : std::string(), where);
    CalibratedProtocol calibrated = calibrate_protocol(*profile, machine.protocol);
    machine.protocol = calibrated.protocol;
    calibration = calibration_summary(*profile, e.profile, calibrated);
  }
  wl::Model model = load_model(e);
  check_plan_fits(e, cluster, model);
  const int gpus = e.plan.gpus();
  const hw::GpuSpec& gpu = cluster.gpu_spec(cluster.gpus()[0]);
  std::vector<wl::MemoryEstimate> stage_memory = checked_memory(e, model, gpu);
  std::optional<results::AvailabilityReport> availability;
  std::vector<Warning> availability_warnings;
  if (e.availability) availability = availability_report(*e.availability, e.file, cluster, model, e.plan, availability_warnings);

  // A straggler makes ranks differ: then every rank is simulated.
  wl::TrainingGraph graph = wl::build_training_graph(model, e.plan, e.file, e.at("plan"), e.symmetry && e.stragglers.empty());
  coll::NetworkLayout layout(machine);
  coll::AlgorithmTuner tuner(machine);
  std::vector<topo::NodeId> rank_gpus;
  for (int grid_rank : graph.grid_rank) rank_gpus.push_back(cluster.gpus()[static_cast<std::size_t>(grid_rank)]);
  std::vector<topo::NodeId> storage;
  if (e.plan.data_bytes_per_sample > 0) {
    storage = storage_devices(cluster);
    if (storage.empty()) throw ConfigError(e.file, e.at("data/source"), "the data comes from storage but the cluster has no storage device");
  }
  GraphRun it = run_graph({layout, tuner, graph.graph, rank_gpus,
                           [&] { return std::make_unique<compute::ComputeModel>(enum_name(wl::kPrecisionNames, e.plan.precision), profile); },
                           [&](rt::Executor& ex) {
                             for (const auto& st : e.stragglers) ex.set_compute_slowdown(static_cast<std::uint32_t>(st.rank), st.slowdown);
                             if (!storage.empty()) ex.set_storage(storage);
                           },
                           e.fold, "the iteration did not finish (a dependency cycle or an unmatched transfer)"});
  const compute::ComputeModel& compute = *it.compute;

  results::IterationResult r;
  r.iteration = it.end - kTimeZero;
  r.gpus = gpus;
  set_throughput(r, e, model, compute.peak(gpu));
  r.memory = wl::peak_memory(stage_memory);
  r.ops = graph.graph.size();
  r.simulated_ranks = static_cast<int>(graph.graph.ranks());
  r.events = it.events;
  r.network_folded = it.network_folded;
  r.rotated_blocks = it.rotated_blocks;
  std::vector<results::RankBreakdown> stalls = results::attribute_stalls(graph.graph, it.timeline, it.end);
  r.largest_stall = results::largest_stall(stalls, r.iteration);
  r.imbalance = results::load_imbalance(stalls, results::rank_places(graph), r.iteration);
  if (profile) add_compute_tally(calibration, compute.tally());
  const std::span<const topo::NodeId> job_gpus = cluster.gpus().subspan(0, static_cast<std::size_t>(gpus));
  std::vector<SourcedFact> assumptions = training_assumptions(machine, catalog, job_gpus, compute.dtype(), profile.get());
  std::vector<Warning> warnings = machine.warnings;
  add_warnings(warnings, plan_warnings(e, graph.grid, cluster));
  results::TrainingRun run{std::move(machine.cluster), std::move(model), std::move(graph), std::move(it.timeline),
                           std::move(stalls), std::move(it.links), std::move(stage_memory), r, std::move(calibration),
                           std::move(assumptions), std::move(warnings), std::nullopt, std::string(), std::nullopt};
  add_energy(run, e, prices);
  if (availability) {
    add_warnings(run.warnings, availability_warnings);
    if (run.energy && run.energy->goal) add_goal_effect(*availability, *run.energy->goal, *e.availability, e.file);
    run.availability = std::move(availability);
  }
  return run;
}

}  // namespace cs::drv
