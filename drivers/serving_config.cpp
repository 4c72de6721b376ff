#include "drivers/serving_config.h"

#include <filesystem>
#include <limits>

#include "core/limits.h"
#include "core/unit_parse.h"
#include "drivers/config_paths.h"

namespace cs::drv {
namespace fs = std::filesystem;
namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;  // 16 M tokens per request

LengthDistribution parse_length(const ConfigNode& n) {
  LengthDistribution d;
  if (n.is_number()) {
    d.constant = n.as_int(1, kMaxTokens);
    d.max = d.constant;
    return d;
  }
  if (!n.is_object()) n.fail_expected("a token count, {\"uniform\": [lo, hi]} or {\"lognormal\": {\"median\": m, \"sigma\": s}}");
  n.expect_only({"uniform", "lognormal", "max"});
  if (n.has("uniform") == n.has("lognormal")) n.fail("expected exactly one of \"uniform\" and \"lognormal\"");
  if (auto u = n.find("uniform")) {
    if (!u->is_array() || u->size() != 2) u->fail_expected("[lo, hi]");
    d.kind = LengthDistribution::Kind::kUniform;
    d.lo = u->at(std::size_t{0}).as_int(1, kMaxTokens);
    d.hi = u->at(std::size_t{1}).as_int(d.lo, kMaxTokens);
    d.max = d.hi;
  } else {
    const ConfigNode l = n.at("lognormal");
    l.expect_only({"median", "sigma"});
    d.kind = LengthDistribution::Kind::kLognormal;
    d.median = l.at("median").as_number();
    if (!(d.median >= 1 && d.median <= static_cast<double>(kMaxTokens))) l.at("median").fail_expected("a median of 1 to 16777216 tokens");
    d.sigma = l.at("sigma").as_number();
    if (!(d.sigma >= 0 && d.sigma <= 4)) l.at("sigma").fail_expected("a sigma from 0 to 4");
    d.max = n.has("max") ? n.at("max").as_int(1, kMaxTokens) : 32768;
  }
  if (d.kind == LengthDistribution::Kind::kUniform && n.has("max")) n.at("max").fail("\"max\" applies to a lognormal only");
  return d;
}

RequestStreamSpec parse_requests(const ConfigNode& n, const std::string& base_dir) {
  RequestStreamSpec r;
  r.where = n.path();
  if (n.has("trace")) {
    n.expect_only({"trace", "time_scale", "limit"});
    const ConfigNode t = n.at("trace");
    if (t.as_string().empty()) t.fail_expected("a trace file (CSV: TIMESTAMP, ContextTokens, GeneratedTokens)");
    r.trace = fs::path(t.as_string()).is_absolute() || base_dir.empty() ? t.as_string()
                                                                        : (fs::path(base_dir) / t.as_string()).string();
    std::error_code ec;
    if (!fs::exists(r.trace, ec)) t.fail("no trace file \"" + r.trace + "\"");
    if (auto s = n.find("time_scale")) {
      r.time_scale = s->as_number();
      if (!(r.time_scale > 0 && r.time_scale <= 1e6)) s->fail_expected("a positive factor up to 1e6");
    }
    if (auto l = n.find("limit")) r.limit = l->as_int(1, std::int64_t{1} << 40);
    return r;
  }
  n.expect_only({"arrival", "rate", "cv", "count", "prompt_tokens", "output_tokens", "sessions", "seed"});
  if (auto a = n.find("arrival")) r.arrival = a->as_enum(kArrivalProcessNames);
  r.rate = n.at("rate").as_number();
  if (!(r.rate > 0 && r.rate <= 1e6)) n.at("rate").fail_expected("a positive rate in requests per second (at most 1e6)");
  if (auto c = n.find("cv")) {
    if (r.arrival != ArrivalProcess::kGamma) c->fail("\"cv\" applies to \"arrival\": \"gamma\" only");
    r.cv = c->as_number();
    if (!(r.cv >= 0.05 && r.cv <= 20)) c->fail_expected("a coefficient of variation from 0.05 to 20");
  }
  r.count = n.at("count").as_int(1, std::int64_t{1} << 40);
  if (r.count > limits().requests) {
    n.at("count").fail(std::to_string(r.count) + " requests exceed the limit of " + std::to_string(limits().requests) + "; " + limit_hint("requests"));
  }
  r.prompt = parse_length(n.at("prompt_tokens"));
  r.output = parse_length(n.at("output_tokens"));
  if (auto s = n.find("sessions")) r.sessions = s->as_int(0, std::int64_t{1} << 30);
  if (auto s = n.find("seed")) r.seed = static_cast<std::uint64_t>(s->as_int(0, std::numeric_limits<std::int64_t>::max()));
  return r;
}

SchedulerSpec parse_scheduler(const ConfigNode& n) {
  n.expect_only({"max_batch_tokens", "max_batch_requests", "chunked_prefill", "block_tokens", "memory_fraction", "preemption", "kv_admission"});
  SchedulerSpec s;
  if (auto v = n.find("max_batch_tokens")) s.max_batch_tokens = v->as_int(1, std::int64_t{1} << 22);
  if (auto v = n.find("max_batch_requests")) s.max_batch_requests = v->as_int(1, std::int64_t{1} << 20);
  if (auto v = n.find("chunked_prefill")) s.chunked_prefill = v->as_bool();
  if (auto v = n.find("block_tokens")) s.block_tokens = v->as_int(1, 4096);
  if (auto v = n.find("memory_fraction")) {
    s.memory_fraction = v->as_number();
    if (!(s.memory_fraction > 0 && s.memory_fraction <= 1)) v->fail_expected("a fraction in (0, 1]");
  }
  if (auto v = n.find("preemption")) s.preemption = v->as_enum(kPreemptionNames);
  if (auto v = n.find("kv_admission")) s.admission = v->as_enum(kKvAdmissionNames);
  return s;
}

SimTime time_point(const ConfigNode& n) { return kTimeZero + n.as_duration(kMaxInputDuration); }

FailureSpec parse_failures(const ConfigNode& n) {
  n.expect_only({"events", "mtbf_per_gpu", "repair", "seed", "policy"});
  FailureSpec f;
  if (auto ev = n.find("events")) {
    for (const ConfigNode& e : ev->elements()) {
      e.expect_only({"replica", "gpu", "server", "link", "switch", "at", "until"});
      FailureEvent x;
      x.where = e.path();
      int named = 0;
      for (const char* k : {"replica", "gpu", "server", "link", "switch"}) named += e.has(k) ? 1 : 0;
      if (named != 1) e.fail("expected exactly one of \"replica\", \"gpu\", \"server\", \"link\" and \"switch\"");
      if (auto v = e.find("switch")) x.device = v->as_string();
      if (auto v = e.find("link")) {
        if (!v->is_array() || v->size() != 2) v->fail_expected("the two devices a cable joins, [\"leaf0\", \"spine3\"]");
        for (const ConfigNode& d : v->elements()) x.link.push_back(d.as_string());
      }
      if (auto v = e.find("replica")) x.replica = static_cast<int>(v->as_int(0, 1 << 20));
      if (auto v = e.find("gpu")) x.gpu = static_cast<int>(v->as_int(0, 1 << 24));
      if (auto v = e.find("server")) x.server = static_cast<int>(v->as_int(0, 1 << 24));
      x.at = time_point(e.at("at"));
      if (auto u = e.find("until")) {
        x.until = time_point(*u);
        if (*x.until <= x.at) u->fail_expected("a time after \"at\"");
      }
      f.events.push_back(x);
    }
  }
  if (auto m = n.find("mtbf_per_gpu")) {
    f.mtbf_per_gpu = as_long_duration(*m);
    if (!n.has("repair")) n.fail("a failure process (\"mtbf_per_gpu\") needs a \"repair\" time");
  }
  if (auto r = n.find("repair")) {
    if (!n.has("mtbf_per_gpu")) r->fail("\"repair\" applies to a failure process (\"mtbf_per_gpu\")");
    const LongDuration repair = as_long_duration(*r);
    if (repair.value() > to_seconds(kMaxDuration)) r->fail("a repair time longer than the simulated clock's range (13 days)");
    f.repair = duration_from_seconds(repair.value());
  }
  if (auto s = n.find("seed")) f.seed = static_cast<std::uint64_t>(s->as_int(0, std::numeric_limits<std::int64_t>::max()));
  if (auto p = n.find("policy")) f.policy = p->as_enum(kFailurePolicyNames);
  return f;
}

}  // namespace

ServingScenario parse_serving_scenario(const ConfigNode& root, const std::string& base_dir) {
  root.expect_only({"name", "description", "cluster", "cluster_overrides", "model", "replicas", "profile", "router",
                    "scheduler", "requests", "slo", "failures", "disaggregation"});
  ServingScenario s;
  s.file = root.file();
  s.name = root.has("name") ? root.at("name").as_string() : fs::path(root.file()).stem().string();
  if (auto d = root.find("description")) d->as_string();
  if (root.at("cluster").as_string().empty()) root.at("cluster").fail_expected("a cluster file or a bundled cluster name");
  s.cluster = resolve_config(root.at("cluster").as_string(), base_dir, "clusters");
  std::error_code ec;
  if (!fs::exists(s.cluster, ec)) root.at("cluster").fail("no cluster file \"" + s.cluster + "\" and no bundled cluster of that name");
  if (auto o = root.find("cluster_overrides")) {
    for (const ConfigNode& v : o->elements()) s.cluster_overrides.push_back(v.as_string());
  }
  s.model = resolve_model(root.at("model").as_string(), base_dir, root.file(), root.at("model").path());

  const ConfigNode r = root.at("replicas");
  r.expect_only({"count", "tp", "pp", "first_gpu", "precision", "kv_cache", "expert_parallel"});
  s.replicas = static_cast<int>(r.at("count").as_int(1, 1 << 20));
  if (auto v = r.find("tp")) s.tp = static_cast<int>(v->as_int(1, 1024));
  if (auto v = r.find("pp")) s.pp = static_cast<int>(v->as_int(1, 1024));
  if (auto v = r.find("first_gpu")) s.first_gpu = static_cast<int>(v->as_int(0, 1 << 24));
  if (auto v = r.find("precision")) s.precision = v->as_enum(wl::kPrecisionNames);
  if (auto v = r.find("expert_parallel")) s.expert_parallel = v->as_bool();
  if (auto v = r.find("kv_cache")) s.kv_precision = v->as_choice({"auto", "fp8"}) == 1 ? wl::Precision::kFp8 : wl::Precision::kBf16;

  if (auto p = root.find("profile")) s.profile = resolve_profile(p->as_string(), base_dir, root.file(), p->path());
  if (auto v = root.find("router")) s.router = v->as_enum(kRouterPolicyNames);
  if (auto v = root.find("scheduler")) s.scheduler = parse_scheduler(*v);
  s.requests = parse_requests(root.at("requests"), base_dir);
  if (auto v = root.find("slo")) {
    v->expect_only({"ttft", "tpot"});
    if (auto t = v->find("ttft")) s.slo.ttft = t->as_duration(kMaxInputDuration);
    if (auto t = v->find("tpot")) s.slo.tpot = t->as_duration(kMaxInputDuration);
  }
  if (auto d = root.find("disaggregation")) {
    d->expect_only({"prefill"});
    const ConfigNode p = d->at("prefill");
    p.expect_only({"count", "tp", "first_gpu"});
    PrefillPool pool;
    pool.count = static_cast<int>(p.at("count").as_int(1, 1 << 20));
    if (auto v = p.find("tp")) pool.tp = static_cast<int>(v->as_int(1, 1024));
    if (auto v = p.find("first_gpu")) pool.first_gpu = static_cast<int>(v->as_int(0, 1 << 24));
    s.prefill = pool;
    if (s.pp > 1) d->fail("disaggregation with pipeline stages in the decode replicas is not modelled (their caches would be split by stage)");
  }
  if (auto v = root.find("failures")) {
    s.failures = parse_failures(*v);
    for (const FailureEvent& e : s.failures.events) {
      const int replicas = s.replicas + (s.prefill ? s.prefill->count : 0);
      if (e.replica >= replicas) {
        throw ConfigError(s.file, e.where + "/replica",
                          "replica " + std::to_string(e.replica) + " does not exist (the scenario has " +
                              std::to_string(replicas) + ")");
      }
    }
  }
  return s;
}

ServingScenario load_serving_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_serving_scenario(ConfigDocument::load(path, overrides).root(), fs::path(path).parent_path().string());
}

}  // namespace cs::drv
