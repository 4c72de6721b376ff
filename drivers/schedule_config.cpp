#include "drivers/schedule_config.h"

#include <filesystem>
#include <limits>

#include "core/errors.h"
#include "core/limits.h"
#include "drivers/config_paths.h"
#include "drivers/experiment.h"

namespace cs::drv {
namespace fs = std::filesystem;
namespace {

std::string existing_file(const ConfigNode& n, const std::string& base_dir, const char* what) {
  const std::string ref = n.as_string();
  if (ref.empty()) n.fail_expected(what);
  const std::string path = fs::path(ref).is_absolute() || base_dir.empty() ? ref : (fs::path(base_dir) / ref).string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) n.fail("no file \"" + path + "\"");
  return path;
}

double positive_number(const ConfigNode& n, double max, const char* what) {
  const double v = n.as_number();
  if (!(v > 0 && v <= max)) n.fail_expected(what);
  return v;
}

// A value or a distribution: 8 | {"exponential": mean} | {"lognormal": {"median", "sigma"}} |
// {"choice": [values], "weights": [w]}; durations as strings ("2h") or seconds.
ValueDistribution parse_distribution(const ConfigNode& n, bool duration, double max) {
  auto value = [&](const ConfigNode& v) {
    if (duration && v.is_string()) {
      const double s = to_seconds(as_long_duration(v));
      if (s > max) v.fail_expected("at most " + std::to_string(static_cast<long long>(max)) + " s");
      return s;
    }
    return positive_number(v, max, duration ? "a positive duration (\"2h\", or seconds)" : "a positive number");
  };
  ValueDistribution d;
  if (!n.is_object()) {
    d.value = value(n);
    return d;
  }
  n.expect_only({"exponential", "lognormal", "choice", "weights"});
  int kinds = 0;
  for (const char* k : {"exponential", "lognormal", "choice"}) kinds += n.has(k) ? 1 : 0;
  if (kinds != 1) n.fail("expected exactly one of \"exponential\", \"lognormal\" and \"choice\"");
  if (auto e = n.find("exponential")) {
    d.kind = ValueDistribution::Kind::kExponential;
    d.value = value(*e);
  } else if (auto l = n.find("lognormal")) {
    l->expect_only({"median", "sigma"});
    d.kind = ValueDistribution::Kind::kLognormal;
    d.median = value(l->at("median"));
    d.sigma = l->at("sigma").as_number();
    if (!(d.sigma >= 0 && d.sigma <= 4)) l->at("sigma").fail_expected("a sigma from 0 to 4");
  } else {
    d.kind = ValueDistribution::Kind::kChoice;
    const ConfigNode c = n.at("choice");
    if (!c.is_array() || c.size() == 0) c.fail_expected("a non-empty array of values");
    for (const ConfigNode& v : c.elements()) d.choices.push_back(value(v));
    if (auto w = n.find("weights")) {
      if (!w->is_array() || w->size() != d.choices.size()) w->fail_expected("one weight per choice");
      for (const ConfigNode& v : w->elements()) d.weights.push_back(positive_number(v, 1e12, "a positive weight"));
    } else {
      d.weights.assign(d.choices.size(), 1.0);
    }
  }
  if (n.has("weights") && d.kind != ValueDistribution::Kind::kChoice) n.at("weights").fail("\"weights\" apply to a \"choice\"");
  return d;
}

JobClass parse_class(const std::string& name, const ConfigNode& n, const std::string& base_dir) {
  n.expect_only({"model", "plan"});
  JobClass c;
  c.name = name;
  c.where = n.path();
  c.model = resolve_model(n.at("model").as_string(), base_dir, n.file(), n.at("model").path());
  const ConfigNode p = n.at("plan");
  if (p.has("dp")) p.at("dp").fail("a job class's data parallelism follows the job's GPUs: leave \"dp\" out");
  c.plan = parse_plan(p);
  // What the interference model covers: the data-parallel all-reduce of gradients (DDP).
  if (c.plan.cp != 1) p.at("cp").fail("job classes run tensor, pipeline and data parallelism (context parallelism is not modelled here)");
  if (c.plan.ep != 1) p.at("ep").fail("job classes run tensor, pipeline and data parallelism (expert parallelism is not modelled here)");
  if (c.plan.zero != wl::ZeroStage::kNone) p.at("zero").fail("job classes reduce gradients with an all-reduce (ZeRO stage 0)");
  return c;
}

JobStreamSpec parse_jobs(const ConfigNode& n, const std::string& base_dir, const std::map<std::string, JobClass>& classes) {
  JobStreamSpec j;
  j.where = n.path();
  if (n.has("trace")) {
    n.expect_only({"trace", "format", "time_scale", "limit"});
    j.trace = existing_file(n.at("trace"), base_dir, "a job trace (CSV)");
    if (auto f = n.find("format")) j.format = f->as_enum(kTraceFormatNames);
    if (auto t = n.find("time_scale")) j.time_scale = positive_number(*t, 1e6, "a positive factor up to 1e6");
    if (auto l = n.find("limit")) j.limit = l->as_int(1, limits().jobs);
    return j;
  }
  n.expect_only({"rate", "count", "gpus", "duration", "iterations", "class", "users", "seed"});
  SyntheticJobs s;
  s.rate = positive_number(n.at("rate"), 1e6, "a positive arrival rate in jobs per second (at most 1e6)");
  s.count = n.at("count").as_int(1, std::int64_t{1} << 40);
  if (s.count > limits().jobs) {
    n.at("count").fail(std::to_string(s.count) + " jobs exceed the limit of " + std::to_string(limits().jobs) + "; " + limit_hint("jobs"));
  }
  s.gpus = parse_distribution(n.at("gpus"), false, 1 << 20);
  if (n.has("duration") == n.has("class")) n.fail("expected exactly one of \"duration\" (jobs of a fixed length) and \"class\" (training jobs of a class, with \"iterations\")");
  if (auto d = n.find("duration")) s.duration = parse_distribution(*d, true, 3.6e10);
  if (auto c = n.find("class")) {
    auto add = [&](const ConfigNode& v) {
      if (!classes.count(v.as_string())) v.fail("no job class \"" + v.as_string() + "\" in \"classes\"");
      s.classes.push_back(v.as_string());
    };
    if (c->is_array()) {
      if (c->size() == 0) c->fail_expected("a class name or a non-empty array of them");
      for (const ConfigNode& v : c->elements()) add(v);
    } else {
      add(*c);
    }
    s.iterations = parse_distribution(n.at("iterations"), false, 1e12);
  } else if (auto i = n.find("iterations")) {
    i->fail("\"iterations\" apply to jobs of a \"class\"");
  }
  if (auto u = n.find("users")) s.users = static_cast<int>(u->as_int(1, 1 << 20));
  if (auto v = n.find("seed")) s.seed = static_cast<std::uint64_t>(v->as_int(0, std::numeric_limits<std::int64_t>::max()));
  j.synthetic = std::move(s);
  return j;
}

}  // namespace

ScheduleScenario parse_schedule_scenario(const ConfigNode& root, const std::string& base_dir) {
  root.expect_only({"name", "description", "cluster", "cluster_overrides", "nodes", "node_fraction", "profile", "classes", "jobs", "policy",
                    "preemption", "placement", "interference", "checkpoint", "failures", "seed"});
  ScheduleScenario s;
  s.file = root.file();
  s.name = root.has("name") ? root.at("name").as_string() : fs::path(root.file()).stem().string();
  if (auto d = root.find("description")) d->as_string();
  if (root.has("cluster") == root.has("nodes")) {
    root.fail("expected exactly one of \"cluster\" (a cluster file, with its network) and \"nodes\" (a node list CSV, no network)");
  }
  if (auto c = root.find("cluster")) {
    if (c->as_string().empty()) c->fail_expected("a cluster file or a bundled cluster name");
    s.cluster = resolve_config(c->as_string(), base_dir, "clusters");
    std::error_code ec;
    if (!fs::exists(s.cluster, ec)) c->fail("no cluster file \"" + s.cluster + "\" and no bundled cluster of that name");
    if (auto o = root.find("cluster_overrides")) {
      for (const ConfigNode& v : o->elements()) s.cluster_overrides.push_back(v.as_string());
    }
  } else {
    s.nodes = existing_file(root.at("nodes"), base_dir, "a node list (CSV: sn, cpu_milli, memory_mib, gpu, model)");
    if (auto o = root.find("cluster_overrides")) o->fail("\"cluster_overrides\" apply to a \"cluster\" file");
    if (auto f = root.find("node_fraction")) {
      s.node_fraction = f->as_number();
      if (!(s.node_fraction > 0 && s.node_fraction <= 1)) f->fail_expected("a fraction in (0, 1]");
    }
  }
  if (s.nodes.empty() && root.has("node_fraction")) root.at("node_fraction").fail("\"node_fraction\" applies to a \"nodes\" list");
  if (auto p = root.find("profile")) s.profile = resolve_profile(p->as_string(), base_dir, root.file(), p->path());
  if (auto c = root.find("classes")) {
    if (!c->is_object()) c->fail_expected("an object of job classes by name");
    for (const auto& [name, node] : c->members()) s.classes.emplace(name, parse_class(name, node, base_dir));
  }
  s.jobs = parse_jobs(root.at("jobs"), base_dir, s.classes);
  if (auto v = root.find("policy")) s.policy = v->as_enum(kQueuePolicyNames);
  if (auto v = root.find("preemption")) {
    s.preemption = v->as_bool();
    if (s.preemption && s.policy != QueuePolicy::kPriority) v->fail("preemption applies to \"policy\": \"priority\"");
  }
  if (auto v = root.find("placement")) s.placement = v->as_enum(kPlacementPolicyNames);
  if (auto v = root.find("interference")) s.interference = v->as_bool();
  if (!s.nodes.empty()) {
    s.interference = false;
    if (s.placement == PlacementPolicy::kNetworkAware) root.at("placement").fail("network-aware placement needs a \"cluster\" file with its network");
    if (!s.classes.empty()) root.at("classes").fail("job classes are timed on a \"cluster\" file's GPUs and network; a node list has neither");
    if (!s.profile.empty()) root.at("profile").fail("a profile times job classes on a \"cluster\" file; a node list has no classes");
  }
  if (auto c = root.find("checkpoint")) {
    c->expect_only({"interval", "restart"});
    if (auto v = c->find("interval")) s.checkpoint.interval = as_long_duration(*v);
    if (auto v = c->find("restart")) s.checkpoint.restart = as_long_duration(*v);
  }
  if (auto f = root.find("failures")) {
    f->expect_only({"mtbf_per_gpu", "repair", "seed"});
    s.failures.mtbf_per_gpu = as_long_duration(f->at("mtbf_per_gpu"));
    s.failures.repair = as_long_duration(f->at("repair"));
    if (auto v = f->find("seed")) s.failures.seed = static_cast<std::uint64_t>(v->as_int(0, std::numeric_limits<std::int64_t>::max()));
  }
  if (auto v = root.find("seed")) s.seed = static_cast<std::uint64_t>(v->as_int(0, std::numeric_limits<std::int64_t>::max()));
  return s;
}

ScheduleScenario load_schedule_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_schedule_scenario(ConfigDocument::load(path, overrides).root(), fs::path(path).parent_path().string());
}

}  // namespace cs::drv
