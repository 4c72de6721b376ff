// Rendezvous (highest-random-weight) choice among vertex ids: the router's pick of a route's
// middle vertex among the widest candidates (topology/router.h), first a class of twin switches
// (max_weighted_hash), then a member of it (max_hash).
//
// max_hash(ids, n, seed) is the index i of ids[0, n), n > 0, with the largest
// hash_combine(seed, ids[i]) (core/random.h). For a fixed seed hash_combine is a bijection of its
// value (an addition, an xor and mix64's invertible steps), so distinct ids never tie and the
// answer does not depend on the order of ids; each id wins for about 1/n of the seeds.
//
// Cost: n hashes. On x86-64 with GCC the hashes run several at a time where the CPU has the
// instructions (checked once at run time): 8 with AVX-512 (vpmullq), 4 with AVX2 (each 64-bit
// product from three vpmuludq), one at a time otherwise. Every variant computes the scalar
// loop's hashes exactly and returns the same index (tests/topology/rendezvous_hash_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cs::topo {

std::size_t max_hash(const std::uint32_t* ids, std::size_t n, std::uint64_t seed);

// Weighted rendezvous: the index i of ids[0, n), n > 0, weights[i] > 0, with the largest
// ln(u_i) / weights[i], where u_i = (floor(h_i / 2^11) + 1/2) / 2^53 in (0, 1) and h_i =
// hash_combine(seed, ids[i]); equal scores go to the larger h_i. -ln(u_i) is exponential with
// mean 1, so -ln(u_i) / w_i is exponential with rate w_i and index i wins for a share
// w_i / (sum of the weights) of the seeds (the least of independent exponentials), independent
// of the order of ids. When every weight is equal the order of the scores is that of the hashes
// and the answer is max_hash's (computed so, without logarithms). Cost: n hashes.
std::size_t max_weighted_hash(const std::uint32_t* ids, const std::uint32_t* weights, std::size_t n,
                              std::uint64_t seed);

// The variants, for tests and benchmarks. supported(): whether this build and this CPU can run
// it (kScalar always). max_hash_with: that variant's answer; calling one that is not supported
// is an InternalError.
enum class HashIsa : std::uint8_t { kScalar, kAvx2, kAvx512 };
bool supported(HashIsa isa);
std::size_t max_hash_with(HashIsa isa, const std::uint32_t* ids, std::size_t n, std::uint64_t seed);

}  // namespace cs::topo
