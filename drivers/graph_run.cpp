#include "drivers/graph_run.h"

#include <optional>

#include "core/errors.h"
#include "drivers/link_uses.h"
#include "sim/collectives/network_fold.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"

namespace cs::drv {
namespace {

// The run on a network of its own, folded by `twins` when given; nothing when a transfer broke
// the fold.
std::optional<GraphRun> attempt(const GraphRunSetup& setup, const topo::ServerOrbits* twins) {
  const topo::Cluster& cluster = setup.layout.cluster();
  sim::Simulator sim;
  net::FlowNetwork net(sim, setup.layout.capacities());
  topo::Router router(cluster);
  coll::NetworkFold::Scratch scratch;
  std::optional<coll::NetworkFold> fold;
  if (twins) fold.emplace(cluster, *twins, net, scratch);
  std::unique_ptr<compute::ComputeModel> compute = setup.make_compute();
  rt::Executor ex(sim, net, router, setup.layout, setup.tuner, *compute, setup.graph, setup.rank_gpus,
                  fold ? &*fold : nullptr);
  if (setup.configure) setup.configure(ex);
  ex.start();
  sim.run();
  if (fold && fold->broken()) return std::nullopt;
  if (!ex.finished()) throw InternalError(setup.unfinished);
  GraphRun run{ex.timeline(), ex.end_time(), sim.events_executed(), {}, fold.has_value(), std::move(compute)};
  run.links = link_uses(net, cluster.link_count(), run.end - kTimeZero, fold ? &*fold : nullptr);
  return run;
}

}  // namespace

GraphRun run_graph(const GraphRunSetup& setup) {
  const std::optional<topo::ServerOrbits> twins = setup.fold ? coll::twin_fold_orbits(setup.layout.cluster()) : std::nullopt;
  if (twins) {
    if (std::optional<GraphRun> run = attempt(setup, &*twins)) return std::move(*run);
  }
  return *attempt(setup, nullptr);
}

}  // namespace cs::drv
