// Rings over direct GPU-to-GPU links, as NCCL and RCCL build them on servers whose GPUs are
// joined point to point (DGX-1's NVLink hybrid cube-mesh, an MI300X platform's xGMI full mesh).
//
// The rule. A ring hop from one GPU to the next is a direct link whenever the GPUs' direct links
// allow it: a ring never routes GPU traffic through a third GPU, or through PCIe and the host,
// unless no ring of direct links exists over the ranks. NCCL's ring search (src/graph/search.cc)
// keeps to NVLink paths the same way on a DGX-1, where two GPUs without an NVLink would go
// through PCIe and the CPUs' link.
//
// The rings. Let c(i, j) be the bandwidth of the direct links from rank i to rank j of one server
// (a pair joined by m links has m times a link's rate), u the smallest positive c, and
// k(i, j) = floor(c(i, j) / u) the units of u on each directed pair. A ring is a directed
// Hamiltonian cycle over the ranks using only pairs with k > 0, and each ring takes one unit of
// every pair it crosses. mesh_rings returns as many rings as the units allow, at most
//     R_max = min over ranks of min(sum_j k(i, j), sum_j k(j, i))
// (each ring takes one unit out of and into every rank), found by a depth-first search over the
// Hamiltonian cycles with a bounded number of steps (deterministic; it stops at R_max). Every
// ring then carries an equal share S/R of the collective and no directed pair carries more rings
// than its units, so on an idle server each ring runs at u and the ring all-reduce takes
//     2(n-1) a + 2(n-1)/n S / (R u e)       busbw = R u e      (e the class efficiency)
// DGX-1 (u = 25 GB/s, 6 links per GPU): R = R_max = 6 (the doubled pairs form one Hamiltonian
// cycle, used twice in each direction, and the single links another, once each way), busbw
// = 150 GB/s x e. MI300X (u = 64 GB/s, 7 links): R = 7 directed rings that cover every link
// in each direction once (the complete symmetric digraph on 8 vertices decomposes into 7
// directed Hamiltonian cycles, Tillson 1980), busbw = 448 GB/s x e.
//
// Limits: rings are per server; across servers each channel's intra-server part follows one
// of these rings, cut open at the GPU it leaves from (schedule.h). The links are class nvlink,
// so xGMI takes NVLink's efficiency and step latencies (docs/validation.md, "Mesh servers"). The search is exponential in the worst case: it is bounded
// (kMeshSearchSteps) and keeps the most rings found; servers have at most a few tens of GPUs.
#pragma once

#include <cstddef>
#include <vector>

#include "topology/cluster.h"

namespace cs::coll {

inline constexpr std::size_t kMeshSearchSteps = 2'000'000;

// Rings over the direct GPU-to-GPU links among `gpus` (one server's ranks), each a permutation
// of the positions 0..gpus.size()-1; empty when the GPUs have no direct link among them or no
// Hamiltonian cycle of direct links exists (then callers keep rank order, and the router takes
// whatever path the topology forces).
std::vector<std::vector<std::size_t>> mesh_rings(const topo::Cluster& cluster,
                                                 const std::vector<topo::NodeId>& gpus);

}  // namespace cs::coll
