#include "sim/collectives/schedule.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <utility>

#include "core/errors.h"
#include "core/random.h"
#include "sim/collectives/mesh_rings.h"
#include "sim/collectives/server_pairs_relay.h"

namespace cs::coll {
namespace {

using topo::NodeId;

// Ranks grouped by server, preserving rank order inside each server and the order in which
// servers first appear.
struct ServerBlocks {
  std::vector<std::vector<std::size_t>> blocks;  // rank indices
  bool uniform = true;                           // every block has the same size
};

// Whether visit(w) holds for some node w that `gpu` reaches over PCIe alone: a node it is cabled
// to, or one cabled to a PCIe switch it is cabled to; visited in that order, stopping at the
// first. (ScheduleContext::shares_pcie_switch, and the places' rails.)
template <class Visit>
bool any_over_pcie(const topo::Cluster& c, NodeId gpu, const Visit& visit) {
  for (topo::LinkId l : c.out_links(gpu)) {
    const NodeId w = c.link(l).dst;
    if (visit(w)) return true;
    if (c.node(w).kind != topo::NodeKind::kPcieSwitch) continue;
    for (topo::LinkId m : c.out_links(w)) {
      if (visit(c.link(m).dst)) return true;
    }
  }
  return false;
}

// The ranks' servers in rank order, each once per run of its ranks.
std::vector<std::int32_t> servers_in_order(const topo::Cluster& cluster, const CollectiveSpec& spec) {
  std::vector<std::int32_t> order;
  for (const NodeId g : spec.ranks) {
    const std::int32_t server = cluster.node(g).server;
    if (order.empty() || order.back() != server) order.push_back(server);
  }
  return order;
}

// Whether no server comes back in `order` (servers_in_order): each server's ranks in one run.
bool each_once(std::vector<std::int32_t> order) {
  std::sort(order.begin(), order.end());
  return std::adjacent_find(order.begin(), order.end()) == order.end();
}

ServerBlocks group_by_server(const topo::Cluster& c, const std::vector<NodeId>& ranks) {
  ServerBlocks out;
  std::map<std::int32_t, std::size_t> index;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::int32_t s = c.node(ranks[r]).server;
    auto [it, inserted] = index.emplace(s, out.blocks.size());
    if (inserted) out.blocks.emplace_back();
    out.blocks[it->second].push_back(r);
  }
  for (const auto& b : out.blocks) out.uniform = out.uniform && b.size() == out.blocks[0].size();
  return out;
}

Bytes share(Bytes s, std::int64_t num, std::int64_t den) {
  // Rounded to the nearest byte; num/den <= 2, so no overflow for sizes below 2^62.
  return Bytes{(s.value() / den) * num + ((s.value() % den) * num + den / 2) / den};
}

bool is_power_of_two(std::size_t n) { return n > 0 && (n & (n - 1)) == 0; }

int floor_log2(std::size_t n) {
  int d = 0;
  while ((std::size_t{2} << d) <= n) ++d;
  return d;
}

// The ranks of one server block as GPUs.
std::vector<NodeId> block_gpus(const CollectiveSpec& s, const std::vector<std::size_t>& block) {
  std::vector<NodeId> out;
  out.reserve(block.size());
  for (std::size_t r : block) out.push_back(s.ranks[r]);
  return out;
}

// The rings of direct links among one server block's ranks (mesh_rings.h), in rank indices;
// empty when the block has none.
std::vector<std::vector<std::size_t>> block_rings(const ScheduleContext& ctx, const CollectiveSpec& s,
                                                  const std::vector<std::size_t>& b) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& ring : ctx.direct_rings(block_gpus(s, b))) {
    std::vector<std::size_t>& o = out.emplace_back();
    o.reserve(ring.size());
    for (std::size_t k : ring) o.push_back(b[k]);
  }
  return out;
}

// A pipelined schedule's intra-server phases (hierarchical, collnet): every server's rings (its
// rings of direct links, or one in rank order) as members of pipeline 0, each edge standing for
// `copies` units when a server has R rings (R its count in the first server; a server with
// another count splits the same volume over its own rings).
void add_server_rings(Round& ph, const ScheduleContext& ctx, const CollectiveSpec& s, const ServerBlocks& sb, Bytes unit,
                      std::int64_t copies, std::int64_t R) {
  for (const auto& b : sb.blocks) {
    auto orders = block_rings(ctx, s, b);
    const auto rings = static_cast<std::int64_t>(orders.size());
    if (orders.empty()) orders.push_back(b);
    for (std::size_t r = 0; r < orders.size(); ++r) {
      const std::size_t n = orders[r].size();
      for (std::size_t i = 0; i < n; ++i) {
        PlannedFlow f{s.ranks[orders[r][i]], s.ranks[orders[r][(i + 1) % n]], unit, static_cast<std::uint32_t>(r), 0};
        f.copies = static_cast<std::uint32_t>(rings == 0 ? copies : copies * R / rings);
        ph.flows.push_back(f);
      }
    }
  }
}

// Ring orders: one per channel, with the rail its server-to-server hops take. Single server
// (or non-uniform blocks): one channel in rank order, or, when the server's ranks are joined by
// direct links, one channel per ring of direct links (mesh_rings.h); hops between servers then
// take the destination's rail. Several uniform servers: see rail_ring_block and the mesh case
// below.
struct RingOrders {
  std::vector<std::vector<std::size_t>> orders;
  std::vector<std::int32_t> rails;  // per channel
};

// Channel c of a multi-server ring on a server without direct GPU links (NVSwitch, PCIe), as
// NCCL's ring search forms it on multi-rail servers: the channel enters the server by the NIC
// of rail r_c (the NIC of the block's c-th GPU), at that NIC's GPU, visits the other GPUs, and
// leaves by the same NIC from a GPU on that NIC's PCIe switch (NCCL keeps a channel's NIC the
// same on the way in and out unless NCCL_CROSS_NIC is set), so every server-to-server hop joins
// NICs of one rail and every NIC carries one channel each way. Without such a GPU it leaves
// from the GPU before the entry in rank order.
void rail_ring_block(const ScheduleContext& ctx, const CollectiveSpec& s, const std::vector<std::size_t>& b,
                     std::size_t c, std::int32_t rail, std::vector<std::size_t>& order) {
  const std::size_t g = b.size();
  std::size_t exit = (c + g - 1) % g;
  const topo::NodeId nic = ctx.rail_nic(ctx.cluster().node(s.ranks[b[c]]).server, rail);
  if (nic.valid()) {
    for (std::size_t k = 1; k < g; ++k) {
      const std::size_t i = (c + k) % g;
      if (ctx.reaches_over_pcie(s.ranks[b[i]], nic)) {
        exit = i;
        break;
      }
    }
  }
  order.push_back(b[c]);
  for (std::size_t k = 1; k < g; ++k) {
    const std::size_t i = (c + k) % g;
    if (i != exit) order.push_back(b[i]);
  }
  if (exit != c) order.push_back(b[exit]);
}

RingOrders ring_orders(const ScheduleContext& ctx, const CollectiveSpec& s) {
  const ServerBlocks sb = group_by_server(ctx.cluster(), s.ranks);
  RingOrders out;
  auto& orders = out.orders;
  if (sb.blocks.size() == 1) {
    orders = block_rings(ctx, s, sb.blocks[0]);
    if (!orders.empty()) {
      out.rails.assign(orders.size(), PlannedFlow::kDestinationRail);
      return out;
    }
  }
  if (sb.blocks.size() <= 1 || !sb.uniform) {
    std::vector<std::size_t> o(s.ranks.size());
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = i;
    orders.push_back(std::move(o));
    out.rails.assign(1, PlannedFlow::kDestinationRail);
    return out;
  }
  const std::size_t g = sb.blocks[0].size();
  for (std::size_t ch = 0; ch < g; ++ch) orders.emplace_back().reserve(s.ranks.size());
  out.rails.assign(g, PlannedFlow::kDestinationRail);
  const bool mesh = !ctx.direct_rings(block_gpus(s, sb.blocks[0])).empty();
  for (std::size_t ch = 0; ch < g; ++ch) {
    // The rail of the GPU the channel enters by (NVSwitch, PCIe servers) or leaves from (mesh
    // servers, below), in the first server; every server uses the same rail.
    const std::size_t at = mesh ? (ch + g - 1) % g : ch;
    const std::int32_t r = ctx.rail_of(s.ranks[sb.blocks[0][at]]);
    if (r >= 0) out.rails[ch] = r;
  }
  for (const auto& b : sb.blocks) {
    const auto& r = ctx.direct_rings(block_gpus(s, b));
    if (r.empty()) {
      for (std::size_t ch = 0; ch < g; ++ch) {
        if (out.rails[ch] >= 0) {
          rail_ring_block(ctx, s, b, ch, out.rails[ch], orders[ch]);
        } else {
          for (std::size_t k = 0; k < g; ++k) orders[ch].push_back(b[(k + ch) % g]);
        }
      }
      continue;
    }
    // Mesh server: channel ch crosses the server along one of its direct rings, cut open where
    // it leaves from local GPU ch - 1 (mod g), as in rank order, and enters at that GPU's
    // successor on the ring. The ring of each channel is chosen, fewest-used first, so that the
    // entries are distinct GPUs too: every GPU (and so every NIC) sends one channel across the
    // network and receives one, as NCCL spreads its channels over the NICs.
    // pick[ch]: the ring of channel ch, found by a small backtracking search (g channels, R
    // rings each) for distinct entries with each ring used at most ceil(g / R) times; without
    // such an assignment, ring ch mod R.
    const std::size_t cap = (g + r.size() - 1) / r.size();
    std::vector<std::size_t> pick(g), pos(g);
    for (std::size_t ch = 0; ch < g; ++ch) {
      pick[ch] = ch % r.size();
      pos[ch] = static_cast<std::size_t>(std::find(r[pick[ch]].begin(), r[pick[ch]].end(), (ch + g - 1) % g) -
                                         r[pick[ch]].begin());
    }
    std::vector<std::size_t> use(r.size(), 0), try_pick(g), try_pos(g);
    std::vector<bool> entered(g, false);
    std::size_t budget = 100'000;
    const auto assign = [&](auto&& self, std::size_t ch) -> bool {
      if (ch == g) return true;
      if (budget-- == 0) return false;
      const std::size_t exit = (ch + g - 1) % g;
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::size_t ring = (ch + i) % r.size();
        if (use[ring] >= cap) continue;
        const auto at = static_cast<std::size_t>(std::find(r[ring].begin(), r[ring].end(), exit) - r[ring].begin());
        const std::size_t entry = r[ring][(at + 1) % g];
        if (entered[entry]) continue;
        entered[entry] = true;
        ++use[ring];
        try_pick[ch] = ring;
        try_pos[ch] = at;
        if (self(self, ch + 1)) return true;
        --use[ring];
        entered[entry] = false;
      }
      return false;
    };
    if (assign(assign, 0)) {
      pick = try_pick;
      pos = try_pos;
    }
    for (std::size_t ch = 0; ch < g; ++ch) {
      for (std::size_t k = 0; k < g; ++k) orders[ch].push_back(b[r[pick[ch]][(pos[ch] + 1 + k) % g]]);
    }
  }
  return out;
}

// The edges of one ring (or, without wrap, one chain) as one pipeline.
// `rail`: the rail of its hops between servers (PlannedFlow::rail).
void add_ring_edges(Round& ph, const CollectiveSpec& s, const std::vector<std::size_t>& order,
                    Bytes per_edge, std::uint32_t channel, bool wrap, std::uint32_t pipeline,
                    std::int32_t rail = PlannedFlow::kDestinationRail) {
  const std::size_t n = order.size();
  for (std::size_t i = 0; i + (wrap ? 0 : 1) < n; ++i) {
    PlannedFlow f{s.ranks[order[i]], s.ranks[order[(i + 1) % n]], per_edge, channel, pipeline};
    f.rail = rail;
    f.connections = kDuplicatedChannels;
    ph.flows.push_back(f);
  }
}

// Hops between servers along `order` (with the wrap-around hop when `wrap`).
std::size_t server_crossings(const ScheduleContext& ctx, const CollectiveSpec& s, const std::vector<std::size_t>& order, bool wrap) {
  std::size_t e = 0;
  const std::size_t n = order.size();
  for (std::size_t i = 0; i + (wrap ? 0 : 1) < n; ++i) {
    e += ctx.cluster().node(s.ranks[order[i]]).server != ctx.cluster().node(s.ranks[order[(i + 1) % n]]).server ? 1 : 0;
  }
  return e;
}

// Splits a ring's (or chain's) `steps` into those whose latency is a hop between servers and the
// rest, inside servers (Round::local_steps), as NCCL's cost model does (src/graph/tuning.cc:
// nInterSteps network steps, the others at the intra-node latency). A chunk's last journey
// through the pipelined ring is a chain of dependent hops, each paying its own hop's latency;
// over `passes` passes of n - 1 hops of a ring that crosses servers e times it crosses e - 1 of
// them per pass (a chain, one pass of the ring cut at its root, up to e). Inside one server
// nothing changes.
void split_ring_steps(Round& ph, const ScheduleContext& ctx, const CollectiveSpec& s, const RingOrders& ro, int passes, bool chain) {
  std::size_t e = 0;
  for (const auto& o : ro.orders) e = std::max(e, server_crossings(ctx, s, o, true));
  if (e == 0) return;
  const int inter = std::min(ph.steps, passes * static_cast<int>(chain ? e : e - 1));
  ph.local_steps = ph.steps - inter;
  ph.steps = inter;
}

std::optional<Schedule> ring(const ScheduleContext& ctx, const CollectiveSpec& s, std::string* why) {
  const std::size_t n = s.ranks.size();
  const RingOrders ro = ring_orders(ctx, s);
  const auto& orders = ro.orders;
  const auto channels = static_cast<std::int64_t>(orders.size());
  const Bytes per_channel = share(s.size, 1, channels);
  Round ph;
  switch (s.op) {
    case CollectiveOp::kAllReduce:
      ph.steps = static_cast<int>(2 * (n - 1));
      split_ring_steps(ph, ctx, s, ro, 2, false);
      for (std::size_t c = 0; c < orders.size(); ++c) {
        add_ring_edges(ph, s, orders[c], share(per_channel, 2 * static_cast<std::int64_t>(n - 1), static_cast<std::int64_t>(n)),
                       static_cast<std::uint32_t>(c), true, static_cast<std::uint32_t>(c), ro.rails[c]);
      }
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      ph.steps = static_cast<int>(n - 1);
      split_ring_steps(ph, ctx, s, ro, 1, false);
      for (std::size_t c = 0; c < orders.size(); ++c) {
        add_ring_edges(ph, s, orders[c], share(per_channel, static_cast<std::int64_t>(n - 1), static_cast<std::int64_t>(n)),
                       static_cast<std::uint32_t>(c), true, static_cast<std::uint32_t>(c), ro.rails[c]);
      }
      break;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: {
      // A pipelined chain starting (broadcast) or ending (reduce) at the root.
      ph.steps = static_cast<int>(n - 1);
      split_ring_steps(ph, ctx, s, ro, 1, true);
      for (std::size_t c = 0; c < orders.size(); ++c) {
        std::vector<std::size_t> o = orders[c];
        auto it = std::find(o.begin(), o.end(), s.root);
        std::rotate(o.begin(), it, o.end());
        if (s.op == CollectiveOp::kReduce) std::reverse(o.begin(), o.end());
        add_ring_edges(ph, s, o, per_channel, static_cast<std::uint32_t>(c), false, static_cast<std::uint32_t>(c), ro.rails[c]);
      }
      break;
    }
    default:
      if (why) *why = std::string("ring does not implement ") + to_string(s.op);
      return std::nullopt;
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

// Heap-shaped binary tree over positions 0..n-1 of `order`: parent of i is (i-1)/2.
// One tree, reduce up and/or broadcast down, as one pipeline (id = channel).
void add_tree_edges(Round& ph, const CollectiveSpec& s, const std::vector<std::size_t>& order,
                    Bytes bytes, std::uint32_t channel, bool up, bool down) {
  for (std::size_t i = 1; i < order.size(); ++i) {
    const NodeId child = s.ranks[order[i]];
    const NodeId parent = s.ranks[order[(i - 1) / 2]];
    if (up) ph.flows.push_back({child, parent, bytes, channel, channel});
    if (down) ph.flows.push_back({parent, child, bytes, channel, channel});
  }
}

// NCCL's tree all-reduce across servers (src/graph/trees.cc, src/device/all_reduce.h): per
// channel, a chain through each server's GPUs and a double binary tree over the servers, whose
// edges join the chains' heads; reduce up and broadcast down, pipelined. Channel c (one per
// local GPU, S/g each) enters every server at its c-th GPU by that GPU's NIC (rail c), and
// chains through the others in rank order from there; its two trees over the servers carry
// half of it each, tree 1 the mirror of tree 0 (server k of tree 1 is server m-1-k of tree 0,
// heap-shaped), so that a server inner in one tree is a leaf in the other. Latency: 2(g-1)
// intra-server steps and 2 floor(log2 m) network steps (NCCL's tree latency
// 2((g-1) intraLat + log2(m) interLat)).
// Server k's node in tree t of the mirrored pair of heap-shaped trees over m servers (tree 1 is
// tree 0 with server k at node m-1-k; a node's parent is node (k-1)/2): NCCL's double binary
// tree over the servers, as server_trees and nvls_tree build it.
std::size_t mirrored(int t, std::size_t k, std::size_t m) { return t == 0 ? k : m - 1 - k; }

// Adds `f` and its reverse (an edge up and down a tree, or both ways along a chain).
void add_both_ways(Round& ph, PlannedFlow f) {
  ph.flows.push_back(f);
  std::swap(f.src, f.dst);
  ph.flows.push_back(f);
}

std::optional<Schedule> server_trees(const ScheduleContext& ctx, const CollectiveSpec& s, const ServerBlocks& sb) {
  const std::size_t g = sb.blocks[0].size(), m = sb.blocks.size();
  Round ph;
  ph.steps = 2 * floor_log2(m);
  ph.local_steps = static_cast<int>(2 * (g - 1));
  const Bytes per_tree = share(s.size, 1, static_cast<std::int64_t>(2 * g));
  std::uint32_t pipeline = 0;
  for (std::size_t c = 0; c < g; ++c) {
    const std::int32_t rail = ctx.rail_of(s.ranks[sb.blocks[0][c]]);
    for (int t = 0; t < 2; ++t, ++pipeline) {
      const auto head = [&](std::size_t k) { return s.ranks[sb.blocks[mirrored(t, k, m)][c]]; };
      const auto both_ways = [&](NodeId a, NodeId b) {
        PlannedFlow f{a, b, per_tree, static_cast<std::uint32_t>(c), pipeline};
        f.rail = rail < 0 ? PlannedFlow::kDestinationRail : rail;
        f.connections = kDuplicatedChannels;
        add_both_ways(ph, f);
      };
      for (std::size_t k = 0; k < m; ++k) {
        const auto& b = sb.blocks[mirrored(t, k, m)];
        for (std::size_t i = 0; i + 1 < g; ++i) both_ways(s.ranks[b[(c + i) % g]], s.ranks[b[(c + i + 1) % g]]);
        if (k > 0) both_ways(head(k), head((k - 1) / 2));
      }
    }
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

std::optional<Schedule> tree(const ScheduleContext& ctx, const CollectiveSpec& s, std::string* why) {
  const std::size_t n = s.ranks.size();
  if (s.op == CollectiveOp::kAllReduce) {
    const ServerBlocks sb = group_by_server(ctx.cluster(), s.ranks);
    if (sb.blocks.size() > 1 && sb.uniform) return server_trees(ctx, s, sb);
  }
  const int depth = floor_log2(n);
  Round ph;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  switch (s.op) {
    case CollectiveOp::kAllReduce: {
      // Two mirrored trees (rank i of tree B is rank n-1-i of tree A), S/2 each, reduce up and
      // broadcast down, pipelined: the leaves of one tree are the inner nodes of the other.
      ph.steps = 2 * depth;
      const Bytes half = share(s.size, 1, 2);
      add_tree_edges(ph, s, order, half, 0, true, true);
      std::vector<std::size_t> mirrored(order.rbegin(), order.rend());
      add_tree_edges(ph, s, mirrored, s.size - half, 1, true, true);
      break;
    }
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: {
      ph.steps = depth;
      std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(s.root), order.end());
      add_tree_edges(ph, s, order, s.size, 0, s.op == CollectiveOp::kReduce, s.op == CollectiveOp::kBroadcast);
      break;
    }
    default:
      if (why) *why = std::string("tree does not implement ") + to_string(s.op);
      return std::nullopt;
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

void add_hd_round(Schedule& out, const CollectiveSpec& s, std::size_t distance, Bytes bytes) {
  Round ph;
  ph.steps = 1;
  for (std::size_t i = 0; i < s.ranks.size(); ++i) {
    ph.flows.push_back({s.ranks[i], s.ranks[i ^ distance], bytes, 0, kNoPipeline});
  }
  out.rounds.push_back(std::move(ph));
}

std::optional<Schedule> halving_doubling(const CollectiveSpec& s, std::string* why) {
  const std::size_t n = s.ranks.size();
  if (!is_power_of_two(n)) {
    if (why) *why = "hd needs a power-of-two number of ranks";
    return std::nullopt;
  }
  if (s.op != CollectiveOp::kAllReduce && s.op != CollectiveOp::kReduceScatter && s.op != CollectiveOp::kAllGather) {
    if (why) *why = std::string("hd does not implement ") + to_string(s.op);
    return std::nullopt;
  }
  Schedule out;
  const bool rs = s.op != CollectiveOp::kAllGather;
  const bool ag = s.op != CollectiveOp::kReduceScatter;
  // Recursive halving: step k exchanges S/2^k with the rank n/2^k away.
  if (rs) {
    for (std::size_t d = n / 2, k = 1; d >= 1; d /= 2, ++k) add_hd_round(out, s, d, share(s.size, 1, std::int64_t{1} << k));
  }
  // Recursive doubling: the same exchanges in reverse, S/n first.
  if (ag) {
    std::vector<Round> doubling;
    for (std::size_t d = n / 2, k = 1; d >= 1; d /= 2, ++k) {
      Schedule tmp;
      add_hd_round(tmp, s, d, share(s.size, 1, std::int64_t{1} << k));
      doubling.push_back(std::move(tmp.rounds[0]));
    }
    for (auto it = doubling.rbegin(); it != doubling.rend(); ++it) out.rounds.push_back(std::move(*it));
  }
  return out;
}

// The flows of `round` outside pipelines through the PXN relay (schedule.h, ProxyRelay); the
// pipelines' members stay first, in order.
void relay_round(const ScheduleContext& ctx, Round& round) {
  if (std::all_of(round.flows.begin(), round.flows.end(), [](const PlannedFlow& f) { return f.pipeline != kNoPipeline; })) return;
  ProxyRelay relay(ctx);
  std::vector<PlannedFlow> kept;
  kept.reserve(2 * round.flows.size());  // each flow and its handover, at most
  for (const PlannedFlow& f : round.flows) {
    if (f.pipeline == kNoPipeline) relay.add(f);
    else kept.push_back(f);
  }
  for (const PlannedFlow& f : relay.take()) kept.push_back(f);
  round.flows = std::move(kept);
}

// The ranks' sending servers when each server's ranks come in one run (lists_by_server): the
// relay's entries of all pairs are then each server's alone, one after another (every key's
// source is on its sender's server: the sender, or its proxy), listed from the routes by rail
// (server_pairs_relay.h) instead of merging n flows per sender. Worked out once per schedule.
struct ServerRuns {
  std::vector<std::size_t> ranks;  // 0, 1, ..., n - 1: each run's senders are a span of it
  std::vector<std::size_t> begin;  // run k: ranks[begin[k], begin[k + 1])
  std::size_t largest = 0;         // the longest run
  RankRails rails;

  ServerRuns(const ScheduleContext& ctx, const CollectiveSpec& s) : rails(rank_rails(ctx, s.ranks)) {
    ranks.resize(s.ranks.size());
    std::iota(ranks.begin(), ranks.end(), std::size_t{0});
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (i == 0 || rails.server[i] != rails.server[i - 1]) begin.push_back(i);
    }
    begin.push_back(ranks.size());
    for (std::size_t k = 0; k + 1 < begin.size(); ++k) largest = std::max(largest, begin[k + 1] - begin[k]);
  }
  std::size_t count() const { return begin.size() - 1; }
  std::span<const std::size_t> senders(std::size_t k) const {
    return std::span<const std::size_t>(ranks).subspan(begin[k], begin[k + 1] - begin[k]);
  }
  // Entries of `senders` senders' listing, at most: two per sender and rank on another server (the
  // proxy's connection, and its PCIe neighbour's own), and per sender one per rank of its own
  // server and one handover per proxy there. Reserved at once: at 16,384 ranks a reallocation
  // would copy the 2.7 GB of entries into a new block of twice that.
  std::size_t entries(std::size_t senders) const { return 2 * senders * count() + 2 * senders * largest; }
};

// The rank indices 0, ..., n - 1: relay_server_pairs's destinations in rank order.
std::vector<std::uint32_t> in_rank_order(std::size_t n) {
  if (n > UINT32_MAX) throw InternalError("more than 2^32 ranks");
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  return order;
}

std::optional<Schedule> direct(const ScheduleContext& ctx, const CollectiveSpec& s, std::int32_t from_server) {
  const std::size_t n = s.ranks.size();
  const auto ni = static_cast<std::int64_t>(n);
  Schedule out;
  // All pairs through the PXN relay as they are listed: O(n m) entries for m servers, never n^2.
  auto all_pairs = [&](Bytes bytes) {
    Round ph;
    ph.steps = 1;
    if (from_server >= 0) {  // one server's senders: the relay's entries for that server alone
      const RankRails rails = rank_rails(ctx, s.ranks);
      std::vector<std::size_t> senders;
      for (std::size_t i = 0; i < n; ++i) {
        if (rails.server[i] == from_server) senders.push_back(i);
      }
      const std::span<const std::size_t> one[1] = {senders};
      relay_server_pairs(ctx, s.ranks, rails, one, in_rank_order(n), bytes, ph.flows);
      out.rounds.push_back(std::move(ph));
      return;
    }
    if (each_once(servers_in_order(ctx.cluster(), s))) {
      const ServerRuns runs(ctx, s);
      const std::vector<std::uint32_t> destinations = in_rank_order(n);
      ph.flows.reserve(runs.entries(n));
      for (std::size_t k = 0; k < runs.count(); ++k) {
        const std::span<const std::size_t> one[1] = {runs.senders(k)};
        relay_server_pairs(ctx, s.ranks, runs.rails, one, destinations, bytes, ph.flows);
      }
      out.rounds.push_back(std::move(ph));
      return;
    }
    const ServerBlocks by_server = group_by_server(ctx.cluster(), s.ranks);
    std::size_t largest = 0;  // ranks on the fullest server
    for (const auto& block : by_server.blocks) largest = std::max(largest, block.size());
    const std::size_t entries = 2 * n * by_server.blocks.size() + 2 * n * largest;  // as ServerRuns::entries
    ProxyRelay relay(ctx);
    relay.reserve(entries);
    // The GPUs of one server send to each rank through one proxy (its rail's): one entry, whose
    // index is remembered per rank while the senders' server stays the same (ProxyRelay::add).
    std::vector<std::uint32_t> memo(n, 0);
    std::int32_t memo_server = std::numeric_limits<std::int32_t>::min();
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t server = ctx.cluster().node(s.ranks[i]).server;
      if (server != memo_server) {
        std::fill(memo.begin(), memo.end(), 0);
        memo_server = server;
      }
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j) relay.add({s.ranks[i], s.ranks[j], bytes, 0, kNoPipeline}, &memo[j]);
      }
    }
    ph.flows = relay.take();
    out.rounds.push_back(std::move(ph));
  };
  switch (s.op) {
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: all_pairs(share(s.size, 1, ni)); break;
    case CollectiveOp::kAllReduce:
      all_pairs(share(s.size, 1, ni));      // reduce-scatter
      out.rounds.push_back(out.rounds[0]);  // all-gather: the same pairs and shares
      break;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: {
      Round ph;
      for (std::size_t i = 0; i < n; ++i) {
        if (i == s.root) continue;
        if (s.op == CollectiveOp::kBroadcast) ph.flows.push_back({s.ranks[s.root], s.ranks[i], s.size, 0, kNoPipeline});
        else ph.flows.push_back({s.ranks[i], s.ranks[s.root], s.size, 0, kNoPipeline});
      }
      relay_round(ctx, ph);
      out.rounds.push_back(std::move(ph));
      break;
    }
    case CollectiveOp::kSendRecv: {
      // Two ranks: ranks[0] sends S to ranks[1] (a point-to-point transfer). More: every rank
      // sends S to the next and the last to the first, a ring shift, as nccl-tests' sendrecv
      // and the probe run it (calibration/probe/nccl_group.h).
      Round ph;
      ph.flows.push_back({s.ranks[0], s.ranks[1], s.size, 0, kNoPipeline});
      for (std::size_t i = 1; n > 2 && i < n; ++i) ph.flows.push_back({s.ranks[i], s.ranks[(i + 1) % n], s.size, 0, kNoPipeline});
      relay_round(ctx, ph);
      out.rounds.push_back(std::move(ph));
      break;
    }
  }
  return out;
}

// The ranks by server for an algorithm across servers: nothing (and `why`) unless they are on at
// least two servers, the same number on each.
std::optional<ServerBlocks> servers_alike(const ScheduleContext& ctx, const CollectiveSpec& s, const char* algorithm,
                                          std::string* why) {
  ServerBlocks sb = group_by_server(ctx.cluster(), s.ranks);
  if (sb.blocks.size() < 2 || !sb.uniform) {
    if (why) *why = std::string(algorithm) + (sb.blocks.size() < 2 ? " needs ranks on at least two servers" : " needs the same number of ranks on every server");
    return std::nullopt;
  }
  return sb;
}

std::optional<Schedule> hierarchical(const ScheduleContext& ctx, const CollectiveSpec& s,
                                     std::string* why) {
  if (s.op != CollectiveOp::kAllReduce && s.op != CollectiveOp::kAllGather && s.op != CollectiveOp::kReduceScatter) {
    if (why) *why = std::string("hierarchical does not implement ") + to_string(s.op);
    return std::nullopt;
  }
  const auto blocks = servers_alike(ctx, s, "hierarchical", why);
  if (!blocks) return std::nullopt;
  const ServerBlocks& sb = *blocks;
  const auto g = static_cast<std::int64_t>(sb.blocks[0].size());
  const auto m = static_cast<std::int64_t>(sb.blocks.size());
  // One pipelined round: every edge of every phase is a member of one pipeline, so the phases
  // advance together, as NCCL pipelines its tree's intra-server chains with the inter-server
  // tree (and CollNet its phases), chunk by chunk. Edges carry different volumes, so a member
  // stands for `copies` units of u = S / (g m R) (R the server's rings: 1, or its rings of
  // direct links), each edge's volume a whole number of units:
  //   intra-server ring edge, reduce-scatter or all-gather: (g-1)/g S/R = (g-1) m u
  //   inter-server edge of rail j's ring (slice S/g):  all-reduce 2(m-1)/m S/g = 2(m-1) R u,
  //                                                   reduce-scatter, all-gather (m-1) R u
  // The latency is the phases' steps: 2(m-1) network steps (all-reduce) and 2(g-1) steps of
  // the intra-server flows (Round::local_steps).
  const bool ar = s.op == CollectiveOp::kAllReduce;
  const auto& rings0 = ctx.direct_rings(block_gpus(s, sb.blocks[0]));
  const auto R = static_cast<std::int64_t>(std::max<std::size_t>(1, rings0.size()));
  const Bytes unit = share(s.size, 1, g * m * R);
  const std::int64_t intra_passes = ar ? 2 : 1;  // reduce-scatter and all-gather
  Round ph;
  ph.steps = static_cast<int>((ar ? 2 : 1) * (m - 1));
  ph.local_steps = static_cast<int>(intra_passes * (g - 1));
  const auto add_edges = [&](const std::vector<std::size_t>& order, std::int64_t copies, std::uint32_t channel) {
    const std::size_t n = order.size();
    for (std::size_t i = 0; i < n; ++i) {
      PlannedFlow f{s.ranks[order[i]], s.ranks[order[(i + 1) % n]], unit, channel, 0};
      f.copies = static_cast<std::uint32_t>(copies);
      f.connections = kDuplicatedChannels;
      ph.flows.push_back(f);
    }
  };
  if (g > 1) add_server_rings(ph, ctx, s, sb, unit, intra_passes * (g - 1) * m, R);
  for (std::int64_t j = 0; j < g; ++j) {
    std::vector<std::size_t> rail;
    for (const auto& b : sb.blocks) rail.push_back(b[static_cast<std::size_t>(j)]);
    add_edges(rail, (ar ? 2 : 1) * (m - 1) * R, static_cast<std::uint32_t>(j));
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

// NCCL's CollNet all-reduce with in-network reduction (SHARP): inside each server a ring
// reduce-scatter leaves GPU j with slice j (S/g); GPU j of every server sends its slice up the
// rail's aggregation tree (its NIC's leaf switch, and when the rail spans several leaves one
// switch above them all, the root), which reduces it and sends the result back down; a ring
// all-gather inside each server spreads the slices. Pipelined as one transfer (NCCL pipelines
// CollNet's phases), weighted as the hierarchical schedule: units u = S / (g m R), a ring edge
// carries 2 (g-1) m units (reduce-scatter and all-gather), a tree edge S/g = m R units each way.
// Every NIC sends S/g and receives S/g instead of a ring's 2 (m-1)/m S/g, so across servers
//     t = 2(g-1) a1 + 2 h a2 + max(2(g-1)/g S/B1, (S/g)/B2)     (h levels of the tree: 1 or 2)
// The switches aggregate at their ports' line rate (SHARPv3 streaming aggregation).
std::optional<Schedule> collnet(const ScheduleContext& ctx, const CollectiveSpec& s, std::string* why) {
  const topo::Cluster& c = ctx.cluster();
  const ServerBlocks sb = group_by_server(c, s.ranks);
  if (s.op != CollectiveOp::kAllReduce) {
    if (why) *why = std::string("collnet does not implement ") + to_string(s.op);
    return std::nullopt;
  }
  if (sb.blocks.size() < 2 || !sb.uniform) {
    if (why) *why = "collnet needs the same number of ranks on at least two servers";
    return std::nullopt;
  }
  const auto reduces = [&](NodeId n) { return is_switch(c.node(n).kind) && c.node(n).reduction_bandwidth.value() > 0; };
  // The in-network-reducing switch a GPU's NIC is cabled to.
  const auto leaf_of = [&](NodeId gpu) -> NodeId {
    const NodeId nic = ctx.nic_of(gpu);
    if (!nic.valid()) return {};
    for (topo::LinkId l : c.out_links(nic)) {
      if (reduces(c.link(l).dst)) return c.link(l).dst;
    }
    return {};
  };
  const auto g = static_cast<std::int64_t>(sb.blocks[0].size());
  const auto m = static_cast<std::int64_t>(sb.blocks.size());
  const auto& rings0 = ctx.direct_rings(block_gpus(s, sb.blocks[0]));
  const auto R = static_cast<std::int64_t>(std::max<std::size_t>(1, rings0.size()));
  const Bytes unit = share(s.size, 1, g * m * R);
  Round ph;
  ph.local_steps = static_cast<int>(2 * (g - 1));
  ph.steps = 2;
  const auto edge = [&](NodeId a, NodeId b, std::int64_t copies, std::uint32_t channel) {
    PlannedFlow f{a, b, unit, channel, 0};
    f.copies = static_cast<std::uint32_t>(copies);
    ph.flows.push_back(f);
  };
  for (std::size_t j = 0; j < static_cast<std::size_t>(g); ++j) {
    std::vector<NodeId> leaves;
    for (const auto& b : sb.blocks) {
      const NodeId gpu = s.ranks[b[j]];
      const NodeId leaf = leaf_of(gpu);
      if (!leaf.valid()) {
        if (why) *why = "collnet needs every GPU's NIC cabled to a switch that reduces in-network (fabric in_network_reduction)";
        return std::nullopt;
      }
      edge(gpu, leaf, m * R, static_cast<std::uint32_t>(j));
      edge(leaf, gpu, m * R, static_cast<std::uint32_t>(j));
      if (std::find(leaves.begin(), leaves.end(), leaf) == leaves.end()) leaves.push_back(leaf);
    }
    if (leaves.size() == 1) continue;
    // The root: a reducing switch cabled to every leaf, the (j mod count)-th of them so that the
    // rails spread over the spines.
    std::vector<NodeId> roots;
    for (topo::LinkId l : c.out_links(leaves[0])) {
      const NodeId up = c.link(l).dst;
      if (!reduces(up) || c.link(l).tier < 2) continue;
      const bool joins_all = std::all_of(leaves.begin(), leaves.end(), [&](NodeId leaf) { return c.find_link(leaf, up).has_value(); });
      if (joins_all && std::find(roots.begin(), roots.end(), up) == roots.end()) roots.push_back(up);
    }
    if (roots.empty()) {
      if (why) *why = "collnet needs one reducing switch above all the leaves of a rail (a two-level aggregation tree)";
      return std::nullopt;
    }
    const NodeId root = roots[j % roots.size()];
    for (NodeId leaf : leaves) {
      edge(leaf, root, m * R, static_cast<std::uint32_t>(j));
      edge(root, leaf, m * R, static_cast<std::uint32_t>(j));
    }
    ph.steps = 4;
  }
  if (g > 1) add_server_rings(ph, ctx, s, sb, unit, 2 * (g - 1) * m, R);
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

// NCCL's NVLS-tree all-reduce across servers (src/device/all_reduce.h, NCCL_ALGO_NVLS_TREE;
// trees from src/graph/connect.cc). Each server has H heads, one per NIC (its first GPU on each
// rail); S is cut into H slices of S/H, one per head. Inside a server, as single-server NVLS
// (nvls() below): every GPU's share of each slice goes to the switch and is reduced in the
// head's port (multimem.ld_reduce), the switch returns the reduced slice to the head, and the
// head stores the final slice into the switch, which writes it to every GPU (multimem.st).
// Across servers, head h's slice goes up and comes down a tree over the servers of h's rail:
// NCCL's channels alternate between the two trees of a double binary tree (c % 2), so each
// carries S/2H (the mirrored pair of heap-shaped trees, as server_trees()). One pipelined
// transfer: every member is a multiple of the unit u = S/2H. Per server and GPU (k GPUs):
//   NVLink out  S (its share of every slice, to the heads' ports) + S/H (its store, if a head)
//   NVLink in   S/H (its reduced slice, if a head) + S (every head's stored slice)
//   port        k inputs of S/H (a head's)
//   NIC         u per tree edge: up to its parent and down to each child, in both trees
// so on DGX H100 servers (H = k = 8) the NICs bind: an inner node of one tree sends 3u or 4u
// per NIC, about S/4, the ring's 2(n-1)/n S/8 x 2.
// Latency, as NCCL's cost model (src/graph/tuning.cc): NVLS's base latency, one NVLS step
// inside the server (hwLatencies[NVLINK][NVLS_TREE] = NVLS's 25 us) and 2 floor(log2 m) network
// steps (NCCL counts its own NET latency for NVLS-tree, 20.9 us against the tree's 14; the
// model takes the network class's step latency for both: an assumption).
std::optional<Schedule> nvls_tree(const ScheduleContext& ctx, const CollectiveSpec& s, std::string* why) {
  if (s.op != CollectiveOp::kAllReduce) {
    if (why) *why = std::string("nvls_tree does not implement ") + to_string(s.op);
    return std::nullopt;
  }
  const auto blocks = servers_alike(ctx, s, "nvls_tree", why);
  if (!blocks) return std::nullopt;
  const ServerBlocks& sb = *blocks;
  // Heads: per server, the first rank on each rail, the rails in the first server's order.
  std::vector<std::int32_t> rails;
  for (std::size_t r : sb.blocks[0]) {
    const std::int32_t rail = ctx.rail_of(s.ranks[r]);
    if (rail >= 0 && std::find(rails.begin(), rails.end(), rail) == rails.end()) rails.push_back(rail);
  }
  if (rails.empty()) {
    if (why) *why = "nvls_tree needs NICs on the servers";
    return std::nullopt;
  }
  const std::size_t m = sb.blocks.size(), k = sb.blocks[0].size(), H = rails.size();
  std::vector<std::vector<NodeId>> heads(m);  // [server][head]
  std::vector<NodeId> switches(m);
  for (std::size_t b = 0; b < m; ++b) {
    const auto sw = ctx.reducing_switch(ctx.cluster().node(s.ranks[sb.blocks[b][0]]).server);
    if (!sw) {
      if (why) *why = "nvls_tree needs an NVSwitch that can reduce in-switch (NVLink4 or later) in every server";
      return std::nullopt;
    }
    switches[b] = *sw;
    for (std::int32_t rail : rails) {
      const auto at = std::find_if(sb.blocks[b].begin(), sb.blocks[b].end(),
                                   [&](std::size_t r) { return ctx.rail_of(s.ranks[r]) == rail; });
      if (at == sb.blocks[b].end()) {
        if (why) *why = "nvls_tree needs the same rails on every server";
        return std::nullopt;
      }
      heads[b].push_back(s.ranks[*at]);
    }
  }
  const auto h64 = static_cast<std::int64_t>(H);
  const Bytes unit = share(s.size, 1, 2 * h64);
  const auto slice = static_cast<std::uint32_t>(2);  // a slice, S/H, in units
  Round ph;
  ph.steps = 2 * floor_log2(m);
  ph.local_steps = 1;
  ph.local_latency = StepLatency::kNvls;
  for (std::size_t b = 0; b < m; ++b) {
    const NodeId sw = switches[b];
    const auto member = [&](NodeId from, NodeId to, std::uint32_t copies, NodeId port = {}) {
      PlannedFlow f{from, to, unit, 0, 0, port, copies};
      ph.flows.push_back(f);
    };
    if (H == k) {
      // Every GPU a head: its inputs to the k ports listed through its own (same load per link
      // and port, O(k) entries), as nvls() does.
      for (std::size_t r : sb.blocks[b]) member(s.ranks[r], sw, slice * static_cast<std::uint32_t>(k), s.ranks[r]);
    } else {
      for (NodeId head : heads[b]) {
        for (std::size_t r : sb.blocks[b]) member(s.ranks[r], sw, slice, head);
      }
    }
    for (NodeId head : heads[b]) {
      member(sw, head, slice);  // its reduced slice
      member(head, sw, slice);  // its store of the final slice
    }
    for (std::size_t r : sb.blocks[b]) member(sw, s.ranks[r], slice * static_cast<std::uint32_t>(H));  // every final slice
  }
  for (std::size_t h = 0; h < H; ++h) {
    for (int t = 0; t < 2; ++t) {
      for (std::size_t i = 1; i < m; ++i) {
        const NodeId child = heads[mirrored(t, i, m)][h], parent = heads[mirrored(t, (i - 1) / 2, m)][h];
        PlannedFlow f{child, parent, unit, static_cast<std::uint32_t>(2 * h + static_cast<std::size_t>(t)), 0};
        f.rail = rails[h];
        add_both_ways(ph, f);
      }
    }
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

std::optional<Schedule> nvls(const ScheduleContext& ctx, const CollectiveSpec& s, std::string* why) {
  if (s.op != CollectiveOp::kAllReduce) {
    if (why) *why = std::string("nvls does not implement ") + to_string(s.op);
    return std::nullopt;
  }
  if (s.ranks.size() < 2) {
    if (why) *why = "nvls needs at least two ranks";
    return std::nullopt;
  }
  const ServerBlocks sb = group_by_server(ctx.cluster(), s.ranks);
  if (sb.blocks.size() != 1) {
    if (why) *why = "nvls needs all ranks in one server";
    return std::nullopt;
  }
  const auto sw = ctx.reducing_switch(ctx.cluster().node(s.ranks[0]).server);
  if (!sw) {
    if (why) *why = "nvls needs an NVSwitch that can reduce in-switch (NVLink4 or later)";
    return std::nullopt;
  }
  // NCCL's single-node NVLS all-reduce (src/device/all_reduce.h): S is cut into k slices, one
  // per head rank. For its slice, head h's reduce warps load-reduce the k copies through the
  // switch (multimem.ld_reduce on the multicast address: every GPU sends its S/k to the switch,
  // which reduces them and returns S/k to h) and store the result to every GPU (multimem.st: h
  // sends S/k, the switch writes it to all k). Per chunk, the load and the store are one
  // primitive of the head (recv-reduce then send, no handshake between them): one NVLS step.
  // Each GPU thus sends S (k+1)/k and receives S (k+1)/k over its NVLink, and the switch port
  // of each head reduces k inputs of S/k, S bytes. All flows advance as one pipeline, so on an
  // idle server
  //     t = b + a_nvls + (S + F) / min(k B / (k+1), R)
  // (B a GPU's NVLink rate, R a port's reduction rate, b and a_nvls NVLS's base and step
  // latency, F the pipeline's fill and drain: sim/collectives/nvls_pipeline.h, added by the
  // runner). Only the participants' links and ports are used: several NVLS collectives in one
  // server contend exactly where they share GPUs.
  //
  // The members, slices of S/k: (g -> switch, through head h's port) for every pair (g, h),
  // (switch -> h) and (h -> switch) for every head, (switch -> g) for every pair. Per link and
  // port the load is the same if g's inputs are listed through g's own port instead of h's (both
  // are k members per GPU and per port), so each GPU gets three entries with copies: O(k).
  const auto k = static_cast<std::int64_t>(s.ranks.size());
  const Bytes slice{(s.size.value() + k - 1) / k};
  const auto copies = static_cast<std::uint32_t>(k);
  Round ph;
  ph.steps = 1;
  ph.latency = StepLatency::kNvls;
  for (NodeId g : s.ranks) {
    ph.flows.push_back({g, *sw, slice, 0, 0, g, copies});          // ld_reduce inputs, reduced in a port
    ph.flows.push_back({g, *sw, slice, 0, 0});                     // st of its own slice
    ph.flows.push_back({*sw, g, slice, 0, 0, {}, copies + 1});     // its reduced slice + k multicasts
  }
  Schedule out;
  out.rounds.push_back(std::move(ph));
  return out;
}

}  // namespace

std::size_t Schedule::flow_count() const {
  std::size_t n = 0;
  for (const auto& p : rounds) {
    n += p.part_flow_count;
    for (const auto& f : p.flows) n += f.handover ? 0 : f.copies;
  }
  return n;
}

namespace {

std::uint64_t relay_key_hash(const PlannedFlow& f) {
  std::uint64_t h = hash_combine(hash_combine(f.src.value, f.dst.value), f.channel);
  h = hash_combine(hash_combine(h, static_cast<std::uint32_t>(f.rail)), static_cast<std::uint64_t>(f.bytes.value()));
  return hash_combine(h, f.handover ? 1 : 0);
}

bool same_relay_key(const PlannedFlow& a, const PlannedFlow& b) {
  return a.src == b.src && a.dst == b.dst && a.channel == b.channel && a.rail == b.rail && a.bytes == b.bytes &&
         a.handover == b.handover;
}

// `f` merged into the entry of the same relay key: its copies added.
void add_copies(PlannedFlow& entry, const PlannedFlow& f) {
  if (entry.copies > UINT32_MAX - f.copies) throw InternalError("more than 2^32 identical flows in one round");
  entry.copies += f.copies;
}

}  // namespace

void ProxyRelay::reserve(std::size_t entries) {
  flows_.reserve(entries);
  std::size_t slots = 16;
  while (slots < 2 * entries) slots *= 2;
  if (slots > slots_.size()) rehash(slots);
}

void ProxyRelay::rehash(std::size_t slots) {
  while (slots < 2 * (flows_.size() + 1)) slots *= 2;  // the flows merged by scan, if any
  slots_.assign(slots, 0);
  const std::size_t mask = slots - 1;
  for (std::size_t k = 0; k < flows_.size(); ++k) {
    std::size_t at = relay_key_hash(flows_[k]) & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = static_cast<std::uint32_t>(k + 1);
  }
}

std::uint32_t ProxyRelay::merge(const PlannedFlow& f, std::uint32_t* memo) {
  // The entry the caller remembers for this flow, if it still has the flow's key.
  if (memo && *memo != 0 && same_relay_key(flows_[*memo - 1], f)) {
    add_copies(flows_[*memo - 1], f);
    return *memo - 1;
  }
  const std::uint32_t at = merge(f);
  if (memo) *memo = at + 1;
  return at;
}

std::uint32_t ProxyRelay::merge(const PlannedFlow& f) {
  // A few flows (a point-to-point transfer's one or two, with their handovers) are merged by a
  // scan, without a table: the same entries in the same order as through it.
  constexpr std::size_t kScanFlows = 8;
  if (slots_.empty() && flows_.size() < kScanFlows) {
    for (std::size_t k = 0; k < flows_.size(); ++k) {
      if (!same_relay_key(flows_[k], f)) continue;
      add_copies(flows_[k], f);
      return static_cast<std::uint32_t>(k);
    }
    if (flows_.capacity() == 0) flows_.reserve(kScanFlows / 2);
    flows_.push_back(f);
    return static_cast<std::uint32_t>(flows_.size() - 1);
  }
  if (2 * (flows_.size() + 1) > slots_.size()) rehash(std::max<std::size_t>(16, 2 * slots_.size()));
  if (flows_.size() >= UINT32_MAX - 1) throw InternalError("more than 2^32 distinct flows in one round");
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = relay_key_hash(f) & mask;
  for (; slots_[at] != 0; at = (at + 1) & mask) {
    PlannedFlow& entry = flows_[slots_[at] - 1];
    if (!same_relay_key(entry, f)) continue;
    add_copies(entry, f);
    return slots_[at] - 1;
  }
  slots_[at] = static_cast<std::uint32_t>(flows_.size() + 1);
  flows_.push_back(f);
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void ProxyRelay::add(const PlannedFlow& f, std::uint32_t* memo) {
  if (f.pipeline != kNoPipeline) throw InternalError("ProxyRelay takes flows outside pipelines");
  const auto nic = f.handover ? std::nullopt : ctx_.nic_route(f.src, f.dst, f.rail);
  if (!nic || !nic->send_proxy.valid()) {
    merge(f, memo);
    return;
  }
  PlannedFlow handover = f;
  handover.dst = nic->send_proxy;
  handover.handover = true;
  // A sender's handovers go to a few proxies (one per rail): remembered by proxy.
  merge(handover, &handover_memo_[nic->send_proxy.value % handover_memo_.size()]);
  PlannedFlow send = f;
  send.src = nic->send_proxy;
  merge(send, memo);
}

std::vector<PlannedFlow> ProxyRelay::take() {
  slots_.clear();
  handover_memo_.fill(0);
  return std::exchange(flows_, {});
}

ScheduleContext::ScheduleContext(const topo::Cluster& cluster) : cluster_(cluster) {
  for (std::uint32_t i = 0; i < cluster.link_count(); ++i) {
    const topo::LinkInfo& l = cluster.link(topo::LinkId{i});
    const auto& a = cluster.node(l.src);
    const auto& b = cluster.node(l.dst);
    if (a.kind == topo::NodeKind::kGpu && b.kind == topo::NodeKind::kGpu && a.server >= 0 && a.server == b.server) {
      has_direct_gpu_links_ = true;
      break;
    }
  }
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& n = cluster.node(topo::NodeId{i});
    if (n.server < 0 && topo::is_switch(n.kind) && n.reduction_bandwidth.value() > 0) in_network_reduction_ = true;
    if (n.kind != topo::NodeKind::kNvSwitch || n.server < 0 || !(n.reduction_bandwidth.value() > 0)) continue;
    const auto s = static_cast<std::size_t>(n.server);
    if (reducing_switch_.size() <= s) reducing_switch_.resize(s + 1);
    if (!reducing_switch_[s].valid()) reducing_switch_[s] = topo::NodeId{i};
  }
  find_nics();
}

// GPU-NIC affinity (schedule.h, nic_of): one pass over each GPU's links and its PCIe switch's.
void ScheduleContext::find_nics() {
  using topo::NodeKind;
  const topo::Cluster& c = cluster_;
  gpu_index_.assign(c.node_count(), UINT32_MAX);
  for (std::size_t k = 0; k < c.gpus().size(); ++k) gpu_index_[c.gpus()[k].value] = static_cast<std::uint32_t>(k);
  // NICs by server and rail; GPUs per server in local order.
  std::vector<std::vector<NodeId>> server_gpus, rail_nic, rail_gpu;
  for (std::uint32_t i = 0; i < c.node_count(); ++i) {
    const topo::NodeInfo& n = c.node(NodeId{i});
    if (n.server < 0 || n.local < 0) continue;
    const auto sv = static_cast<std::size_t>(n.server);
    if (n.kind == NodeKind::kNic) {
      if (rail_nic.size() <= sv) rail_nic.resize(sv + 1);
      auto& rails = rail_nic[sv];
      if (rails.size() <= static_cast<std::size_t>(n.local)) rails.resize(static_cast<std::size_t>(n.local) + 1);
      rails[static_cast<std::size_t>(n.local)] = NodeId{i};
    } else if (n.kind == NodeKind::kGpu) {
      if (server_gpus.size() <= sv) server_gpus.resize(sv + 1);
      server_gpus[sv].push_back(NodeId{i});
    }
  }
  // The devices of v's server directly cabled to `v`, of kind `kind`, in link order.
  const auto neighbours = [&](NodeId v, NodeKind kind) {
    std::vector<NodeId> out;
    for (topo::LinkId l : c.out_links(v)) {
      const NodeId w = c.link(l).dst;
      if (c.node(w).kind == kind && c.node(w).server == c.node(v).server) out.push_back(w);
    }
    return out;
  };
  gpu_nic_.assign(c.gpus().size(), NodeId{});
  for (std::size_t k = 0; k < c.gpus().size(); ++k) {
    const NodeId g = c.gpus()[k];
    const topo::NodeInfo& info = c.node(g);
    if (info.server < 0 || static_cast<std::size_t>(info.server) >= rail_nic.size()) continue;
    NodeId nic;
    if (const auto direct = neighbours(g, NodeKind::kNic); !direct.empty()) nic = direct.front();
    for (NodeId sw : neighbours(g, NodeKind::kPcieSwitch)) {
      if (nic.valid()) break;
      const auto nics = neighbours(sw, NodeKind::kNic);
      const auto gpus = neighbours(sw, NodeKind::kGpu);
      const auto at = std::find(gpus.begin(), gpus.end(), g);
      if (nics.empty() || at == gpus.end()) continue;
      const auto pos = static_cast<std::size_t>(at - gpus.begin());
      nic = nics[pos * nics.size() / gpus.size()];
    }
    if (!nic.valid()) {
      // No NIC near it: the server's NIC of its share, through the host.
      std::vector<NodeId> nics;
      for (NodeId n : rail_nic[static_cast<std::size_t>(info.server)]) {
        if (n.valid()) nics.push_back(n);
      }
      const auto& gpus = server_gpus[static_cast<std::size_t>(info.server)];
      const auto pos = static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), g) - gpus.begin());
      if (!nics.empty()) nic = nics[pos * nics.size() / gpus.size()];
    }
    gpu_nic_[k] = nic;
    if (!nic.valid()) continue;
    const auto sv = static_cast<std::size_t>(info.server);
    if (rail_gpu.size() <= sv) rail_gpu.resize(sv + 1);
    auto& owners = rail_gpu[sv];
    const auto rail = static_cast<std::size_t>(c.node(nic).local);
    if (owners.size() <= rail) owners.resize(rail + 1);
    if (!owners[rail].valid()) owners[rail] = g;
  }
  // Flat, [server x rails_ + rail], so that a route's lookup is one read.
  rails_ = 0;
  for (const auto& rails : rail_nic) rails_ = std::max(rails_, rails.size());
  rail_nic_.assign(rail_nic.size() * rails_, NodeId{});
  rail_gpu_.assign(rail_nic.size() * rails_, NodeId{});
  for (std::size_t sv = 0; sv < rail_nic.size(); ++sv) {
    std::copy(rail_nic[sv].begin(), rail_nic[sv].end(), rail_nic_.begin() + static_cast<std::ptrdiff_t>(sv * rails_));
    if (sv < rail_gpu.size()) {
      std::copy(rail_gpu[sv].begin(), rail_gpu[sv].end(), rail_gpu_.begin() + static_cast<std::ptrdiff_t>(sv * rails_));
    }
  }
  places_.assign(c.node_count(), Place{});
  for (std::uint32_t i = 0; i < c.node_count(); ++i) places_[i].server = c.node(NodeId{i}).server;
  // reaches_over_pcie by rail, in one pass over the GPU's links and its PCIe switches': its own
  // NIC's rail, and each rail whose NIC of its server it or its switch is cabled to.
  for (const NodeId g : c.gpus()) {
    Place& p = places_[g.value];
    p.rail = rail_of(g);
    if (p.rail < 0) continue;
    const auto mark = [&](NodeId nic) {
      const std::int32_t r = c.node(nic).local;
      if (r >= 0 && r < kPlaceRails && this->rail_nic(p.server, r) == nic) p.pcie_rails |= std::uint64_t{1} << r;
    };
    mark(nic_of(g));
    any_over_pcie(c, g, [&](NodeId w) {
      if (c.node(w).kind == NodeKind::kNic) mark(w);
      return false;
    });
  }
}

NodeId ScheduleContext::nic_of(NodeId gpu) const {
  if (gpu.value >= gpu_index_.size() || gpu_index_[gpu.value] == UINT32_MAX) return {};
  return gpu_nic_[gpu_index_[gpu.value]];
}

std::int32_t ScheduleContext::rail_of(NodeId gpu) const {
  const NodeId nic = nic_of(gpu);
  return nic.valid() ? cluster_.node(nic).local : -1;
}

bool ScheduleContext::shares_pcie_switch(NodeId gpu, NodeId nic) const {
  return any_over_pcie(cluster_, gpu, [nic](NodeId w) { return w == nic; });
}

NodeId ScheduleContext::rail_nic(std::int32_t server, std::int32_t rail) const {
  const auto sv = static_cast<std::size_t>(server);
  if (server < 0 || rail < 0 || static_cast<std::size_t>(rail) >= rails_) return {};
  const std::size_t at = sv * rails_ + static_cast<std::size_t>(rail);
  return at < rail_nic_.size() ? rail_nic_[at] : NodeId{};
}

std::optional<NicRoute> ScheduleContext::nic_route(NodeId src, NodeId dst, std::int32_t rail) const {
  if (src.value >= places_.size() || dst.value >= places_.size()) throw InternalError("nic_route: unknown node");
  const Place &a = places_[src.value], &b = places_[dst.value];
  if (a.server < 0 || b.server < 0 || a.server == b.server) return std::nullopt;
  if (rail == PlannedFlow::kDestinationRail) rail = b.rail;
  NicRoute r;
  r.send_nic = rail_nic(a.server, rail);
  r.recv_nic = rail_nic(b.server, rail);
  if (!r.send_nic.valid() || !r.recv_nic.valid()) return std::nullopt;
  const bool near = a.rail >= 0 && rail < kPlaceRails ? (a.pcie_rails >> rail & 1) != 0 : reaches_over_pcie(src, r.send_nic);
  if (!near) {
    const auto sv = static_cast<std::size_t>(a.server);
    r.send_proxy = rail_gpu_[sv * rails_ + static_cast<std::size_t>(rail)];  // rail_nic checked both
  }
  return r;
}

const std::vector<std::vector<std::size_t>>& ScheduleContext::direct_rings(const std::vector<NodeId>& gpus) const {
  static const std::vector<std::vector<std::size_t>> kNone;
  if (!has_direct_gpu_links_ || gpus.size() < 2) return kNone;
  std::vector<std::uint32_t> key;
  key.reserve(gpus.size());
  for (NodeId g : gpus) key.push_back(g.value);
  std::lock_guard<std::mutex> lock(ring_cache_->mutex);
  auto it = ring_cache_->rings.find(key);
  if (it == ring_cache_->rings.end()) it = ring_cache_->rings.emplace(key, mesh_rings(cluster_, gpus)).first;
  return it->second;  // std::map nodes never move: the reference stays valid
}

std::optional<topo::NodeId> ScheduleContext::reducing_switch(std::int32_t server) const {
  if (server < 0 || static_cast<std::size_t>(server) >= reducing_switch_.size()) return std::nullopt;
  const topo::NodeId id = reducing_switch_[static_cast<std::size_t>(server)];
  if (!id.valid()) return std::nullopt;
  return id;
}

std::optional<Schedule> build_schedule(const ScheduleContext& ctx, const CollectiveSpec& spec,
                                       CollectiveAlgorithm algorithm, std::string* why_not, std::int32_t from_server) {
  if (spec.op == CollectiveOp::kSendRecv && algorithm != CollectiveAlgorithm::kDirect) {
    if (why_not) *why_not = "send_recv uses the direct algorithm";
    return std::nullopt;
  }
  if (from_server >= 0 && (algorithm != CollectiveAlgorithm::kDirect || !all_pairs_op(spec.op))) {
    throw InternalError("only the direct all-pairs schedules are built for one server's senders");
  }
  std::optional<Schedule> out;
  switch (algorithm) {
    case CollectiveAlgorithm::kRing: out = ring(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kTree: out = tree(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kHalvingDoubling: out = halving_doubling(spec, why_not); break;
    case CollectiveAlgorithm::kDirect: out = direct(ctx, spec, from_server); break;
    case CollectiveAlgorithm::kHierarchical: out = hierarchical(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kNvls: out = nvls(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kNvlsTree: out = nvls_tree(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kCollnet: out = collnet(ctx, spec, why_not); break;
    case CollectiveAlgorithm::kAuto:
      if (why_not) *why_not = "auto is not a fixed algorithm";
      return std::nullopt;
  }
  // Every flow outside pipelines goes through the PXN relay (schedule.h, ProxyRelay); direct
  // relays its rounds as it lists them.
  if (out && algorithm != CollectiveAlgorithm::kDirect) {
    for (Round& round : out->rounds) relay_round(ctx, round);
  }
  return out;
}

bool lists_by_server(const topo::Cluster& cluster, const CollectiveSpec& spec) {
  if (!all_pairs_op(spec.op)) return false;
  const std::vector<std::int32_t> order = servers_in_order(cluster, spec);
  return order.size() >= 2 && *std::min_element(order.begin(), order.end()) >= 0 && each_once(order);
}

std::optional<Schedule> direct_in_parts(const ScheduleContext& ctx, const CollectiveSpec& spec) {
  if (!lists_by_server(ctx.cluster(), spec)) return std::nullopt;
  // The sending servers in rank order, each once: a part lists a run of `group` of them (schedule.h),
  // with the destinations by rail. What every part reads of the ranks is worked out here, once.
  struct Parts {
    std::vector<NodeId> ranks;
    ServerRuns runs;
    Bytes bytes;
    std::vector<std::uint32_t> by_rail;  // the rank indices by rail (no rail last), in rank order within one
    std::size_t group = 1;
  };
  const std::size_t n = spec.ranks.size();
  if (n > UINT32_MAX) throw InternalError("more than 2^32 ranks");
  const Bytes bytes = share(spec.size, 1, static_cast<std::int64_t>(n));
  Parts made{spec.ranks, ServerRuns(ctx, spec), bytes, {}, 1};
  {
    // A counting sort of the ranks by rail: rail r's ranks at [at[r], at[r + 1]), no rail last.
    std::int32_t rails = 0;
    for (const std::int32_t r : made.runs.rails.rail) rails = std::max(rails, r + 1);
    const auto slot = [&](std::size_t j) {
      const std::int32_t r = made.runs.rails.rail[j];
      return r < 0 ? static_cast<std::size_t>(rails) : static_cast<std::size_t>(r);
    };
    std::vector<std::size_t> at(static_cast<std::size_t>(rails) + 2, 0);
    for (std::size_t j = 0; j < n; ++j) ++at[slot(j) + 1];
    for (std::size_t r = 0; r + 1 < at.size(); ++r) at[r + 1] += at[r];
    made.by_rail.resize(n);
    for (std::size_t j = 0; j < n; ++j) made.by_rail[at[slot(j)]++] = static_cast<std::uint32_t>(j);
  }
  made.group = std::clamp<std::size_t>(kPartEntries / std::max<std::size_t>(1, made.runs.entries(made.runs.largest)), 1,
                                       kPartServers);
  const auto parts = std::make_shared<const Parts>(std::move(made));
  Schedule out;
  // all_reduce: reduce-scatter then all-gather, the same pairs and shares (direct); the others:
  // one round.
  const std::size_t rounds = spec.op == CollectiveOp::kAllReduce ? 2 : 1;
  for (std::size_t r = 0; r < rounds; ++r) {
    Round round;
    round.steps = 1;
    round.part_count = (parts->runs.count() + parts->group - 1) / parts->group;
    round.part_flow_count = n * (n - 1);  // every ordered pair of ranks once
    round.parts = [&ctx, parts](std::size_t part, std::vector<PlannedFlow>& flows) {
      const std::size_t first = part * parts->group, last = std::min(parts->runs.count(), first + parts->group);
      if (first >= last) throw InternalError("direct_in_parts: no such part");
      std::vector<std::span<const std::size_t>> servers;
      servers.reserve(last - first);
      std::size_t senders = 0;
      for (std::size_t k = first; k < last; ++k) {
        servers.push_back(parts->runs.senders(k));
        senders += servers.back().size();
      }
      flows.clear();
      flows.reserve(parts->runs.entries(senders));
      relay_server_pairs(ctx, parts->ranks, parts->runs.rails, servers, parts->by_rail, parts->bytes, flows);
    };
    out.rounds.push_back(std::move(round));
  }
  return out;
}

std::vector<CollectiveAlgorithm> auto_candidates(const ScheduleContext& ctx, const CollectiveSpec& spec) {
  // NCCL's algorithm set, as its tuner sees it: rings everywhere; in-switch reduction inside an
  // NVLS-capable server, and NVLS-tree across such servers; trees only across servers, where
  // NCCL builds its trees; direct sends for all_to_all and send/recv. Halving-doubling, direct
  // all-pairs reductions (MPI-style) and the hierarchical schedule (not an NCCL algorithm) are
  // explicit choices only.
  const ServerBlocks sb = group_by_server(ctx.cluster(), spec.ranks);
  const bool multi_server = sb.blocks.size() > 1;
  switch (spec.op) {
    case CollectiveOp::kAllReduce: {
      std::vector<CollectiveAlgorithm> v{CollectiveAlgorithm::kRing};
      if (multi_server) {
        v.push_back(CollectiveAlgorithm::kTree);
        if (ctx.in_network_reduction()) v.push_back(CollectiveAlgorithm::kCollnet);
        if (std::all_of(sb.blocks.begin(), sb.blocks.end(), [&](const auto& b) {
              return ctx.reducing_switch(ctx.cluster().node(spec.ranks[b[0]]).server).has_value();
            })) {
          v.push_back(CollectiveAlgorithm::kNvlsTree);
        }
      } else {
        v.push_back(CollectiveAlgorithm::kNvls);
      }
      return v;
    }
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return {CollectiveAlgorithm::kRing};
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv: return {CollectiveAlgorithm::kDirect};
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: return {CollectiveAlgorithm::kRing};
  }
  return {};
}

}  // namespace cs::coll
