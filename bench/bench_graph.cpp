// The cluster graph's representation, measured (issue 8, item 7): the cluster's own compressed
// sparse rows (topo::Adjacency, what Cluster holds; option b) against Boost.Graph's bidirectional
// compressed_sparse_row_graph built from the same link list (option a), and, for reference, the
// representation they replace (a Boost adjacency_list plus per-node out/in link vectors).
//
// On configs/clusters/h100-rail-512.json with --set /servers/0/count=N (default 4,096 servers,
// 32,768 GPUs) it reports, best of R repetitions (default 3):
//   build   wall time and heap of building each representation from the link list: for option b
//           ClusterBuilder::build (both directions' rows; the nodes and links are moved, not
//           copied); for option a the Boost constructor (forward rows, then the backward rows);
//           "retained" is what the structure keeps, "peak" the most heap it held while building,
//           both over the heap in use before (operator new is counted in this binary);
//   route   Q route() queries of the Router (option b; the Router reads the Cluster's rows) on
//           seeded random GPU pairs and labels, a fresh Router each repetition;
//   bidi    the same Q pairs' hop counts by one bidirectional BFS written once as a template and
//           run over each representation (arrays for b, out_edges/in_edges for a);
//   bfs     one full BFS from the first GPU: over the arrays (b), and over the Boost graph both
//           by the same loop through out_edges and by boost::breadth_first_search (a).
// Each query section prints a checksum of its answers, equal across representations when they
// agree. It reports and never asserts. This is the one file outside topology/ that includes
// Boost.Graph: it measures Boost as a candidate, it is not part of the simulator.
//
// Usage: bench_graph [--servers N] [--queries Q] [--repeat R] [--cluster PATH]
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "core/huge_pages.h"
#include "core/random.h"
#include "topology/cluster.h"
#include "topology/cluster_builder.h"
#include "topology/cluster_loader.h"
#include "topology/router.h"

// ---- heap accounting: every operator new and delete of this process -----------------------------

namespace {
std::size_t g_live = 0, g_peak = 0;

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  g_live += malloc_usable_size(p);
  g_peak = std::max(g_peak, g_live);
  return p;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  g_live -= malloc_usable_size(p);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }

namespace {

namespace fs = std::filesystem;
namespace topo = cs::topo;
using Clock = std::chrono::steady_clock;

constexpr const char* kClusterRel = "configs/clusters/h100-rail-512.json";
constexpr double kMiB = 1024.0 * 1024.0;

// Option a: forward rows carry the LinkId; Boost's backward rows carry forward edge positions.
using BoostCsr = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, topo::LinkId,
                                                    boost::no_property, std::uint32_t, std::uint32_t>;
// The representation before: Boost adjacency_list written beside per-node link vectors.
struct VertexProps {
  topo::NodeId id;
};
struct EdgeProps {
  topo::LinkId id;
};
using AdjacencyList =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexProps, EdgeProps>;
struct Before {
  AdjacencyList graph;
  std::vector<std::vector<topo::LinkId>> out, in;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The cluster file from the working directory or the executable's location, or as given.
std::string find_cluster(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  std::vector<fs::path> roots;
  for (fs::path p = fs::current_path(ec); !ec && !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    roots.push_back(p);
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    roots.push_back(p);
  }
  for (const fs::path& r : roots) {
    if (fs::exists(r / kClusterRel, ec)) return (r / kClusterRel).string();
  }
  return kClusterRel;
}

// Wall time, retained and peak heap of one build; the best time of the repetitions.
struct BuildCost {
  double seconds = std::numeric_limits<double>::infinity();
  std::size_t retained = 0, peak = 0;
};

// Runs make() `repeat` times; each result lives until the next starts, so retained is its own.
template <class Make>
BuildCost measure_build(int repeat, Make make) {
  BuildCost cost;
  for (int r = 0; r < repeat; ++r) {
    malloc_trim(0);  // every build starts from memory the kernel must hand out afresh
    const std::size_t before = g_live;
    g_peak = g_live;
    const auto t0 = Clock::now();
    auto built = make();
    cost.seconds = std::min(cost.seconds, seconds_since(t0));
    cost.retained = g_live - before;
    cost.peak = g_peak - before;
  }
  return cost;
}

// Option b's input: a builder holding a copy of the cluster's nodes and links (ids unchanged).
topo::ClusterBuilder copy_into_builder(const topo::Cluster& c) {
  topo::ClusterBuilder b(c.name());
  for (std::uint32_t v = 0; v < c.node_count(); ++v) b.add_node(c.node(topo::NodeId{v}));
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(topo::LinkId{i});
    b.add_link(l.src, l.dst, l.bandwidth, l.latency, l.link_class, l.tier);
  }
  return b;
}

// ---- one search, two representations --------------------------------------------------------

// Adjacency access for the templated searches: for_out(v, f) calls f(w) for each out-neighbour.
// Raw pointers into the rows, as the Router holds them.
struct ArraysView {
  explicit ArraysView(const topo::Cluster& c)
      : out_begin(c.out_adjacency().begin.data()),
        out_node(c.out_adjacency().node.data()),
        in_begin(c.in_adjacency().begin.data()),
        in_node(c.in_adjacency().node.data()) {}
  const std::uint32_t *out_begin, *out_node, *in_begin, *in_node;
  template <class F>
  void for_out(std::uint32_t v, F&& f) const {
    for (std::uint32_t k = out_begin[v]; k < out_begin[v + 1]; ++k) f(out_node[k]);
  }
  template <class F>
  void for_in(std::uint32_t v, F&& f) const {
    for (std::uint32_t k = in_begin[v]; k < in_begin[v + 1]; ++k) f(in_node[k]);
  }
};

struct BoostView {
  const BoostCsr& g;
  template <class F>
  void for_out(std::uint32_t v, F&& f) const {
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) f(static_cast<std::uint32_t>(boost::target(*e, g)));
  }
  template <class F>
  void for_in(std::uint32_t v, F&& f) const {
    for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) f(static_cast<std::uint32_t>(boost::source(*e, g)));
  }
};

// Scratch of the searches, stamped by generation so nothing is cleared between queries.
struct Scratch {
  explicit Scratch(std::size_t n) : fwd(n, 0), bwd(n, 0), dist(n, 0) {}
  std::vector<std::uint32_t> fwd, bwd, dist, front_fwd, front_bwd, next;
  std::uint32_t generation = 0;
};

// Hop count src -> dst by bidirectional BFS (the smaller frontier grows one level), or -1.
template <class View>
int bidi_hops(const View& g, Scratch& s, std::uint32_t src, std::uint32_t dst) {
  if (src == dst) return 0;
  const std::uint32_t gen = ++s.generation;
  s.fwd[src] = gen;
  s.bwd[dst] = gen;
  s.front_fwd.assign(1, src);
  s.front_bwd.assign(1, dst);
  int depth = 0;
  while (!s.front_fwd.empty() && !s.front_bwd.empty()) {
    const bool forward = s.front_fwd.size() <= s.front_bwd.size();
    std::vector<std::uint32_t>& front = forward ? s.front_fwd : s.front_bwd;
    std::vector<std::uint32_t>& mine = forward ? s.fwd : s.bwd;
    const std::vector<std::uint32_t>& theirs = forward ? s.bwd : s.fwd;
    bool met = false;
    s.next.clear();
    auto visit = [&](std::uint32_t w) {
      if (mine[w] == gen) return;
      mine[w] = gen;
      met = met || theirs[w] == gen;
      s.next.push_back(w);
    };
    for (std::uint32_t u : front) {
      if (forward) {
        g.for_out(u, visit);
      } else {
        g.for_in(u, visit);
      }
    }
    ++depth;
    front.swap(s.next);
    if (met) return depth;
  }
  return -1;
}

// Full BFS from src; returns the sum of all distances (a checksum).
template <class View>
std::uint64_t bfs_sum(const View& g, Scratch& s, std::uint32_t src) {
  const std::uint32_t gen = ++s.generation;
  std::vector<std::uint32_t>& queue = s.next;
  queue.assign(1, src);
  s.fwd[src] = gen;
  s.dist[src] = 0;
  std::uint64_t sum = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t u = queue[head];
    g.for_out(u, [&](std::uint32_t w) {
      if (s.fwd[w] == gen) return;
      s.fwd[w] = gen;
      s.dist[w] = s.dist[u] + 1;
      sum += s.dist[w];
      queue.push_back(w);
    });
  }
  return sum;
}

// boost::breadth_first_search with a distance recorder; the same checksum.
std::uint64_t boost_bfs_sum(const BoostCsr& g, std::uint32_t src) {
  std::vector<std::uint32_t> dist(boost::num_vertices(g), 0);
  boost::breadth_first_search(
      g, src, boost::visitor(boost::make_bfs_visitor(boost::record_distances(dist.data(), boost::on_tree_edge()))));
  std::uint64_t sum = 0;
  for (std::uint32_t d : dist) sum += d;
  return sum;
}

template <class F>
double best_of(int repeat, F f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

void print_build(const char* name, const BuildCost& c) {
  std::printf("build  %-44s %8.1f ms  retained %7.2f MiB  peak %7.2f MiB\n", name, c.seconds * 1e3,
              static_cast<double>(c.retained) / kMiB, static_cast<double>(c.peak) / kMiB);
}

int run(int argc, char** argv) {
  int servers = 4096, queries = 20000, repeat = 3;
  std::string cluster_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--servers" && has_value) {
      servers = std::atoi(argv[++i]);
    } else if (a == "--queries" && has_value) {
      queries = std::atoi(argv[++i]);
    } else if (a == "--repeat" && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--cluster" && has_value) {
      cluster_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_graph [--servers N] [--queries Q] [--repeat R] [--cluster PATH]\n");
      return 2;
    }
  }

  const std::string path = find_cluster(cluster_path);
  const auto t_load = Clock::now();
  const topo::Cluster c = topo::load_cluster(path, {"/servers/0/count=" + std::to_string(servers)});
  const double load_s = seconds_since(t_load);
  const auto n = static_cast<std::uint32_t>(c.node_count());
  const std::size_t e = c.link_count();
  std::printf("cluster %s x %d servers: %zu GPUs, %u vertices, %zu directed links; load %.1f ms\n", path.c_str(),
              servers, c.gpus().size(), n, e, load_s * 1e3);

  // ---- build ----
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges(e);
  std::vector<topo::LinkId> ids(e);
  for (std::uint32_t i = 0; i < e; ++i) {
    edges[i] = {c.link(topo::LinkId{i}).src.value, c.link(topo::LinkId{i}).dst.value};
    ids[i] = topo::LinkId{i};
  }
  BuildCost b_cost;
  for (int r = 0; r < repeat; ++r) {
    topo::ClusterBuilder builder = copy_into_builder(c);
    const BuildCost one = measure_build(1, [&] { return std::move(builder).build(); });
    b_cost.seconds = std::min(b_cost.seconds, one.seconds);
    b_cost.peak = one.peak;
  }
  const std::size_t rows = (c.out_adjacency().begin.capacity() + c.in_adjacency().begin.capacity()) * 4 +
                           (c.out_adjacency().node.capacity() + c.in_adjacency().node.capacity()) * 4 +
                           (c.out_adjacency().link.capacity() + c.in_adjacency().link.capacity()) * 4;
  b_cost.retained = rows;
  const BuildCost a_cost = measure_build(repeat, [&] {
    return BoostCsr(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), ids.begin(), n);
  });
  const BuildCost before_cost = measure_build(repeat, [&] {
    Before g{AdjacencyList(), std::vector<std::vector<topo::LinkId>>(n), std::vector<std::vector<topo::LinkId>>(n)};
    for (std::uint32_t v = 0; v < n; ++v) boost::add_vertex(VertexProps{topo::NodeId{v}}, g.graph);
    for (std::uint32_t i = 0; i < e; ++i) {
      boost::add_edge(edges[i].first, edges[i].second, EdgeProps{topo::LinkId{i}}, g.graph);
      g.out[edges[i].first].push_back(topo::LinkId{i});
      g.in[edges[i].second].push_back(topo::LinkId{i});
    }
    return g;
  });
  print_build("b: Cluster adjacency (ClusterBuilder::build)", b_cost);
  print_build("a: boost compressed_sparse_row_graph", a_cost);
  std::printf("       a: + in-link LinkIds for in_links() spans: %.2f MiB more\n",
              static_cast<double>(e * sizeof(topo::LinkId)) / kMiB);
  print_build("before: adjacency_list + out/in link vectors", before_cost);
  std::printf("       before: + the Router's own copy of the rows: %.2f MiB more\n", static_cast<double>(rows) / kMiB);

  // ---- queries ----
  const BoostCsr boost_graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), ids.begin(), n);
  const auto gpus = c.gpus();
  cs::Rng rng = cs::Rng::derive(1, 8);
  std::vector<std::pair<topo::NodeId, topo::NodeId>> pairs(static_cast<std::size_t>(queries));
  for (auto& [s, d] : pairs) {
    s = gpus[rng.below(gpus.size())];
    d = gpus[rng.below(gpus.size())];
  }

  std::uint64_t route_sum = 0;
  const double route_s = best_of(repeat, [&] {
    topo::Router router(c);
    route_sum = 0;
    for (std::size_t q = 0; q < pairs.size(); ++q) {
      for (topo::LinkId l : router.route(pairs[q].first, pairs[q].second, q)) route_sum += l.value;
    }
  });
  std::printf("route  b: Router::route                        %8.1f ms  %6.2f us/query  checksum %llu\n",
              route_s * 1e3, route_s * 1e6 / queries, static_cast<unsigned long long>(route_sum));

  const ArraysView arrays(c);
  const BoostView boost_view{boost_graph};
  Scratch scratch(n);
  auto bidi = [&](const auto& view, const char* name) {
    std::uint64_t sum = 0;
    const double s = best_of(repeat, [&] {
      sum = 0;
      for (const auto& [src, dst] : pairs) {
        sum += static_cast<std::uint64_t>(bidi_hops(view, scratch, src.value, dst.value));
      }
    });
    std::printf("bidi   %-44s %8.1f ms  %6.2f us/query  checksum %llu\n", name, s * 1e3, s * 1e6 / queries,
                static_cast<unsigned long long>(sum));
  };
  bidi(arrays, "b: arrays");
  bidi(boost_view, "a: boost out_edges / in_edges");

  auto bfs = [&](const char* name, auto f) {
    std::uint64_t sum = 0;
    const double s = best_of(repeat, [&] { sum = f(); });
    std::printf("bfs    %-44s %8.2f ms  checksum %llu\n", name, s * 1e3, static_cast<unsigned long long>(sum));
  };
  const std::uint32_t first = gpus.front().value;
  bfs("b: arrays", [&] { return bfs_sum(arrays, scratch, first); });
  bfs("a: boost out_edges", [&] { return bfs_sum(boost_view, scratch, first); });
  bfs("a: boost::breadth_first_search", [&] { return boost_bfs_sum(boost_graph, first); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  try {
    return run(argc, argv);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_graph: %s\n", ex.what());
    return 1;
  }
}
