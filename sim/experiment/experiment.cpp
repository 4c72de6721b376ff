#include "sim/experiment/experiment.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "sim/experiment/apply_profile.h"
#include "sim/report/chrome_trace.h"

#include "core/errors.h"
#include "topology/cluster_loader.h"
#include "workloads/hf_config.h"
#include "workloads/layer_cost.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::exp {

namespace fs = std::filesystem;

std::string resolve_config(const std::string& ref, const std::string& base_dir, const char* kind) {
  if (fs::path(ref).is_absolute()) return ref;
  if (!base_dir.empty()) {
    const fs::path beside = fs::path(base_dir) / ref;
    if (fs::exists(beside)) return beside.string();
  }
  if (fs::exists(ref)) return ref;
  const fs::path bundled = fs::path(CS_CONFIG_DIR) / kind / (ref + ".json");
  if (ref.find('/') == std::string::npos && fs::exists(bundled)) return bundled.string();
  return ref;
}

std::string resolve_profile(const std::string& ref, const std::string& base_dir, const std::string& file,
                            const std::string& where) {
  const std::string path = resolve_config(ref, base_dir, "calibration");
  if (fs::exists(path)) return path;
  std::vector<std::string> names;
  const fs::path dir = fs::path(CS_CONFIG_DIR) / "calibration";
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError(file, where, "no profile file \"" + ref + "\" and no bundled profile of that name (bundled: " + list + ")");
}

namespace {

wl::ParallelPlan parse_plan(const ConfigNode& n) {
  n.expect_only({"dp", "tp", "pp", "cp", "ep", "sequence_parallel", "schedule", "virtual_stages", "layers_per_stage",
                 "zero", "micro_batch", "global_batch", "sequence_length", "recompute", "precision", "dp_bucket", "order",
                 "flash_attention", "dp_overlap", "grad_reduce_dtype", "pp_scatter_gather"});
  wl::ParallelPlan p;
  auto degree = [&](const char* key, int& out) {
    if (auto v = n.find(key)) out = static_cast<int>(v->as_int(1, 1 << 20));
  };
  degree("dp", p.dp);
  degree("tp", p.tp);
  degree("pp", p.pp);
  degree("cp", p.cp);
  degree("ep", p.ep);
  degree("virtual_stages", p.virtual_stages);
  if (auto v = n.find("sequence_parallel")) p.sequence_parallel = v->as_bool();
  if (auto v = n.find("flash_attention")) p.flash_attention = v->as_bool();
  if (auto v = n.find("dp_overlap")) p.dp_overlap = v->as_bool();
  if (auto v = n.find("pp_scatter_gather")) p.pp_scatter_gather = v->as_bool();
  if (auto v = n.find("grad_reduce_dtype")) p.grad_reduce_bytes = v->as_choice({"bf16", "fp32"}) == 0 ? 2 : 4;
  if (auto v = n.find("schedule")) {
    static constexpr wl::PipelineSchedule kS[] = {wl::PipelineSchedule::kGpipe, wl::PipelineSchedule::kOneFOneB, wl::PipelineSchedule::kInterleaved};
    p.schedule = kS[v->as_choice({"gpipe", "1f1b", "interleaved"})];
  }
  if (auto v = n.find("layers_per_stage")) {
    for (const ConfigNode& e : v->elements()) p.layers_per_stage.push_back(static_cast<int>(e.as_int(1, 1 << 20)));
  }
  if (auto v = n.find("zero")) p.zero = static_cast<wl::ZeroStage>(v->as_int(0, 3));
  p.micro_batch = static_cast<int>(n.at("micro_batch").as_int(1, 1 << 24));
  p.global_batch = static_cast<int>(n.at("global_batch").as_int(1, 1 << 30));
  if (auto v = n.find("sequence_length")) p.sequence_length = static_cast<int>(v->as_int(1, 1 << 24));
  if (auto v = n.find("recompute")) {
    static constexpr wl::Recompute kR[] = {wl::Recompute::kNone, wl::Recompute::kSelective, wl::Recompute::kFull};
    p.recompute = kR[v->as_choice({"none", "selective", "full"})];
  }
  if (auto v = n.find("precision")) p.precision = v->as_choice({"bf16", "fp8"}) == 0 ? wl::Precision::kBf16 : wl::Precision::kFp8;
  if (auto v = n.find("dp_bucket")) p.dp_bucket_mib = static_cast<double>(v->as_bytes().value()) / (1024.0 * 1024.0);
  if (auto v = n.find("order")) {
    p.order.clear();
    for (const ConfigNode& e : v->elements()) p.order.push_back(e.as_string());
  }
  return p;
}

}  // namespace

std::string resolve_model(const std::string& ref, const std::string& base_dir, const std::string& file,
                          const std::string& where) {
  const bool hf = ref.rfind("hf:", 0) == 0;
  const std::string path = hf ? "hf:" + resolve_config(ref.substr(3), base_dir, "models") : resolve_config(ref, base_dir, "models");
  if (!fs::exists(hf ? path.substr(3) : path)) {
    std::string names;
    for (const auto& n : wl::bundled_model_names()) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError(file, where, "no model file \"" + ref + "\" and no bundled model of that name (bundled: " + names + ")");
  }
  return path;
}

Experiment parse_experiment(const ConfigDocument& doc, const std::string& base_dir) {
  const ConfigNode root = doc.root();
  root.expect_only({"name", "description", "cluster", "cluster_overrides", "model", "plan", "data", "options"});
  Experiment e;
  e.file = doc.name();
  e.name = root.has("name") ? root.at("name").as_string() : fs::path(doc.name()).stem().string();
  if (auto d = root.find("description")) d->as_string();
  e.cluster = resolve_config(root.at("cluster").as_string(), base_dir, "clusters");
  if (!fs::exists(e.cluster)) root.at("cluster").fail("no cluster file \"" + e.cluster + "\" and no bundled cluster of that name");
  if (auto o = root.find("cluster_overrides")) {
    for (const ConfigNode& v : o->elements()) e.cluster_overrides.push_back(v.as_string());
  }
  e.model = resolve_model(root.at("model").as_string(), base_dir, doc.name(), root.at("model").path());
  e.plan = parse_plan(root.at("plan"));
  if (auto d = root.find("data")) {
    d->expect_only({"source", "bytes_per_sample"});
    const bool storage = d->at("source").as_choice({"local", "storage"}) == 1;
    if (storage) e.plan.data_bytes_per_sample = d->at("bytes_per_sample").as_bytes().value();
  }
  if (auto o = root.find("options")) {
    o->expect_only({"allow_oom", "symmetry", "stragglers", "profile"});
    if (auto v = o->find("profile")) {
      e.profile = resolve_profile(v->as_string(), base_dir, doc.name(), v->path());
      e.profile_where = v->path();
    }
    if (auto v = o->find("allow_oom")) e.allow_oom = v->as_bool();
    if (auto v = o->find("symmetry")) e.symmetry = v->as_bool();
    if (auto v = o->find("stragglers")) {
      for (const ConfigNode& sn : v->elements()) {
        sn.expect_only({"rank", "slowdown"});
        Experiment::Straggler st;
        st.rank = static_cast<int>(sn.at("rank").as_int(0, e.plan.gpus() - 1));
        st.slowdown = sn.at("slowdown").as_number();
        if (!(st.slowdown >= 1 && st.slowdown <= 100)) sn.at("slowdown").fail_expected("a slowdown factor from 1 to 100");
        e.stragglers.push_back(st);
      }
    }
  }
  return e;
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides) {
  ConfigDocument doc = ConfigDocument::load(path);
  if (!overrides.empty()) {
    nlohmann::json j = doc.json();
    for (const auto& o : overrides) apply_override(j, path, o);
    doc = ConfigDocument::from_json(std::move(j), path);
  }
  return parse_experiment(doc, fs::path(path).parent_path().string());
}

namespace {

// Names the busiest GPU and the most idle one when their compute differs by more than 2%, with
// the likely cause: pipeline stages of unequal work, or one rank slower than its peers.
std::string imbalance_finding(const wl::TrainingGraph& g, const std::vector<report::RankBreakdown>& stalls, Duration iteration) {
  if (stalls.size() < 2) return "";
  auto compute = [&](std::size_t r) { return to_seconds(stalls[r].time[static_cast<int>(report::Stall::kCompute)]); };
  std::size_t busiest = 0, idlest = 0;
  for (std::size_t r = 1; r < stalls.size(); ++r) {
    if (compute(r) > compute(busiest)) busiest = r;
    if (compute(r) < compute(idlest)) idlest = r;
  }
  const double hi = compute(busiest), lo = compute(idlest);
  if (hi <= 0 || (hi - lo) / hi < 0.02) return "";
  const wl::GridCoord cb = g.grid.coord(g.grid_rank[busiest]), ci = g.grid.coord(g.grid_rank[idlest]);
  char buf[400];
  const double idle_share = 100 * (1 - lo / to_seconds(iteration));
  if (cb.pp != ci.pp) {
    std::snprintf(buf, sizeof buf,
                  "uneven pipeline stages: rank %d (stage %d) computes %.0f%% longer than rank %d (stage %d), which is idle %.0f%% of the iteration",
                  g.grid_rank[busiest], cb.pp, 100 * (hi / lo - 1), g.grid_rank[idlest], ci.pp, idle_share);
  } else {
    std::snprintf(buf, sizeof buf,
                  "a straggler: rank %d computes %.0f%% longer than its peers (rank %d is idle %.0f%% of the iteration, waiting for it)",
                  g.grid_rank[busiest], 100 * (hi / lo - 1), g.grid_rank[idlest], idle_share);
  }
  return buf;
}

}  // namespace

Simulation simulate(const Experiment& e) {
  topo::Cluster cluster = topo::load_cluster(e.cluster, e.cluster_overrides);
  std::shared_ptr<const cal::ProfileModel> profile;
  nlohmann::json calibration;
  if (!e.profile.empty()) {
    profile = std::make_shared<const cal::ProfileModel>(cal::load_profile(e.profile));
    calibration = apply_profile(*profile, e, cluster);
  }
  wl::Model model = e.model.rfind("hf:", 0) == 0 ? wl::model_from_hf_config(e.model.substr(3)) : wl::load_model(e.model);
  const int gpus = e.plan.gpus();
  if (gpus > static_cast<int>(cluster.gpus().size())) {
    throw ConfigError(e.file, "/plan", "the plan needs " + std::to_string(gpus) + " GPUs but the cluster has " + std::to_string(cluster.gpus().size()));
  }
  // The plan against the model first, then memory: an out-of-memory plan is an input error
  // unless the user asks to go on. Errors from the workload formulas name the plan's path.
  wl::validate_plan(model, e.plan, gpus, e.file, "/plan");
  const topo::GpuSpec& gpu = cluster.gpu_spec(cluster.gpus()[0]);
  wl::MemoryEstimate worst;
  std::vector<wl::MemoryEstimate> stage_memory;
  try {
    stage_memory = wl::estimate_memory(model, e.plan, gpu);
    worst = wl::peak_memory(stage_memory);
    wl::check_fits(worst, gpu.name, e.allow_oom);
  } catch (const InputError& err) {
    if (!err.file().empty()) throw;
    throw ConfigError(e.file, "/plan" + (err.json_path() == "/" ? std::string() : err.json_path()), err.message());
  }

  // A straggler makes ranks differ: then every rank is simulated.
  wl::TrainingGraph graph = wl::build_training_graph(model, e.plan, e.file, "/plan", e.symmetry && e.stragglers.empty());
  sim::Simulator sim;
  coll::NetworkLayout layout(cluster);
  net::FlowNetwork net(sim, layout.capacities());
  topo::Router router(cluster);
  coll::CollectiveSimulator chooser(cluster);
  compute::ComputeModel compute(e.plan.precision == wl::Precision::kFp8 ? "fp8" : "bf16", profile);
  std::vector<topo::NodeId> rank_gpus;
  for (int grid_rank : graph.grid_rank) rank_gpus.push_back(cluster.gpus()[static_cast<std::size_t>(grid_rank)]);
  rt::Executor ex(sim, net, router, layout, chooser, compute, graph.graph, rank_gpus);
  for (const auto& st : e.stragglers) ex.set_compute_slowdown(static_cast<std::uint32_t>(st.rank), st.slowdown);
  if (e.plan.data_bytes_per_sample > 0) {
    std::vector<topo::NodeId> storage;
    for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
      if (cluster.node(topo::NodeId{i}).kind == topo::NodeKind::kStorage) storage.push_back(topo::NodeId{i});
    }
    if (storage.empty()) throw ConfigError(e.file, "/data/source", "the data comes from storage but the cluster has no storage device");
    ex.set_storage(std::move(storage));
  }
  ex.start();
  sim.run();
  if (!ex.finished()) throw InternalError("the iteration did not finish (a dependency cycle or an unmatched transfer)");

  IterationResult r;
  r.iteration = ex.end_time() - kTimeZero;
  r.gpus = gpus;
  const double t = to_seconds(r.iteration);
  r.samples_per_s = e.plan.global_batch / t;
  if (model.family == wl::ModelFamily::kTransformer) r.tokens_per_s = r.samples_per_s * e.plan.sequence_length;
  const Flops train = wl::training_flops(model, e.plan.global_batch, e.plan.sequence_length, e.plan.recompute);
  const Flops useful = wl::model_flops(model, e.plan.global_batch, e.plan.sequence_length);
  r.tflops_per_gpu = train.value() / t / gpus / 1e12;
  r.model_tflops_per_gpu = useful.value() / t / gpus / 1e12;
  r.mfu = useful.value() / t / gpus / compute.peak(gpu).value();
  r.memory = worst;
  r.ops = graph.graph.size();
  r.simulated_ranks = static_cast<int>(graph.graph.ranks());
  r.events = sim.events_executed();
  auto stalls = report::attribute_stalls(graph.graph, ex.records(), ex.end_time());
  r.imbalance = imbalance_finding(graph, stalls, r.iteration);
  std::vector<LinkUse> links;
  const double seconds = to_seconds(r.iteration);
  for (std::uint32_t l = 0; l < cluster.link_count(); ++l) {
    const net::LinkStats st = net.link_stats(topo::LinkId{l});
    if (st.bytes.value() == 0) continue;
    const double capacity = net.capacity(topo::LinkId{l}).value();
    links.push_back({topo::LinkId{l}, st.bytes, st.busy, static_cast<double>(st.bytes.value()) / (capacity * seconds)});
  }
  std::stable_sort(links.begin(), links.end(), [](const LinkUse& a, const LinkUse& b) { return a.utilization > b.utilization; });
  if (profile) add_compute_tally(calibration, compute.tally());
  return Simulation{std::move(cluster), std::move(model),        std::move(graph),        ex.records(),
                    std::move(stalls),  std::move(links),        std::move(stage_memory), r, std::move(calibration)};
}

namespace {
// Mean over ranks of each stall category, seconds.
nlohmann::json stall_means(const Simulation& s) {
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < report::kStallCount; ++k) {
    double sum = 0;
    for (const auto& b : s.stalls) sum += to_seconds(b.time[static_cast<std::size_t>(k)]);
    j[report::to_string(static_cast<report::Stall>(k))] = s.stalls.empty() ? 0.0 : sum / static_cast<double>(s.stalls.size());
  }
  return j;
}
}  // namespace

namespace {
// Bytes per link tier and the most utilized links.
nlohmann::json network_summary(const Simulation& s) {
  std::map<int, std::int64_t> per_tier;
  for (const LinkUse& u : s.links) per_tier[s.cluster.link(u.link).tier] += u.bytes.value();
  nlohmann::json tiers = nlohmann::json::object();
  static const char* kTierNames[] = {"in_server", "endpoint_leaf", "leaf_spine", "spine_core"};
  for (const auto& [tier, bytes] : per_tier) tiers[tier >= 0 && tier < 4 ? kTierNames[tier] : std::to_string(tier)] = bytes;
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t i = 0; i < s.links.size() && i < 10; ++i) {
    const topo::LinkInfo& l = s.cluster.link(s.links[i].link);
    top.push_back({{"src", s.cluster.node(l.src).name}, {"dst", s.cluster.node(l.dst).name}, {"class", topo::to_string(l.link_class)},
                   {"bytes", s.links[i].bytes.value()}, {"utilization", s.links[i].utilization}});
  }
  return {{"bytes_by_tier", tiers}, {"busiest_links", top}};
}
}  // namespace

nlohmann::json summary_json(const Experiment& e, const Simulation& s) {
  const IterationResult& r = s.result;
  return {{"experiment", e.name},
          {"cluster", s.cluster.name()},
          {"model", s.model.name},
          {"gpus", r.gpus},
          {"plan", {{"dp", e.plan.dp}, {"tp", e.plan.tp}, {"pp", e.plan.pp}, {"cp", e.plan.cp}, {"ep", e.plan.ep},
                    {"micro_batch", e.plan.micro_batch}, {"global_batch", e.plan.global_batch},
                    {"micro_batches", e.plan.micro_batches()}, {"sequence_length", e.plan.sequence_length}}},
          {"iteration_time_s", to_seconds(r.iteration)},
          {"iteration_time_ps", r.iteration.count()},
          {"samples_per_s", r.samples_per_s},
          {"tokens_per_s", r.tokens_per_s},
          {"tflops_per_gpu", r.tflops_per_gpu},
          {"model_tflops_per_gpu", r.model_tflops_per_gpu},
          {"mfu", r.mfu},
          {"memory_bytes", {{"weights", r.memory.weights.value()}, {"gradients", r.memory.gradients.value()},
                            {"optimizer_state", r.memory.optimizer_state.value()}, {"activations", r.memory.activations.value()},
                            {"workspace", r.memory.workspace.value()}, {"total", r.memory.total.value()},
                            {"capacity", r.memory.capacity.value()}, {"worst_stage", r.memory.worst_stage}}},
          {"stalls_s", stall_means(s)},
          {"network", network_summary(s)},
          {"simulated_ranks", r.simulated_ranks},
          {"load_imbalance", r.imbalance.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.imbalance)},
          {"ops", r.ops},
          {"events", r.events},
          {"calibration", s.calibration.is_null() ? nlohmann::json(nullptr) : s.calibration}};
}

std::string links_csv(const Simulation& s) {
  std::string out = "src,dst,class,tier,bytes,busy_s,utilization\n";
  char buf[96];
  for (const LinkUse& u : s.links) {
    const topo::LinkInfo& l = s.cluster.link(u.link);
    std::snprintf(buf, sizeof buf, ",%s,%d,%lld,%.12g,%.6f\n", topo::to_string(l.link_class), l.tier,
                  static_cast<long long>(u.bytes.value()), to_seconds(u.busy), u.utilization);
    out += s.cluster.node(l.src).name + "," + s.cluster.node(l.dst).name + buf;
  }
  return out;
}

std::string trace_json(const Simulation& s) {
  report::ChromeTrace trace;
  const tg::TaskGraph& g = s.graph.graph;
  for (std::uint32_t r = 0; r < g.ranks(); ++r) {
    const int grid_rank = s.graph.grid_rank[r];
    trace.name_process(static_cast<int>(r), "rank " + std::to_string(grid_rank) + " " +
                                                s.cluster.node(s.cluster.gpus()[static_cast<std::size_t>(grid_rank)]).name);
    for (int k = 0; k < tg::kStreamCount; ++k) trace.name_track(static_cast<int>(r), k, tg::to_string(static_cast<tg::Stream>(k)));
  }
  for (tg::OpId id = 0; id < g.size(); ++id) {
    const tg::Op& op = g.op(id);
    const rt::OpRecord& rec = s.records[id];
    if (rec.end <= rec.start) continue;
    nlohmann::json args = {{"kind", tg::to_string(op.kind)}};
    if (op.kind == tg::OpKind::kCompute) args["flops"] = op.flops.value();
    if (op.bytes.value() > 0) args["bytes"] = op.bytes.value();
    if (op.kind == tg::OpKind::kCollective) args["waited_for_peers_us"] = to_seconds(rec.start - rec.arrival) * 1e6;
    trace.span(static_cast<int>(op.rank), static_cast<int>(op.stream), g.name_of(id), rec.start, rec.end - rec.start, std::move(args));
  }
  return trace.dump();
}

std::string per_gpu_csv(const Simulation& s) {
  std::string out = "rank,gpu,dp,pp,cp,tp";
  for (int k = 0; k < report::kStallCount; ++k) out += std::string(",") + report::to_string(static_cast<report::Stall>(k)) + "_s";
  out += ",total_s,memory_weights_bytes,memory_gradients_bytes,memory_optimizer_bytes,memory_activations_bytes,"
         "memory_workspace_bytes,memory_total_bytes,memory_capacity_bytes\n";
  char buf[64];
  for (std::size_t r = 0; r < s.stalls.size(); ++r) {
    const int grid_rank = s.graph.grid_rank[r];
    const wl::GridCoord c = s.graph.grid.coord(grid_rank);
    out += std::to_string(grid_rank) + "," + s.cluster.node(s.cluster.gpus()[static_cast<std::size_t>(grid_rank)]).name + "," + std::to_string(c.dp) + "," +
           std::to_string(c.pp) + "," + std::to_string(c.cp) + "," + std::to_string(c.tp);
    for (Duration d : s.stalls[r].time) {
      std::snprintf(buf, sizeof buf, ",%.12g", to_seconds(d));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, ",%.12g", to_seconds(s.stalls[r].total()));
    out += buf;
    const wl::MemoryEstimate& m = s.stage_memory.at(static_cast<std::size_t>(c.pp));
    for (Bytes b : {m.weights, m.gradients, m.optimizer_state, m.activations, m.workspace, m.total, m.capacity}) {
      out += "," + std::to_string(b.value());
    }
    out += "\n";
  }
  return out;
}

}  // namespace cs::exp
