// Folding a symmetric collective: the flows of one server on the quotient network stand for the
// flows of all (docs/network-model.md, "Folding symmetric collectives").
//
// Let G be a group of automorphisms of the cluster that permutes N servers transitively
// (topo::ServerOrbits), and let the collective's flows be mapped onto themselves by G with their
// sizes and start times: a direct all-pairs schedule over whole servers (every GPU sends the same
// bytes to every other), whose routes G maps to the routes between the images (adaptive
// routing's spreads are functions of the graph; a router path is when no label can change it,
// topo::Router::unique_route). The max-min fair rates are unique, so G maps them onto
// themselves: every link of an orbit L carries the same load, and the flows leaving server s
// load L in all as the flows of s0 do (g maps s0 to s and L onto itself). So, with w_{f,l} the
// weight of flow f on link l, c the capacity of L's links and F0 the flows of s0,
//
//     every link of L:   sum_f w_{f,l} r_f <= c   <=>   sum_{f in F0} (sum_{l in L} w_{f,l}) r_f <= c |L| / N,
//
// and progressive filling over the flows of F0 on one link per orbit, of capacity c |L| / N,
// freezes each flow of F0 at the level it freezes at in the full network (the links of an orbit
// saturate together). Flows of F0 that finish together finish with their images, so it holds at
// every instant; a round's step latency (the largest over its flows) is the largest over F0,
// since every flow has the latency of its preimage in F0. Each link of L then carries
// (bytes the orbit's link carried in the quotient) x N / |L|, and is busy when it is.
//
// The switch exchanges alone (topo::ServerSymmetry::twin_orbits: N = 1) fold any schedule: they
// fix every device of every server, so they map each flow between such devices onto itself, on a
// route that is a function of the graph, and the argument above holds with F0 every flow: each
// orbit's links saturate together, and one link of capacity c |L| stands for them. On a
// three-tier fat-tree an inter-pod spread over 4,096 cores then loads 2 x 64 quotient links of the
// core tier, not 8,192; on a rail-optimized fabric a spread over its spines, one or two. A
// route chosen by its label breaks this fold only where it crosses a link the exchanges move.
//
// Conditions checked: the fabric routes adaptively (static ECMP hashes device ids, which no
// automorphism preserves); every link between two switches outside servers of one tier has one
// latency (a spread flow's latency is its spread's mean, topo::mean_latency, which is then every
// shortest path's; kept although the mean is itself invariant under automorphisms); the runner marks the fold broken when a route it takes depends on its label (for the
// switch exchanges alone: and crosses a link they move) or, under a group of servers, a flow
// crosses a link outside the cluster (an NVLS reduction engine, which such a group moves to
// another server's; the switch exchanges fix it), and the simulator then runs the collective
// unfolded.
//
// A rotation of leaf blocks (topo::BlockRotation: N = B blocks, moved freely) folds a training
// iteration, whose flows it maps onto themselves in two ways. A flow whose images are N distinct
// flows (a pipeline transfer of one replica; FoldRole::kOrbit) stands for them as above. A
// collective that the rotation maps onto itself (a data-parallel ring over every block;
// kInvariant) runs whole, each flow loading the quotient with 1/N of its summed load: with
// S_f the flows the rotation's powers fix, f's orbit has N / |S_f| flows, each loading L
// alike, so the orbits' constraints summed over L read
//     sum over orbits of (N / |S_f|) (sum_{l in L} w_{f,l}) r_f <= c |L|,
// and running all N / |S_f| flows of an orbit at 1/N of their load is that constraint over N.
// A collective inside one server whose images the executor does not replay (a tensor-parallel
// group's; kOwnLinks) stands for itself alone: it runs on its own links, unmapped, and the fold
// breaks if another run's flows reach a link of their orbits (the unfolded run would then load
// the server's links apart from their images', which no symmetry maps).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/collectives/schedule.h"
#include "sim/network/flow_network.h"
#include "topology/adaptive_spread.h"
#include "topology/cluster.h"
#include "topology/server_orbits.h"

namespace cs::coll {

// How a run on a folded network stands for the unfolded run's flows (the header).
enum class FoldRole : std::uint8_t {
  kOrbit,      // each flow stands for its N images (every run of a fold but a rotation's others)
  kInvariant,  // the group maps the run onto itself: each flow at 1/N of its load
  kOwnLinks,   // the run stands for itself, on its own links
};

class NetworkFold {
 public:
  // Per cluster link, kept by the owner across runs (allocated once, stamped per run, so a run
  // costs what it maps, not the cluster's size): a link's quotient link once mapped (the first
  // map of an orbit sets its capacity), and collapse's entry per quotient link.
  struct Scratch {
    std::vector<std::uint32_t> mapped, mapped_run, entry, entry_route;
    std::vector<std::uint32_t> own_run, own_root_run;  // a link, an orbit taken by a kOwnLinks run
    std::uint32_t run = 0, route = 0;
  };
  // `net` holds the collective alone (just reset), with the links of `cluster`; the cluster,
  // `orbits`, `rotation` (when the orbits are its own) and `scratch` outlive the fold.
  NetworkFold(const topo::Cluster& cluster, const topo::ServerOrbits& orbits, net::FlowNetwork& net, Scratch& scratch,
              const topo::BlockRotation* rotation = nullptr);
  // The quotient's link for `link`: its orbit's representative, with capacity c |L| / N from its
  // first use on.
  topo::LinkId map(topo::LinkId link) {
    // A link mapped before in this run: its stamp (the scratch is sized to the cluster's links).
    if (link.value < scratch_.mapped_run.size() && scratch_.mapped_run[link.value] == scratch_.run) {
      return topo::LinkId{scratch_.mapped[link.value]};
    }
    return map_first(link);
  }
  // The same load on the quotient: every link mapped, the weights of links of one orbit added
  // (a spread over thousands of equal paths becomes a few orbits), in the order of first use.
  void collapse(topo::WeightedRoute& route);
  // A link of a kOwnLinks run: itself, unmapped; the fold breaks where another run's flows take
  // its orbit (map() marks the other way).
  topo::LinkId own(topo::LinkId link);
  std::uint32_t servers() const { return orbits_.servers(); }
  // The rotation whose orbits these are; null for other groups.
  const topo::BlockRotation* rotation() const { return rotation_; }
  std::int32_t representative() const { return orbits_.representative(); }
  const topo::ServerOrbits& orbits() const { return orbits_; }
  // Set by the runner when a flow breaks the symmetry (the header's conditions). The folded run
  // is then discarded, so it stops the network's simulator (sim::Simulator::stop): an attempt
  // costs up to its first refused transfer, not the whole run.
  void mark_broken();
  // A flow of a run in `role` takes `path`, a route its label chose: a group that moves servers
  // maps it to a route between the images that another label may choose, so the fold breaks;
  // the switch exchanges alone (ServerOrbits::twins_only) fix it unless it crosses a link they
  // move. A kOwnLinks run takes the route its unfolded run takes (the same label): no break.
  void label_dependent(std::span<const topo::LinkId> path, FoldRole role);
  bool broken() const { return broken_; }

  // What `link`, a quotient link that carried `bytes`, stands for in the cluster: the links of
  // its orbit L, each carrying bytes x N / |L| (rounded to a byte), busy when it is (the
  // header); a link a kOwnLinks run took is itself, with its bytes. Results and link reports of
  // a folded run are written from it; share_of gives the
  // same share of any other amount the link carried (a busy interval's), without listing the
  // orbit again.
  struct Unfolded {
    std::vector<topo::LinkId> links;
    Bytes bytes;
    double share = 1;  // N / |L|
    Bytes share_of(Bytes carried) const;
  };
  Unfolded unfold(topo::LinkId link, Bytes bytes) const;

 private:
  topo::LinkId map_first(topo::LinkId link);  // map() of a link not yet mapped in this run
  const topo::Cluster& cluster_;
  const topo::ServerOrbits& orbits_;
  net::FlowNetwork& net_;
  Scratch& scratch_;
  const topo::BlockRotation* rotation_ = nullptr;
  bool broken_ = false;
};

// Whether the cluster's fabric allows a fold (the header's conditions): it routes adaptively,
// and it keeps a spread flow's latency under automorphisms, with one latency per tier among the
// links between switches outside servers. O(links). Both groups a training iteration folds by
// (topo::ServerSymmetry::block_rotation, then twin_orbits) come from one ServerSymmetry after it.
bool fabric_folds(const topo::Cluster& cluster);

// Whether a fold of the twin switches alone runs `schedule` as it runs unfolded: both ends of
// every flow are devices of servers, which the exchanges fix (a CollNet flow to a fabric switch
// may be moved; an NVLS reduction engine, inside a server, stays), and every flow of an NVLS
// round stays inside its server: the runner takes that round's pipeline fill from the flows'
// own paths on the idle network (CollectiveRunner::nvls_fill_time), which is the unfolded
// network's only where the exchanges fix every link (orbits of one keep their capacity). The
// runner marks a twin fold broken when it is given a schedule that is not.
bool twin_foldable(const ScheduleContext& ctx, const Schedule& schedule);

// Whether `rotation` maps `schedule`'s flows onto its flows, round by round: each flow onto a
// flow of the same round, channel and rail between the images of its ends, moving the same
// bytes as the same number of copies and connections, a pipeline's members onto one pipeline's,
// no NVLS reduction (its engine is outside the cluster). What a kInvariant run needs. O(flows).
bool rotation_maps(const Schedule& schedule, const topo::BlockRotation& rotation);

}  // namespace cs::coll
