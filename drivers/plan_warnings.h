// Plausibility of an experiment's parallel plan on its cluster: a plan that runs but that no one
// would choose by intent, returned as warnings (core/warning.h) naming the experiment's file and
// the plan key; nothing here throws or prints.
//
//   tensor parallelism  a TP group whose GPUs lie in more than one NVLink domain (a server, or
//                       GPUs joined by NVLink-class links: topo::nvlink_domains) warns at
//                       <plan>/tp, naming the first such group (by its lowest rank) and its
//                       servers: its all-reduces, on every layer, then cross the network.
// Expert-parallel groups span servers by design (their all-to-alls are meant for the network),
// and pipeline, context- and data-parallel groups as well: none of them warns.
#pragma once

#include <vector>

#include "core/warning.h"
#include "drivers/experiment.h"
#include "topology/cluster.h"
#include "workloads/rank_grid.h"

namespace cs::drv {

// `grid`: the plan's rank grid; grid rank r runs on the cluster's GPU r in rank order.
std::vector<Warning> plan_warnings(const Experiment& e, const wl::RankGrid& grid, const topo::Cluster& cluster);

}  // namespace cs::drv
