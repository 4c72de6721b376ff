#include "drivers/graph_run.h"

#include <optional>

#include "core/errors.h"
#include "drivers/link_uses.h"
#include "sim/collectives/network_fold.h"
#include "sim/engine/simulator.h"
#include "sim/network/flow_network.h"
#include "topology/router.h"
#include "topology/server_orbits.h"

namespace cs::drv {
namespace {

// The run on a network of its own, folded by `twins` when given (with `rotation` when they are
// its orbits); nothing when a transfer broke the fold.
std::optional<GraphRun> attempt(const GraphRunSetup& setup, const topo::ServerOrbits* twins,
                                const topo::BlockRotation* rotation = nullptr) {
  const topo::Cluster& cluster = setup.layout.cluster();
  sim::Simulator sim;
  net::FlowNetwork net(sim, setup.layout.capacities());
  topo::Router router(cluster);
  coll::NetworkFold::Scratch scratch;
  std::optional<coll::NetworkFold> fold;
  if (twins) fold.emplace(cluster, *twins, net, scratch, rotation);
  std::unique_ptr<compute::ComputeModel> compute = setup.make_compute();
  rt::Executor ex(sim, net, router, setup.layout, setup.tuner, *compute, setup.graph, setup.rank_gpus,
                  fold ? &*fold : nullptr);
  if (setup.configure) setup.configure(ex);
  ex.start();
  sim.run();
  if (fold && fold->broken()) return std::nullopt;
  if (!ex.finished()) throw InternalError(setup.unfinished);
  GraphRun run{ex.timeline(), ex.end_time(), sim.events_executed(), {}, fold.has_value(), std::move(compute),
               rotation ? rotation->blocks() : 0};
  run.links = link_uses(net, cluster.link_count(), run.end - kTimeZero, fold ? &*fold : nullptr);
  return run;
}

}  // namespace

GraphRun run_graph(const GraphRunSetup& setup) {
  // The rotation of the leaf blocks first (it folds the servers too), then the twin switches;
  // both from one ServerSymmetry, so the switch twins are found once.
  const topo::Cluster& cluster = setup.layout.cluster();
  if (setup.fold && coll::fabric_folds(cluster)) {
    const topo::ServerSymmetry symmetry(cluster);
    const std::optional<topo::BlockRotation> rotation = symmetry.block_rotation(setup.rank_gpus);
    if (rotation && rt::rotation_is_symmetry(setup.graph, setup.rank_gpus, *rotation)) {
      if (std::optional<GraphRun> run = attempt(setup, &rotation->orbits(), &*rotation)) return std::move(*run);
    }
    if (const std::optional<topo::ServerOrbits> twins = symmetry.twin_orbits()) {
      if (std::optional<GraphRun> run = attempt(setup, &*twins)) return std::move(*run);
    }
  }
  return *attempt(setup, nullptr);
}

}  // namespace cs::drv
