// Replaying an imported Chakra trace (taskgraph/chakra_import.h) on the executor, against
// schedules computed here from the trace's records alone: the critical path when every node may
// run once its data dependencies are done, and ASTRA-sim's replay (one CPU operator, one GPU
// kernel and one communication at a time per rank, the ready node with the smallest id first)
// as a list schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "sim/runtime/executor.h"
#include "taskgraph/chakra_import.h"
#include "tests/collectives/test_clusters.h"

namespace cs::rt {
namespace {

const tg::ChakraTrace& sample() {
  static const tg::ChakraTrace t = tg::read_chakra_trace(std::string(CS_SOURCE_DIR) + "/tests/data/chakra/sample.0.et");
  return t;
}

// Runs `g` on a star whose network costs nothing (every op of the sample is timed as recorded).
SimTime replay(const tg::TaskGraph& g) {
  const coll::Machine machine = testing::compute_star(2, true);
  sim::Simulator sim;
  coll::NetworkLayout layout{machine};
  net::FlowNetwork net{sim, layout.capacities()};
  topo::Router router{machine.cluster};
  coll::AlgorithmTuner tuner{machine};
  compute::ComputeModel compute{"bf16"};
  std::vector<topo::NodeId> gpus(machine.cluster.gpus().begin(), machine.cluster.gpus().begin() + g.all_ranks());
  Executor ex(sim, net, router, layout, tuner, compute, g, gpus);
  ex.start();
  sim.run();
  EXPECT_TRUE(ex.finished());
  return ex.end_time();
}

std::unordered_map<std::uint64_t, std::size_t> index_of(const tg::ChakraTrace& t) {
  std::unordered_map<std::uint64_t, std::size_t> idx;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) idx[t.nodes[i].id] = i;
  return idx;
}

// The longest path through the data dependencies, node durations as recorded (microseconds).
std::uint64_t critical_path_us(const tg::ChakraTrace& t) {
  const auto idx = index_of(t);
  std::vector<std::uint64_t> finish(t.nodes.size(), 0);
  std::vector<bool> done(t.nodes.size(), false);
  // Memoized depth-first search, so as not to lean on the reader's own ordering.
  std::uint64_t longest = 0;
  for (std::size_t root = 0; root < t.nodes.size(); ++root) {
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (done[i]) {
        stack.pop_back();
        continue;
      }
      const auto& deps = t.nodes[i].data_deps;
      if (next < deps.size()) {
        const std::size_t d = idx.at(deps[next++]);
        if (!done[d]) stack.push_back({d, 0});
        continue;
      }
      std::uint64_t start = 0;
      for (std::uint64_t d : deps) start = std::max(start, finish[idx.at(d)]);
      finish[i] = start + t.nodes[i].duration_micros;
      done[i] = true;
      longest = std::max(longest, finish[i]);
      stack.pop_back();
    }
  }
  return longest;
}

// ASTRA-sim's replay as a list schedule: resources CPU (is_cpu_op), GPU kernel (other compute)
// and communication (other collectives); a free resource takes its ready node of smallest id.
std::uint64_t list_schedule_us(const tg::ChakraTrace& t) {
  const auto idx = index_of(t);
  const std::size_t n = t.nodes.size();
  auto resource = [&](const tg::ChakraNode& node) {
    const tg::ChakraAttribute* cpu = node.attr("is_cpu_op");
    if (cpu && cpu->int_value) return 0;
    return node.type == 7 ? 2 : 1;
  };
  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<std::vector<std::size_t>> dependents(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> deps;
    for (std::uint64_t d : t.nodes[i].data_deps) deps.push_back(idx.at(d));
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    waiting[i] = static_cast<std::uint32_t>(deps.size());
    for (std::size_t d : deps) dependents[d].push_back(i);
  }
  using Ready = std::pair<std::uint64_t, std::size_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready[3];
  using Event = std::tuple<std::uint64_t, std::uint64_t, std::size_t>;  // (time, sequence, node)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  bool busy[3] = {false, false, false};
  std::uint64_t now = 0, sequence = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready[resource(t.nodes[i])].push({t.nodes[i].id, i});
  }
  auto issue = [&] {
    for (int r = 0; r < 3; ++r) {
      if (busy[r] || ready[r].empty()) continue;
      const std::size_t i = ready[r].top().second;
      ready[r].pop();
      busy[r] = true;
      events.push({now + t.nodes[i].duration_micros, sequence++, i});
    }
  };
  issue();
  while (!events.empty()) {
    const auto [time, seq, i] = events.top();
    events.pop();
    now = time;
    busy[resource(t.nodes[i])] = false;
    for (std::size_t d : dependents[i]) {
      if (--waiting[d] == 0) ready[resource(t.nodes[d])].push({t.nodes[d].id, d});
    }
    issue();
  }
  return now;
}

TEST(ChakraReplay, WithoutResourceLimitsTheIterationIsTheCriticalPath) {
  // Recorded durations, every node issued once its data dependencies are done: the replay's time
  // is the trace's critical path (46,140 us; 381,795 us of recorded operator time in all).
  tg::ChakraImportOptions o;
  o.recorded_communication = true;
  o.issue = tg::IssueOrder::kDependencies;
  const tg::ChakraImport imp = tg::import_chakra(std::span(&sample(), 1), o);
  const std::uint64_t cp = critical_path_us(sample());
  EXPECT_EQ(cp, 46'140u);
  EXPECT_EQ(replay(imp.graph), kTimeZero + microseconds(static_cast<std::int64_t>(cp)));
}

TEST(ChakraReplay, OneOpPerResourceIsAstraSimsListSchedule) {
  // The default issue order (ready_first) on the host, compute and dp streams is ASTRA-sim's
  // HardwareResource: the replay equals the list schedule computed above from the records
  // (297,046 us: the GPU kernels alone take 292,828 us in one stream).
  tg::ChakraImportOptions o;
  o.recorded_communication = true;
  const tg::ChakraImport imp = tg::import_chakra(std::span(&sample(), 1), o);
  const std::uint64_t list = list_schedule_us(sample());
  EXPECT_EQ(list, 297'046u);
  EXPECT_EQ(replay(imp.graph), kTimeZero + microseconds(static_cast<std::int64_t>(list)));
}

}  // namespace
}  // namespace cs::rt
