// The GPU diameter: the largest hop count of a shortest directed path between two GPUs, over
// ordered pairs (-1 when some GPU cannot reach another). Exact, without one BFS per GPU.
//
// 1. Twin servers. Let S and T be servers with the same number of devices, and pi the
//    permutation that exchanges the k-th device of S (in NodeId order) with the k-th device of
//    T, for every k, and fixes every other device. If pi maps the multiset of links onto itself
//    (checked: for every device x of S and T, the far ends of x's out-links, mapped by pi, are
//    the far ends of pi(x)'s out-links as a multiset, and the same for in-links; every link with
//    an end in S or T is then mapped onto a link, and the others are fixed), pi is an
//    automorphism of the directed graph that maps GPUs to GPUs (device kinds are checked), so
//    dist(pi(a), pi(b)) = dist(a, b) for all a, b, and the k-th GPU of T has the eccentricity
//    of the k-th GPU of S. Servers are bucketed by their links to outside devices (the k-th
//    device's far ends), which twins share, and each is checked against its bucket's
//    representatives; the relation is transitive (automorphisms compose), so the eccentricity of
//    every GPU is that of its position in its representative server. On a rail-optimized fabric
//    the servers of one leaf block are twins (32 on h100-rail-512), on a fat-tree those of one
//    leaf.
// 2. Bit-parallel BFS: the representatives' GPUs (and GPUs outside servers) are searched 64 at
//    a time, one bit per source in a 64-bit word per device, level by level; a source's
//    eccentricity is the last level at which its bit reached a new GPU.
//
// Cost: O(links) for the twin check, plus ceil(R / 64) passes of O(levels x links) for R
// representative GPUs (worst case, no twins: R = GPUs). Memory O(devices).
#pragma once

#include "topology/cluster.h"

namespace cs::topo {

int gpu_diameter(const Cluster& c);

}  // namespace cs::topo
