#include "taskgraph/task_graph.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/config.h"
#include "core/errors.h"

namespace cs::tg {

std::uint32_t TaskGraph::simulated_members(std::uint32_t group) const {
  std::uint32_t n = 0;
  for (std::uint32_t r : groups_.at(group).ranks) n += r < ranks_;
  return n;
}

std::uint32_t TaskGraph::add_group(ProcessGroup g) {
  groups_.push_back(std::move(g));
  return static_cast<std::uint32_t>(groups_.size() - 1);
}

std::uint32_t TaskGraph::intern(std::string_view name) {
  if (auto it = name_index_.find(name); it != name_index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  name_index_.emplace(std::string(name), id);
  return id;
}

void TaskGraph::annotate(OpId id, std::string name, std::string value) {
  if (id >= ops_.size()) throw InternalError("TaskGraph::annotate: no op " + std::to_string(id));
  annotations_.push_back({id, std::move(name), std::move(value)});
}

OpId TaskGraph::push(Op op, std::string_view name, std::span<const OpId> deps) {
  const auto id = static_cast<OpId>(ops_.size());
  for (OpId d : deps) {
    if (d >= id) throw InternalError("TaskGraph: a dependency must be an earlier op");
  }
  op.name = intern(name);
  op.deps_begin = static_cast<std::uint32_t>(deps_.size());
  op.deps_count = static_cast<std::uint32_t>(deps.size());
  deps_.insert(deps_.end(), deps.begin(), deps.end());
  ops_.push_back(op);
  return id;
}

std::uint32_t TaskGraph::add_gemm_mix(std::vector<GemmShape> shapes) {
  for (std::uint32_t i = 0; i < gemm_mixes_.size(); ++i) {
    if (gemm_mixes_[i] == shapes) return i;
  }
  gemm_mixes_.push_back(std::move(shapes));
  return static_cast<std::uint32_t>(gemm_mixes_.size() - 1);
}

void TaskGraph::set_gemm_mix(OpId id, std::uint32_t mix) {
  if (id >= ops_.size() || ops_[id].kind != OpKind::kCompute || (mix != kNoGemmMix && mix >= gemm_mixes_.size())) {
    throw InternalError("TaskGraph::set_gemm_mix: not a compute op or no such mix");
  }
  ops_[id].gemm_mix = mix;
}

OpId TaskGraph::add_compute(std::uint32_t rank, std::string_view name, Flops flops, Bytes memory,
                            ComputeClass cls, std::span<const OpId> deps) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = Stream::kCompute;
  op.compute_class = cls;
  op.rank = rank;
  op.flops = flops;
  op.bytes = memory;
  return push(op, name, deps);
}

OpId TaskGraph::add_delay(std::uint32_t rank, Stream stream, std::string_view name, Duration d,
                          std::span<const OpId> deps) {
  Op op;
  op.kind = OpKind::kDelay;
  op.stream = stream;
  op.rank = rank;
  op.duration = d;
  return push(op, name, deps);
}

OpId TaskGraph::add_collective(std::uint32_t rank, std::uint32_t group, std::string_view name,
                               CollectiveOp cop, Bytes size, std::uint64_t instance,
                               std::span<const OpId> deps, CollectiveAlgorithm algorithm) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = groups_.at(group).stream;
  op.collective = cop;
  op.algorithm = algorithm;
  op.rank = rank;
  op.group = group;
  op.bytes = size;
  op.instance = instance;
  return push(op, name, deps);
}

OpId TaskGraph::add_load(std::uint32_t rank, std::string_view name, Bytes bytes, std::span<const OpId> deps) {
  Op op;
  op.kind = OpKind::kLoad;
  op.stream = Stream::kData;
  op.rank = rank;
  op.bytes = bytes;
  return push(op, name, deps);
}

OpId TaskGraph::add_send(std::uint32_t rank, Stream stream, std::uint32_t to, Bytes bytes,
                         std::uint64_t tag, std::string_view name, std::span<const OpId> deps) {
  return add_point_to_point(OpKind::kSend, rank, stream, to, bytes, tag, name, deps);
}

OpId TaskGraph::add_recv(std::uint32_t rank, Stream stream, std::uint32_t from, Bytes bytes,
                         std::uint64_t tag, std::string_view name, std::span<const OpId> deps) {
  return add_point_to_point(OpKind::kRecv, rank, stream, from, bytes, tag, name, deps);
}

OpId TaskGraph::add_point_to_point(OpKind kind, std::uint32_t rank, Stream stream, std::uint32_t peer, Bytes bytes,
                                   std::uint64_t tag, std::string_view name, std::span<const OpId> deps) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.rank = rank;
  op.peer = peer;
  op.bytes = bytes;
  op.tag = tag;
  return push(op, name, deps);
}

void TaskGraph::validate(const std::string& file) const {
  auto fail = [&](const std::string& path, const std::string& msg) { throw ConfigError(file, path, msg); };
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string path = "/groups/" + std::to_string(g);
    if (groups_[g].ranks.empty()) fail(path + "/ranks", "a process group needs at least one rank");
    std::vector<std::uint32_t> sorted = groups_[g].ranks;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) fail(path + "/ranks", "a rank appears twice");
    if (sorted.back() >= all_ranks()) {
      fail(path + "/ranks", "rank " + std::to_string(sorted.back()) + " is not below ranks + mirrored = " + std::to_string(all_ranks()));
    }
    if (sorted.front() >= ranks_) fail(path + "/ranks", "a process group needs at least one simulated rank (below ranks = " + std::to_string(ranks_) + ")");
  }
  if (const RankSymmetries::Problem p = symmetries_.check(all_ranks()); !p.message.empty()) fail("/symmetries" + p.path, p.message);
  // Collective members: for each instance, one op per group member, all with the same group,
  // op and size. Send/recv: every send has exactly one matching recv.
  std::map<std::uint64_t, std::vector<OpId>> instances;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, int> p2p;
  for (OpId id = 0; id < ops_.size(); ++id) {
    const Op& op = ops_[id];
    const std::string path = "/ops/" + std::to_string(id);
    if (op.rank >= ranks_) fail(path + "/rank", "rank " + std::to_string(op.rank) + " is not below ranks = " + std::to_string(ranks_));
    if (op.kind == OpKind::kCollective) {
      if (op.group >= groups_.size()) fail(path + "/group", "no process group " + std::to_string(op.group));
      const auto& members = groups_[op.group].ranks;
      if (std::find(members.begin(), members.end(), op.rank) == members.end()) fail(path + "/rank", "rank is not a member of its collective's group");
      instances[op.instance].push_back(id);
    }
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      if (op.peer >= ranks_) fail(path + (op.kind == OpKind::kSend ? "/to" : "/from"), "no rank " + std::to_string(op.peer));
      const bool send = op.kind == OpKind::kSend;
      p2p[{send ? op.rank : op.peer, send ? op.peer : op.rank, op.tag}] += send ? 1 : -1;
    }
  }
  for (const auto& [instance, ids] : instances) {
    const Op& first = ops_[ids[0]];
    const std::uint32_t members = simulated_members(first.group);
    if (ids.size() != members) {
      fail("/ops/" + std::to_string(ids[0]) + "/instance", "collective instance " + std::to_string(instance) + " has " +
           std::to_string(ids.size()) + " member ops but its group has " + std::to_string(members) + " simulated ranks");
    }
    for (OpId id : ids) {
      const Op& o = ops_[id];
      if (o.group != first.group || o.collective != first.collective || o.bytes != first.bytes) {
        fail("/ops/" + std::to_string(id), "member ops of collective instance " + std::to_string(instance) + " disagree on group, op or size");
      }
    }
  }
  for (const auto& [key, balance] : p2p) {
    if (balance != 0) {
      fail("/ops", "send/recv from rank " + std::to_string(std::get<0>(key)) + " to rank " + std::to_string(std::get<1>(key)) +
                       " with tag " + std::to_string(std::get<2>(key)) + " is not matched one to one");
    }
  }
}

namespace {

std::string flop_string(Flops f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17gFLOP", f.value());
  return buf;
}

std::uint32_t as_u32(const ConfigNode& n) {
  return static_cast<std::uint32_t>(n.as_int(0, UINT32_MAX));
}

}  // namespace

nlohmann::json TaskGraph::to_json() const {
  nlohmann::json j;
  j["schema"] = "clustersim.taskgraph/2";
  j["ranks"] = ranks_;
  if (mirrored_ > 0) j["mirrored"] = mirrored_;
  if (issue_ != IssueOrder::kStreamOrder) j["issue"] = to_string(issue_);
  if (!symmetries_.empty()) j["symmetries"] = symmetries_.to_json();
  j["groups"] = nlohmann::json::array();
  for (const auto& g : groups_) j["groups"].push_back({{"name", g.name}, {"stream", to_string(g.stream)}, {"ranks", g.ranks}});
  if (!gemm_mixes_.empty()) {
    j["gemm_mixes"] = nlohmann::json::array();
    for (const auto& mix : gemm_mixes_) {
      nlohmann::json m = nlohmann::json::array();
      for (const GemmShape& g : mix) m.push_back({g.m, g.n, g.k});
      j["gemm_mixes"].push_back(std::move(m));
    }
  }
  j["ops"] = nlohmann::json::array();
  for (OpId id = 0; id < ops_.size(); ++id) {
    const Op& op = ops_[id];
    nlohmann::json o = {{"id", id}, {"rank", op.rank}, {"kind", to_string(op.kind)}, {"name", names_[op.name]}};
    switch (op.kind) {
      case OpKind::kCompute:
        o["class"] = to_string(op.compute_class);
        o["flops"] = flop_string(op.flops);
        o["bytes"] = std::to_string(op.bytes.value()) + "B";
        if (op.gemm_mix != kNoGemmMix) o["gemm_mix"] = op.gemm_mix;
        break;
      case OpKind::kCollective:
        o["group"] = op.group;
        o["op"] = to_string(op.collective);
        o["size"] = std::to_string(op.bytes.value()) + "B";
        o["instance"] = op.instance;
        o["algorithm"] = to_string(op.algorithm);
        break;
      case OpKind::kSend:
      case OpKind::kRecv:
        o["stream"] = to_string(op.stream);
        o[op.kind == OpKind::kSend ? "to" : "from"] = op.peer;
        o["bytes"] = std::to_string(op.bytes.value()) + "B";
        o["tag"] = op.tag;
        break;
      case OpKind::kDelay:
        o["stream"] = to_string(op.stream);
        o["duration"] = std::to_string(op.duration.count()) + "ps";
        break;
      case OpKind::kLoad:
        o["bytes"] = std::to_string(op.bytes.value()) + "B";
        break;
    }
    o["deps"] = std::vector<OpId>(deps_.begin() + op.deps_begin, deps_.begin() + op.deps_begin + op.deps_count);
    j["ops"].push_back(std::move(o));
  }
  if (!annotations_.empty()) {
    j["annotations"] = nlohmann::json::array();
    for (const Annotation& a : annotations_) j["annotations"].push_back({{"op", a.op}, {"name", a.name}, {"value", a.value}});
  }
  return j;
}

TaskGraph TaskGraph::from_json(const nlohmann::json& json, const std::string& file) {
  const ConfigDocument doc = ConfigDocument::from_json(json, file);
  const ConfigNode root = doc.root();
  root.expect_only({"schema", "ranks", "mirrored", "issue", "symmetries", "groups", "gemm_mixes", "ops", "annotations"});
  // Schema 1 differs only in its symmetries (dense permutations), which are still read.
  const std::string schema = root.at("schema").as_string();
  if (schema != "clustersim.taskgraph/2" && schema != "clustersim.taskgraph/1") {
    root.at("schema").fail_expected("\"clustersim.taskgraph/2\" (or 1)");
  }
  TaskGraph g(static_cast<std::uint32_t>(root.at("ranks").as_int(1, 1 << 24)),
              root.has("mirrored") ? static_cast<std::uint32_t>(root.at("mirrored").as_int(0, 1 << 24)) : 0);
  if (auto issue = root.find("issue")) g.issue_ = issue->as_enum(kIssueOrderNames);
  if (auto sym = root.find("symmetries")) g.symmetries_ = RankSymmetries::from_config(*sym);
  if (auto mixes = root.find("gemm_mixes")) {
    for (const ConfigNode& mn : mixes->elements()) {
      std::vector<GemmShape> shapes;
      for (const ConfigNode& sn : mn.elements()) {
        if (sn.size() != 3) sn.fail_expected("a GEMM shape [m, n, k]");
        shapes.push_back({sn.at(std::size_t{0}).as_int(1, INT64_MAX), sn.at(std::size_t{1}).as_int(1, INT64_MAX), sn.at(std::size_t{2}).as_int(1, INT64_MAX)});
      }
      g.gemm_mixes_.push_back(std::move(shapes));  // kept as listed: op indices refer to them
    }
  }
  for (const ConfigNode& gn : root.at("groups").elements()) {
    gn.expect_only({"name", "stream", "ranks"});
    ProcessGroup pg;
    pg.name = gn.at("name").as_string();
    pg.stream = gn.at("stream").as_enum(kStreamNames);
    for (const ConfigNode& r : gn.at("ranks").elements()) pg.ranks.push_back(as_u32(r));
    g.add_group(std::move(pg));
  }
  const auto ops = root.at("ops").elements();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ConfigNode& on = ops[i];
    if (on.at("id").as_int() != static_cast<std::int64_t>(i)) on.at("id").fail_expected("id " + std::to_string(i) + " (ops are listed in id order)");
    const OpKind kind = on.at("kind").as_enum(kOpKindNames);
    std::vector<OpId> deps;
    for (const ConfigNode& d : on.at("deps").elements()) {
      const std::uint32_t dep = as_u32(d);
      if (dep >= i) d.fail_expected("the id of an earlier op");
      deps.push_back(dep);
    }
    const std::uint32_t rank = as_u32(on.at("rank"));
    const std::string name = on.at("name").as_string();
    switch (kind) {
      case OpKind::kCompute: {
        on.expect_only({"id", "rank", "kind", "name", "class", "flops", "bytes", "gemm_mix", "deps"});
        const OpId id = g.add_compute(rank, name, on.at("flops").as_flops(), on.at("bytes").as_bytes(), on.at("class").as_enum(kComputeClassNames), deps);
        if (auto mix = on.find("gemm_mix")) {
          const std::uint32_t m = as_u32(*mix);
          if (m >= g.gemm_mixes_.size()) mix->fail_expected("a gemm_mixes index below " + std::to_string(g.gemm_mixes_.size()));
          g.set_gemm_mix(id, m);
        }
        break;
      }
      case OpKind::kCollective: {
        on.expect_only({"id", "rank", "kind", "name", "group", "op", "size", "instance", "algorithm", "deps"});
        const std::uint32_t group = as_u32(on.at("group"));
        if (group >= g.groups_.size()) on.at("group").fail_expected("a process group index below " + std::to_string(g.groups_.size()));
        const auto cop = parse_collective_op(on.at("op").is_string() ? on.at("op").as_string() : "");
        if (!cop) on.at("op").fail_expected("a collective such as \"all_reduce\"");
        CollectiveAlgorithm algo = CollectiveAlgorithm::kAuto;
        if (auto a = on.find("algorithm")) {
          const auto parsed = parse_collective_algorithm(a->is_string() ? a->as_string() : "");
          if (!parsed) a->fail_expected("an algorithm such as \"ring\" or \"auto\"");
          algo = *parsed;
        }
        g.add_collective(rank, group, name, *cop, on.at("size").as_bytes(),
                         static_cast<std::uint64_t>(on.at("instance").as_int(0, INT64_MAX)), deps, algo);
        break;
      }
      case OpKind::kSend:
        on.expect_only({"id", "rank", "kind", "name", "stream", "to", "bytes", "tag", "deps"});
        g.add_send(rank, on.at("stream").as_enum(kStreamNames), as_u32(on.at("to")), on.at("bytes").as_bytes(),
                   static_cast<std::uint64_t>(on.at("tag").as_int(0, INT64_MAX)), name, deps);
        break;
      case OpKind::kRecv:
        on.expect_only({"id", "rank", "kind", "name", "stream", "from", "bytes", "tag", "deps"});
        g.add_recv(rank, on.at("stream").as_enum(kStreamNames), as_u32(on.at("from")), on.at("bytes").as_bytes(),
                   static_cast<std::uint64_t>(on.at("tag").as_int(0, INT64_MAX)), name, deps);
        break;
      case OpKind::kLoad:
        on.expect_only({"id", "rank", "kind", "name", "bytes", "deps"});
        g.add_load(rank, name, on.at("bytes").as_bytes(), deps);
        break;
      case OpKind::kDelay:
        on.expect_only({"id", "rank", "kind", "name", "stream", "duration", "deps"});
        g.add_delay(rank, on.at("stream").as_enum(kStreamNames), name, on.at("duration").as_duration(kMaxInputDuration), deps);
        break;
    }
  }
  if (auto notes = root.find("annotations")) {
    for (const ConfigNode& an : notes->elements()) {
      an.expect_only({"op", "name", "value"});
      const std::uint32_t op = as_u32(an.at("op"));
      if (op >= g.size()) an.at("op").fail_expected("an op id below " + std::to_string(g.size()));
      g.annotate(op, an.at("name").as_string(), an.at("value").as_string());
    }
  }
  g.validate(file);
  return g;
}

}  // namespace cs::tg
