#include "drivers/experiment.h"

#include <filesystem>

#include "core/errors.h"
#include "drivers/config_paths.h"
#include "drivers/framework_preset.h"
#include "workloads/plan_check.h"

namespace cs::drv {

namespace fs = std::filesystem;

wl::ParallelPlan parse_plan(const ConfigNode& n) {
  n.expect_only({"dp", "tp", "pp", "cp", "cp_comm_type", "ep", "sequence_parallel", "schedule", "virtual_stages", "layers_per_stage",
                 "zero", "micro_batch", "global_batch", "sequence_length", "recompute", "precision", "dp_bucket", "order",
                 "flash_attention", "dp_overlap", "reshard_after_forward", "overlap_param_gather", "tp_comm_overlap", "grad_reduce_dtype", "pp_scatter_gather", "zero_unit",
                 "memory_fragmentation", "framework", "zero_prefetch", "zero_shard", "moe_capacity_factor", "moe_pad_to_capacity",
                 "moe_token_drop_policy", "moe_load_imbalance"});
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
  // Before anything multiplies them as ints (run, plan, scale, gemm alike).
  wl::check_plan_size(p, n.file(), n.has("dp") ? n.at("dp").path() : n.path());
  if (auto v = n.find("sequence_parallel")) p.sequence_parallel = v->as_bool();
  if (auto v = n.find("flash_attention")) p.flash_attention = v->as_bool();
  if (auto v = n.find("dp_overlap")) p.dp_overlap = v->as_bool();
  if (auto v = n.find("reshard_after_forward")) p.reshard_after_forward = v->as_bool();
  if (auto v = n.find("overlap_param_gather")) p.overlap_param_gather = v->as_bool();
  if (auto v = n.find("tp_comm_overlap")) p.tp_comm_overlap = v->as_bool();
  if (auto v = n.find("pp_scatter_gather")) p.pp_scatter_gather = v->as_bool();
  if (auto v = n.find("grad_reduce_dtype")) p.grad_reduce_bytes = v->as_choice({"bf16", "fp32"}) == 0 ? 2 : 4;
  if (auto v = n.find("schedule")) p.schedule = v->as_enum(wl::kPipelineScheduleNames);
  if (auto v = n.find("cp_comm_type")) p.cp_comm_type = v->as_enum(wl::kCpCommTypeNames);
  if (auto v = n.find("layers_per_stage")) {
    for (const ConfigNode& e : v->elements()) p.layers_per_stage.push_back(static_cast<int>(e.as_int(1, 1 << 20)));
  }
  if (auto v = n.find("zero")) p.zero = static_cast<wl::ZeroStage>(v->as_int(0, 3));
  if (auto v = n.find("zero_unit")) p.zero_unit = v->as_enum(wl::kZeroUnitNames);
  if (auto v = n.find("memory_fragmentation")) p.memory_fragmentation = v->as_number();
  if (auto v = n.find("moe_capacity_factor")) p.moe_capacity_factor = v->as_number();
  if (auto v = n.find("moe_pad_to_capacity")) p.moe_pad_to_capacity = v->as_bool();
  if (auto v = n.find("moe_token_drop_policy")) p.moe_token_drop_policy = v->as_enum(wl::kMoeDropPolicyNames);
  if (auto v = n.find("moe_load_imbalance")) p.moe_load_imbalance = v->as_number();
  p.micro_batch = static_cast<int>(n.at("micro_batch").as_int(1, 1 << 24));
  p.global_batch = static_cast<int>(n.at("global_batch").as_int(1, 1 << 30));
  if (auto v = n.find("sequence_length")) p.sequence_length = static_cast<int>(v->as_int(1, 1 << 24));
  if (auto v = n.find("recompute")) p.recompute = v->as_enum(wl::kRecomputeNames);
  if (auto v = n.find("precision")) p.precision = v->as_enum(wl::kPrecisionNames);
  if (auto v = n.find("dp_bucket")) {
    const Bytes b = v->as_bytes();
    if (b.value() <= 0) v->fail("expected a positive bucket size (a gradient bucket holds at least one layer's gradients whatever its size)");
    p.dp_bucket_mib = static_cast<double>(b.value()) / (1024.0 * 1024.0);
  }
  if (auto v = n.find("order")) {
    p.order.clear();
    for (const ConfigNode& e : v->elements()) p.order.push_back(e.as_string());
  }
  if (auto v = n.find("framework")) apply_framework_defaults(v->as_enum(kFrameworkNames), n, p);
  if (auto v = n.find("zero_shard")) p.zero_shard = static_cast<int>(v->as_int(1, 1 << 20));
  if (auto v = n.find("zero_prefetch")) {
    p.zero_prefetch = static_cast<int>(v->as_int(0, 64));
    if (p.zero != wl::ZeroStage::kParameters) v->fail("zero_prefetch is the prefetch of ZeRO-3's all-gathers; the plan's zero stage is " + std::to_string(static_cast<int>(p.zero)));
  }
  return p;
}

Experiment::Goal parse_goal(const ConfigNode& g) {
  // Tokens to train, or a dataset's tokens times epochs (a fine-tune). Up to 10^16 tokens: 25x
  // the largest published pre-training runs.
  g.expect_only({"description", "tokens", "dataset_tokens", "epochs"});
  if (auto d = g.find("description")) d->as_string();
  auto positive = [](const ConfigNode& n, double max) {
    const double v = n.as_number();
    if (!(v > 0 && v <= max)) n.fail_expected(max >= 1e16 ? "a positive number of tokens up to 1e16" : "a positive number up to 10000");
    return v;
  };
  Experiment::Goal goal;
  goal.where = g.path();
  if (auto t = g.find("tokens")) {
    if (g.has("dataset_tokens") || g.has("epochs")) g.fail("give either \"tokens\" or \"dataset_tokens\" and \"epochs\", not both");
    goal.tokens = positive(*t, 1e16);
  } else if (g.has("dataset_tokens")) {
    goal.tokens = positive(g.at("dataset_tokens"), 1e16) * positive(g.at("epochs"), 1e4);
    if (goal.tokens > 1e16) g.at("epochs").fail_expected("epochs x dataset_tokens up to 10^16 tokens");
  } else {
    g.fail("expected \"tokens\" (tokens to train) or \"dataset_tokens\" and \"epochs\"");
  }
  return goal;
}

Experiment parse_experiment(const ConfigNode& root, const std::string& base_dir) {
  root.expect_only({"name", "description", "cluster", "cluster_overrides", "hardware_overrides", "model", "plan", "data", "goal", "availability", "options"});
  Experiment e;
  e.file = root.file();
  e.path = root.path();
  e.name = root.has("name") ? root.at("name").as_string() : fs::path(root.file()).stem().string();
  if (auto d = root.find("description")) d->as_string();
  if (root.at("cluster").as_string().empty()) root.at("cluster").fail_expected("a cluster file or a bundled cluster name");
  e.cluster = resolve_config(root.at("cluster").as_string(), base_dir, "clusters");
  std::error_code ec;  // a name the file system cannot examine (too long) is not there
  if (!fs::exists(e.cluster, ec)) root.at("cluster").fail("no cluster file \"" + e.cluster + "\" and no bundled cluster of that name");
  if (auto o = root.find("cluster_overrides")) {
    for (const ConfigNode& v : o->elements()) e.cluster_overrides.push_back(v.as_string());
  }
  if (auto o = root.find("hardware_overrides")) {
    for (const ConfigNode& v : o->elements()) e.hardware_overrides.push_back(v.as_string());
    e.hardware_overrides_where = o->path();
  }
  e.model = resolve_model(root.at("model").as_string(), base_dir, root.file(), root.at("model").path());
  e.plan = parse_plan(root.at("plan"));
  if (auto f = root.at("plan").find("framework")) e.framework = f->as_enum(kFrameworkNames);
  if (auto d = root.find("data")) {
    d->expect_only({"source", "bytes_per_sample"});
    const bool storage = d->at("source").as_choice({"local", "storage"}) == 1;
    if (storage) {
      const ConfigNode b = d->at("bytes_per_sample");
      e.plan.data_bytes_per_sample = b.as_bytes().value();
      // Zero would turn the storage traffic off silently: that is "source": "local".
      if (e.plan.data_bytes_per_sample <= 0) b.fail("expected a positive size per sample (\"source\": \"local\" reads no storage)");
    }
  }
  if (auto g = root.find("goal")) e.goal = parse_goal(*g);
  if (auto a = root.find("availability")) e.availability = parse_availability(*a);
  if (auto o = root.find("options")) {
    o->expect_only({"allow_oom", "symmetry", "fold", "stragglers", "profile"});
    if (auto v = o->find("profile")) {
      e.profile = resolve_profile(v->as_string(), base_dir, root.file(), v->path());
      e.profile_where = v->path();
    }
    if (auto v = o->find("allow_oom")) e.allow_oom = v->as_bool();
    if (auto v = o->find("symmetry")) e.symmetry = v->as_bool();
    if (auto v = o->find("fold")) e.fold = v->as_bool();
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

wl::Model load_model(const Experiment& e) { return load_model_reference(e.model); }

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_experiment(ConfigDocument::load(path, overrides).root(), fs::path(path).parent_path().string());
}

hw::Catalog experiment_catalog(const Experiment& e) {
  const std::string where = e.hardware_overrides_where.empty() ? "--set-hardware" : e.hardware_overrides_where;
  return hw::Catalog::builtin_with(e.hardware_overrides, where.rfind('/', 0) == 0 ? e.file : std::string(), where);
}

}  // namespace cs::drv
