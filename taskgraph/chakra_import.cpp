#include "taskgraph/chakra_import.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <tuple>
#include <unordered_map>

#include "core/config.h"
#include "core/errors.h"
#include "taskgraph/chakra_work.h"

namespace cs::tg {
namespace {

constexpr std::uint32_t kNoOp = UINT32_MAX;

// Chakra's CollectiveCommType (et_def.proto) -> clustersim's collectives; gather, scatter and
// barrier have none and are replayed as recorded.
std::optional<CollectiveOp> collective_of(std::uint64_t comm_type) {
  switch (comm_type) {
    case 0: return CollectiveOp::kAllReduce;
    case 1: return CollectiveOp::kReduce;
    case 2: return CollectiveOp::kAllGather;
    case 5: return CollectiveOp::kBroadcast;
    case 6: return CollectiveOp::kAllToAll;
    case 7: case 8: return CollectiveOp::kReduceScatter;
    default: return std::nullopt;
  }
}


bool is_cpu_op(const ChakraNode& n) {
  const ChakraAttribute* a = n.attr("is_cpu_op");
  return a && a->int_value != 0;
}

std::string attribute_text(const ChakraAttribute& a) {
  switch (a.kind) {
    case ChakraAttribute::Kind::kInt: return std::to_string(a.int_value);
    case ChakraAttribute::Kind::kUint: return std::to_string(a.uint_value);
    case ChakraAttribute::Kind::kDouble: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", a.double_value);
      return buf;
    }
    case ChakraAttribute::Kind::kBool: return a.int_value ? "true" : "false";
    case ChakraAttribute::Kind::kString: return a.string_value;
    case ChakraAttribute::Kind::kList: return "list of " + std::to_string(a.count);
    case ChakraAttribute::Kind::kBytes: return std::to_string(a.count) + " bytes";
  }
  return {};
}

// The attributes the mapping reads; every other one becomes an annotation.
bool interpreted(std::string_view name) {
  static constexpr std::string_view kRead[] = {"is_cpu_op", "comm_type", "comm_size", "comm_src", "comm_dst",
                                               "comm_tag", "pg_name", "num_ops", "tensor_size"};
  return name.rfind("cs_", 0) == 0 || std::find(std::begin(kRead), std::end(kRead), name) != std::end(kRead);
}


std::string rank_list(const std::vector<std::uint32_t>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

// What a node becomes.
enum class Role : std::uint8_t { kSkip, kHost, kKernelRecorded, kKernelComputed, kCollective, kCommRecorded, kSend, kRecv, kMemory, kLoad };

struct Planned {
  Role role = Role::kSkip;
  Stream stream = Stream::kCompute;
  std::optional<ChakraKernelWork> work;
};

class Importer {
 public:
  Importer(std::span<const ChakraTrace> traces, const ChakraImportOptions& o) : traces_(traces), o_(o) {}

  ChakraImport run() {
    if (traces_.empty()) throw InputError("", "traces", "no trace to import");
    const auto files = static_cast<std::uint32_t>(traces_.size());
    const std::uint32_t world = o_.world == 0 ? files : o_.world;
    if (world < files) throw InputError(traces_[0].file, "--world", "the job has " + std::to_string(world) + " ranks but there are " + std::to_string(files) + " traces");
    if (world > files && files != 1) {
      throw InputError(traces_[0].file, "--world", "a trace is replicated to more ranks only from one rank's trace (there are " + std::to_string(files) + ")");
    }
    replicated_ = world > files;
    ChakraImport out{TaskGraph(files, world - files), {}};
    graph_ = &out.graph;
    report_ = &out.report;
    report_->ranks = files;
    report_->control_enforced = o_.control_dependencies;
    if (replicated_) {
      RankSymmetries sym({GridAxis{world, 1}}, [&] {
        std::vector<std::uint32_t> idx(world);
        for (std::uint32_t r = 0; r < world; ++r) idx[r] = r;
        return idx;
      }());
      for (std::uint32_t s = 1; s < world; ++s) sym.add_shift({s});
      graph_->set_symmetries(std::move(sym));
    }
    graph_->set_issue_order(issue_order());
    // Per rank: the order, what each node becomes, and its collectives by process group.
    orders_.resize(files);
    plans_.resize(files);
    for (std::uint32_t r = 0; r < files; ++r) {
      const ChakraTrace& t = traces_[r];
      orders_[r] = t.topological_order(o_.control_dependencies);
      plans_[r].resize(t.nodes.size());
      for (std::size_t i = 0; i < t.nodes.size(); ++i) plans_[r][i] = plan(t.nodes[i], t, r);
    }
    form_groups(world);
    add_ops();
    for (std::uint32_t r = 0; r < files; ++r) {
      for (const ChakraNode& n : traces_[r].nodes) {
        ++report_->nodes;
        if (n.type < kChakraNodeTypes) {
          ++report_->by_type[n.type];
        } else {
          ++report_->unknown_types[n.type];
        }
        report_->data_dependencies += n.data_deps.size();
        report_->control_dependencies += n.ctrl_deps.size();
      }
    }
    report_->annotations = graph_->annotations().size();
    return out;
  }

 private:
  IssueOrder issue_order() const {
    if (o_.issue) return *o_.issue;
    for (const ChakraAttribute& a : traces_[0].metadata) {
      if (a.name == "cs_issue" && a.kind == ChakraAttribute::Kind::kString) {
        if (auto parsed = parse_enum(kIssueOrderNames, a.string_value)) return *parsed;
        throw InputError(traces_[0].file, "metadata cs_issue", "\"" + a.string_value + "\" is not an issue order");
      }
    }
    return IssueOrder::kReadyFirst;
  }

  [[noreturn]] void fail(std::uint32_t rank, const ChakraNode& n, const std::string& why) const {
    throw InputError(traces_[rank].file, "node " + std::to_string(n.id), why);
  }

  Stream stream_of(const ChakraNode& n, std::uint32_t rank, Stream fallback) const {
    auto s = n.string_attr("cs_stream");
    if (!s) return fallback;
    const auto parsed = parse_enum(kStreamNames, *s);
    if (!parsed) fail(rank, n, "cs_stream \"" + *s + "\" is not a stream");
    return *parsed;
  }

  Planned plan(const ChakraNode& n, const ChakraTrace& t, std::uint32_t rank) const {
    Planned p;
    switch (n.type) {
      case 4: {  // COMP
        if (is_cpu_op(n)) return {Role::kHost, stream_of(n, rank, Stream::kHost), std::nullopt};
        if (o_.retime || n.duration_micros == 0) {  // timed by the compute model if its work is known
          std::optional<ChakraKernelWork> w;
          try {
            w = chakra_kernel_work(n);
          } catch (const InputError& e) {
            throw InputError(t.file, e.json_path(), e.message());
          }
          if (w) return {Role::kKernelComputed, Stream::kCompute, w};
        }
        return {Role::kKernelRecorded, stream_of(n, rank, Stream::kCompute), std::nullopt};
      }
      case 7: {  // COMM_COLL
        if (is_cpu_op(n)) return {Role::kHost, stream_of(n, rank, Stream::kHost), std::nullopt};
        const auto type = n.count_attr("comm_type");
        const auto size = n.count_attr("comm_size");
        if (!o_.recorded_communication && type && size && collective_of(*type)) return {Role::kCollective, Stream::kDp, std::nullopt};
        return {Role::kCommRecorded, stream_of(n, rank, Stream::kDp), std::nullopt};
      }
      case 5: case 6: {  // COMM_SEND, COMM_RECV
        if (is_cpu_op(n)) return {Role::kHost, stream_of(n, rank, Stream::kHost), std::nullopt};
        const bool send = n.type == 5;
        const auto peer = n.count_attr(send ? "comm_dst" : "comm_src");
        if (o_.recorded_communication || !peer || !n.count_attr("comm_size")) return {Role::kCommRecorded, stream_of(n, rank, Stream::kPp), std::nullopt};
        if (replicated_) fail(rank, n, "point-to-point operations need every rank's trace (not a replicated one)");
        if (*peer >= traces_.size()) fail(rank, n, std::string(send ? "comm_dst " : "comm_src ") + std::to_string(*peer) + " is not a rank below " + std::to_string(traces_.size()));
        return {send ? Role::kSend : Role::kRecv, stream_of(n, rank, Stream::kPp), std::nullopt};
      }
      case 2:  // MEM_LOAD: a read from storage when its size is known and it is to be timed
        if (n.count_attr("tensor_size") && (o_.retime || n.duration_micros == 0)) return {Role::kLoad, Stream::kData, std::nullopt};
        return {Role::kMemory, Stream::kData, std::nullopt};
      case 3:  // MEM_STORE
        return {Role::kMemory, Stream::kData, std::nullopt};
      default:  // INVALID, METADATA, unknown
        return p;
    }
  }

  // Groups and, per rank, the collectives of each in order.
  void form_groups(std::uint32_t world) {
    const auto files = static_cast<std::uint32_t>(traces_.size());
    std::map<std::string, std::vector<std::uint32_t>> present;  // pg_name -> ranks holding it
    std::map<std::string, Stream> streams;                       // pg_name -> its first collective's stream
    for (std::uint32_t r = 0; r < files; ++r) {
      for (std::size_t i : orders_[r]) {
        if (plans_[r][i].role != Role::kCollective) continue;
        const ChakraNode& n = traces_[r].nodes[i];
        const std::string key = replicated_ ? std::string() : n.string_attr("pg_name").value_or("");
        auto& ranks = present[key];
        if (ranks.empty() || ranks.back() != r) ranks.push_back(r);
        streams.try_emplace(key, stream_of(n, r, Stream::kDp));
      }
    }
    for (const auto& [key, holders] : present) {
      ProcessGroup g;
      g.name = key.empty() ? "world" : key;
      g.stream = streams.at(key);
      std::string how;
      if (key.empty()) {
        for (std::uint32_t r = 0; r < world; ++r) g.ranks.push_back(r);
        how = replicated_ ? "every rank, replicated from rank 0's trace" : "every rank (no pg_name)";
      } else if (auto it = o_.comm_groups.find(key); it != o_.comm_groups.end()) {
        g.ranks = it->second;
        how = "from the comm-group table";
        for (std::uint32_t r : g.ranks) {
          if (r >= files) throw InputError(traces_[0].file, "pg_name " + key, "the comm-group table lists rank " + std::to_string(r) + " but there are " + std::to_string(files) + " traces");
        }
        for (std::uint32_t r : holders) {
          if (std::find(g.ranks.begin(), g.ranks.end(), r) == g.ranks.end()) {
            throw InputError(traces_[r].file, "pg_name " + key, "rank " + std::to_string(r) + " runs collectives on it but the comm-group table does not list it");
          }
        }
      } else {
        g.ranks = holders;
        how = "inferred: the ranks whose traces use it";
      }
      group_index_[key] = graph_->add_group(g);
      group_how_.push_back(g.name + ": ranks " + rank_list(g.ranks) + " (" + how + ")");
    }
  }

  // The ops `n` waits for, in deps_ (reused from node to node).
  const std::vector<OpId>& deps_of(std::uint32_t rank, const ChakraNode& n) {
    std::vector<OpId>& deps = deps_;
    deps.clear();
    auto add = [&](std::size_t k) {
      const std::uint32_t op = op_of_[rank][k];
      if (op != kNoOp) {
        deps.push_back(op);
      } else if (auto it = passthrough_[rank].find(k); it != passthrough_[rank].end()) {
        deps.insert(deps.end(), it->second.begin(), it->second.end());
      }
    };
    for (std::uint64_t d : n.data_deps) add(index_[rank].find(d));
    if (o_.control_dependencies) {  // on nodes the trace holds, other than itself
      for (std::uint64_t d : n.ctrl_deps) {
        const std::size_t k = index_[rank].find(d);
        if (k != ChakraNodeIndex::kNone && d != n.id) add(k);
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    return deps;
  }

  Duration recorded(const ChakraNode& n) const {
    if (auto ps = n.count_attr("cs_duration_ps")) return Duration{static_cast<std::int64_t>(std::min<std::uint64_t>(*ps, INT64_MAX / 2))};
    return Duration{static_cast<std::int64_t>(std::min<std::uint64_t>(n.duration_micros, 1ull << 40)) * 1'000'000};
  }

  void add_ops() {
    const auto files = static_cast<std::uint32_t>(traces_.size());
    std::size_t node_count = 0, dep_count = 0;
    for (const ChakraTrace& t : traces_) {
      node_count += t.nodes.size();
      for (const ChakraNode& n : t.nodes) dep_count += n.data_deps.size();
    }
    graph_->reserve(node_count, dep_count);
    op_of_.resize(files);
    passthrough_.resize(files);
    for (std::uint32_t r = 0; r < files; ++r) {
      index_.emplace_back(traces_[r]);
      op_of_[r].assign(traces_[r].nodes.size(), kNoOp);
    }
    // Merge the ranks' orders by (node id, rank).
    using Head = std::tuple<std::uint64_t, std::uint32_t>;
    std::vector<Head> heads;
    std::vector<std::size_t> pos(files, 0);
    for (std::uint32_t r = 0; r < files; ++r) {
      if (!orders_[r].empty()) heads.push_back({traces_[r].nodes[orders_[r][0]].id, r});
    }
    std::make_heap(heads.begin(), heads.end(), std::greater<>());
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> seen;  // (group, rank) -> collectives so far
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::pair<std::uint64_t, OpId>> instances;  // (group, k) -> (instance, first op)
    std::map<std::uint32_t, std::uint64_t> per_group;
    // (sender, receiver, tag) -> the (rank, node id) of its sends and of its receives.
    using Ends = std::vector<std::pair<std::uint32_t, std::uint64_t>>;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::pair<Ends, Ends>> transfers;
    while (!heads.empty()) {
      std::pop_heap(heads.begin(), heads.end(), std::greater<>());
      const std::uint32_t r = std::get<1>(heads.back());
      heads.pop_back();
      const std::size_t i = orders_[r][pos[r]++];
      if (pos[r] < orders_[r].size()) {
        heads.push_back({traces_[r].nodes[orders_[r][pos[r]]].id, r});
        std::push_heap(heads.begin(), heads.end(), std::greater<>());
      }
      const ChakraNode& n = traces_[r].nodes[i];
      const Planned& p = plans_[r][i];
      const std::vector<OpId>& deps = deps_of(r, n);
      OpId id = kNoOp;
      switch (p.role) {
        case Role::kSkip:
          ++report_->skipped;
          passthrough_[r].emplace(i, deps);
          continue;
        case Role::kHost:
        case Role::kKernelRecorded:
        case Role::kCommRecorded:
        case Role::kMemory:  // as recorded, each counted under its kind
          id = graph_->add_delay(r, p.stream, n.name, recorded(n), deps);
          ++(p.role == Role::kHost             ? report_->host_ops
             : p.role == Role::kKernelRecorded ? report_->kernels_recorded
             : p.role == Role::kCommRecorded   ? report_->communication_recorded
                                               : report_->memory_ops);
          break;
        case Role::kKernelComputed: {
          id = graph_->add_compute(r, n.name, p.work->flops, p.work->bytes, p.work->cls, deps);
          if (!p.work->gemms.empty()) graph_->set_gemm_mix(id, graph_->add_gemm_mix(p.work->gemms));
          ++report_->kernels_computed;
          break;
        }
        case Role::kLoad:
          id = graph_->add_load(r, n.name, Bytes{static_cast<std::int64_t>(std::min<std::uint64_t>(*n.count_attr("tensor_size"), INT64_MAX))}, deps);
          ++report_->memory_ops;
          break;
        case Role::kSend:
        case Role::kRecv: {
          const bool send = p.role == Role::kSend;
          const auto peer = static_cast<std::uint32_t>(*n.count_attr(send ? "comm_dst" : "comm_src"));
          const Bytes bytes{static_cast<std::int64_t>(std::min<std::uint64_t>(*n.count_attr("comm_size"), INT64_MAX))};
          const std::uint64_t tag = n.count_attr("comm_tag").value_or(0);
          if (peer == r) fail(r, n, std::string(send ? "sends to" : "receives from") + " its own rank");
          id = send ? graph_->add_send(r, p.stream, peer, bytes, tag, n.name, deps) : graph_->add_recv(r, p.stream, peer, bytes, tag, n.name, deps);
          auto& [sends, recvs] = transfers[{send ? r : peer, send ? peer : r, tag}];
          (send ? sends : recvs).push_back({r, n.id});
          ++report_->point_to_point;
          break;
        }
        case Role::kCollective: {
          const std::string key = replicated_ ? std::string() : n.string_attr("pg_name").value_or("");
          const std::uint32_t group = group_index_.at(key);
          const auto& members = graph_->groups()[group].ranks;
          if (std::find(members.begin(), members.end(), r) == members.end()) {
            fail(r, n, "runs a collective on process group " + graph_->groups()[group].name + ", which does not list rank " + std::to_string(r));
          }
          const std::uint64_t k = seen[{group, r}]++;
          const CollectiveOp op = *collective_of(*n.count_attr("comm_type"));
          const Bytes size{static_cast<std::int64_t>(std::min<std::uint64_t>(*n.count_attr("comm_size"), INT64_MAX))};
          auto [it, first] = instances.try_emplace({group, k}, std::pair<std::uint64_t, OpId>{instances.size(), 0});
          CollectiveAlgorithm algo = CollectiveAlgorithm::kAuto;
          if (auto a = n.string_attr("cs_algorithm")) {
            const auto parsed = parse_collective_algorithm(*a);
            if (!parsed) fail(r, n, "cs_algorithm \"" + *a + "\" is not a collective algorithm");
            algo = *parsed;
          }
          if (!first) {
            const Op& other = graph_->op(it->second.second);
            if (other.collective != op || other.bytes != size) {
              fail(r, n, "collective " + std::to_string(k) + " of process group " + graph_->groups()[group].name + " is " + to_string(op) + " of " +
                             std::to_string(size.value()) + " bytes here but " + to_string(other.collective) + " of " +
                             std::to_string(other.bytes.value()) + " bytes on rank " + std::to_string(other.rank));
            }
          }
          id = graph_->add_collective(r, group, n.name, op, size, it->second.first, deps, algo);
          if (first) it->second.second = id;
          ++per_group[group];
          ++report_->collectives;
          break;
        }
      }
      op_of_[r][i] = id;
      for (const ChakraAttribute& a : n.attrs) {
        if (!interpreted(a.name)) graph_->annotate(id, a.name, attribute_text(a));
      }
    }
    // Every send has its receive.
    for (const auto& [key, ends] : transfers) {
      const auto& [sends, recvs] = ends;
      if (sends.size() == recvs.size()) continue;
      const bool more_sends = sends.size() > recvs.size();
      const auto [rank, id] = more_sends ? sends[recvs.size()] : recvs[sends.size()];
      throw InputError(traces_[rank].file, "node " + std::to_string(id),
                       std::string(more_sends ? "a send to rank " + std::to_string(std::get<1>(key)) : "a receive from rank " + std::to_string(std::get<0>(key))) +
                           " with comm_tag " + std::to_string(std::get<2>(key)) + " that no " + (more_sends ? "receive" : "send") + " of that rank matches");
    }
    // Every member of a group ran its k-th collective.
    for (std::uint32_t g = 0; g < graph_->groups().size(); ++g) {
      std::uint64_t most = 0;
      std::uint32_t most_rank = 0;
      for (std::uint32_t r : graph_->groups()[g].ranks) {
        if (r >= files) continue;
        if (seen[{g, r}] > most) most = seen[{g, r}], most_rank = r;
      }
      for (std::uint32_t r : graph_->groups()[g].ranks) {
        if (r < files && seen[{g, r}] != most) {
          throw InputError(traces_[r].file, "pg_name " + graph_->groups()[g].name,
                           "rank " + std::to_string(r) + " runs " + std::to_string(seen[{g, r}]) + " collectives on process group " +
                               graph_->groups()[g].name + " but rank " + std::to_string(most_rank) + " runs " + std::to_string(most));
        }
      }
      report_->groups.push_back(group_how_[g] + ", " + std::to_string(per_group[g]) + " collective ops");
    }
  }

  std::span<const ChakraTrace> traces_;
  const ChakraImportOptions& o_;
  bool replicated_ = false;
  TaskGraph* graph_ = nullptr;
  ChakraImportReport* report_ = nullptr;
  std::vector<std::vector<std::size_t>> orders_;
  std::vector<std::vector<Planned>> plans_;
  std::map<std::string, std::uint32_t> group_index_;
  std::vector<std::string> group_how_;
  std::vector<ChakraNodeIndex> index_;
  std::vector<OpId> deps_;
  std::vector<std::vector<std::uint32_t>> op_of_;
  std::vector<std::unordered_map<std::size_t, std::vector<OpId>>> passthrough_;
};

}  // namespace

ChakraImport import_chakra(std::span<const ChakraTrace> traces, const ChakraImportOptions& options) {
  ChakraImport out = Importer(traces, options).run();
  out.graph.validate(traces[0].file);
  return out;
}

std::map<std::string, std::vector<std::uint32_t>> read_comm_groups(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  const ConfigNode root = doc.root();
  std::map<std::string, std::vector<std::uint32_t>> groups;
  for (const auto& [name, node] : root.members()) {
    std::vector<std::uint32_t> ranks;
    for (const ConfigNode& r : node.elements()) ranks.push_back(static_cast<std::uint32_t>(r.as_int(0, 1 << 24)));
    if (ranks.empty()) node.fail_expected("a list of at least one rank");
    std::vector<std::uint32_t> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) node.fail_expected("distinct ranks");
    groups.emplace(name, std::move(ranks));
  }
  return groups;
}

}  // namespace cs::tg
