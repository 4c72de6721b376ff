// Collective simulation cost at scale: a 1 GiB all_reduce over every GPU of the rail-optimized
// h100-rail-512 cluster (4,096 GPUs; "--set /servers/0/count=N/8" gives 8k/16k/32k GPUs, the 64
// spines kept) and, for 65,536 and 131,072 GPUs, of the three-tier fat-tree h100-fat-tree-3tier
// (radix 128, 16 and 32 pods), congestion-aware (max-min flow model) through CollectiveSimulator.
//
// One case = one (GPU count, algorithm): ring, tree and hierarchical with the Simple protocol via
// run_fixed, or `auto` (every candidate algorithm x protocol, through run()). Per case it measures
//   load   wall time of topo::load_cluster (parse, validate, build the graph);
//   sim    wall time of CollectiveSimulator construction (layout, router arrays) + the spec +
//          the simulation itself (schedule, routing of every flow, flow network, events);
//   total  load + sim, in process;
//   proc   wall time of the whole process (fork to exit, measured by the parent), and its peak RSS
//          (ru_maxrss of the child from wait4) and CPU time (user + sys).
// Every case runs in a fresh process of its own (this binary re-executes itself), so its peak
// RSS is its own; each case is repeated (3 times by default) and the fastest repetition (by
// process wall time) is reported, with the largest peak RSS of all repetitions; a case whose
// process takes over 10 s is not repeated.
//
// Usage:
//   bench_collective                       all cases, table + one JSON line per case
//   bench_collective --gpus N --algo A     one case in this process, one JSON line
//                    [--protocol simple|ll] [--bytes B] [--cluster PATH]
//                    [--op all_reduce|all_to_all|...] [--routing ecmp|adaptive] [--fold on|off]
//                    [--rounds closed|flows]
//                    (A: any fixed algorithm, run_fixed with the protocol; or auto, via run();
//                    --routing overrides the cluster's /fabric/routing; --fold off runs every
//                    flow of a collective the simulator would fold by symmetry,
//                    sim/collectives/network_fold.h; --rounds flows simulates every round's flows
//                    where the simulator would take a round of equal flows in closed form,
//                    sim/network/equal_flows_round.h)
//   bench_collective --max-gpus N --repeat R --bytes B  limits for the all-cases mode
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "sim/collectives/collective.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "sim/collectives/schedule.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kClusterRel = "configs/clusters/h100-rail-512.json";
constexpr const char* kThreeTierRel = "configs/clusters/h100-fat-tree-3tier.json";
constexpr long kThreeTierFrom = 65536;  // GPU counts from here run on the three-tier fabric
constexpr int kGpusPerServer = 8;  // both clusters' "gpus"
constexpr double kSlowCase_s = 10;  // a case slower than this runs once

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The cluster file: as given, else `rel` (configs/...) from the working directory or one of its
// parents, else from the parents of this executable (build-*/bench/bench_collective).
std::string find_cluster(const std::string& given, const char* rel = kClusterRel) {
  if (!given.empty()) return given;
  std::vector<fs::path> roots;
  std::error_code ec;
  for (fs::path p = fs::current_path(ec); !ec && !p.empty(); p = p.parent_path()) {
    roots.push_back(p);
    if (p == p.parent_path()) break;
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty(); p = p.parent_path()) {
      roots.push_back(p);
      if (p == p.parent_path()) break;
    }
  }
  for (const fs::path& r : roots) {
    if (fs::exists(r / rel, ec)) return (r / rel).string();
  }
  return rel;  // the loader names it in its error
}

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // KiB on Linux
}

struct CaseResult {
  long gpus = 0;
  std::string algo;         // requested
  std::string chosen;       // algorithm/protocol that ran (auto: the winner)
  int candidates = 0;       // (algorithm, protocol) pairs that apply (NCCL's set)
  int simulated = 0;        // of them, those run() simulated (the others bounded out)
  double load_s = 0, sim_s = 0, total_s = 0;
  double sim_time_s = 0, busbw_GBps = 0;
  unsigned long long flows = 0, events = 0;
  std::string op = "all_reduce";
  unsigned folded_servers = 0;
  bool twin_folded = false;  // every flow on the twin switches' quotient (network_fold.h)
  long rss_kib = 0;         // in-process ru_maxrss at the end
  // filled by the parent
  double proc_s = 0, cpu_s = 0;
  long proc_rss_kib = 0;
};

std::string to_json(const CaseResult& r, long long bytes) {
  // proc_s and cpu_s are the parent's measurements: null in a case run on its own.
  char proc[32] = "null", cpu[32] = "null";
  if (r.proc_s > 0) {
    std::snprintf(proc, sizeof proc, "%.6f", r.proc_s);
    std::snprintf(cpu, sizeof cpu, "%.6f", r.cpu_s);
  }
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"bench\":\"collective\",\"op\":\"%s\",\"bytes\":%lld,\"gpus\":%ld,"
                "\"algo\":\"%s\",\"ran\":\"%s\",\"candidates\":%d,\"simulated\":%d,\"load_s\":%.6f,\"sim_s\":%.6f,"
                "\"total_s\":%.6f,\"proc_s\":%s,\"cpu_s\":%s,\"peak_rss_mib\":%.1f,"
                "\"simulated_s\":%.9g,\"busbw_GBps\":%.4f,\"flows\":%llu,\"events\":%llu,"
                "\"folded_servers\":%u,\"twin_folded\":%s}",
                r.op.c_str(), bytes, r.gpus, r.algo.c_str(), r.chosen.c_str(), r.candidates, r.simulated, r.load_s,
                r.sim_s, r.total_s, proc, cpu,
                static_cast<double>(r.proc_rss_kib ? r.proc_rss_kib : r.rss_kib) / 1024.0,
                r.sim_time_s, r.busbw_GBps, r.flows, r.events, r.folded_servers, r.twin_folded ? "true" : "false");
  return buf;
}

// What a single case may change besides (GPUs, algorithm, protocol, bytes, cluster).
struct CaseOptions {
  std::string op = "all_reduce";
  std::string routing;  // empty: the cluster's
  bool fold = true;
  bool closed_rounds = true;
};

// One case in this process.
int run_case(long gpus, const std::string& algo_name, const std::string& protocol_name, long long bytes,
             const std::string& cluster_arg, const CaseOptions& options) {
  const auto op = cs::parse_collective_op(options.op);
  if (!op) {
    std::fprintf(stderr, "bench_collective: unknown --op %s\n", options.op.c_str());
    return 2;
  }
  if (protocol_name != "simple" && protocol_name != "ll") {
    std::fprintf(stderr, "bench_collective: --protocol must be simple or ll\n");
    return 2;
  }
  const auto protocol = protocol_name == "ll" ? cs::coll::Protocol::kLowLatency : cs::coll::Protocol::kSimple;
  const auto algo = cs::parse_collective_algorithm(algo_name);
  if (!algo) {
    std::fprintf(stderr, "bench_collective: unknown --algo %s\n", algo_name.c_str());
    return 2;
  }
  if (gpus <= 0 || gpus % kGpusPerServer != 0) {
    std::fprintf(stderr, "bench_collective: --gpus must be a positive multiple of %d\n", kGpusPerServer);
    return 2;
  }
  const std::string path = find_cluster(cluster_arg);
  std::vector<std::string> overrides;
  if (gpus != 4096) overrides.push_back("/servers/0/count=" + std::to_string(gpus / kGpusPerServer));
  if (!options.routing.empty()) overrides.push_back("/fabric/routing=" + options.routing);

  CaseResult r;
  r.algo = algo_name;
  const auto t0 = Clock::now();
  const cs::coll::Machine machine = cs::coll::load_machine(path, overrides);
  const cs::topo::Cluster& cluster = machine.cluster;
  r.load_s = seconds_since(t0);

  const auto t1 = Clock::now();
  cs::coll::CollectiveSimulator simulator(
      machine, options.fold ? cs::coll::CollectiveSimulator::Folding::kSymmetric : cs::coll::CollectiveSimulator::Folding::kNone,
      options.closed_rounds ? cs::coll::CollectiveSimulator::Rounds::kClosedForm : cs::coll::CollectiveSimulator::Rounds::kFlows);
  cs::coll::CollectiveSpec spec;
  spec.op = *op;
  spec.size = cs::Bytes{bytes};
  const auto all = cluster.gpus();
  spec.ranks.assign(all.begin(), all.end());
  spec.algorithm = *algo;
  cs::coll::CollectiveResult res;
  if (*algo == cs::CollectiveAlgorithm::kAuto) {
    res = simulator.run(spec);
  } else {
    std::string why;
    auto fixed = simulator.run_fixed(spec, *algo, protocol, &why);
    if (!fixed) {
      std::fprintf(stderr, "bench_collective: %s does not apply: %s\n", algo_name.c_str(), why.c_str());
      return 1;
    }
    res = *fixed;
  }
  r.sim_s = seconds_since(t1);
  r.total_s = seconds_since(t0);
  r.rss_kib = peak_rss_kib();

  r.candidates = static_cast<int>(res.candidates);
  r.simulated = static_cast<int>(res.simulated_candidates);
  r.gpus = static_cast<long>(spec.ranks.size());
  r.chosen = std::string(cs::to_string(res.algorithm)) + "/" + cs::coll::to_string(res.protocol);
  r.sim_time_s = cs::to_seconds(res.time);
  r.busbw_GBps = static_cast<double>(bytes) / r.sim_time_s / 1e9 *
                 cs::busbw_factor(spec.op, spec.ranks.size());
  r.flows = res.flows;
  r.events = res.events;
  r.op = options.op;
  r.folded_servers = res.folded_servers;
  r.twin_folded = res.twin_folded;
  std::printf("%s\n", to_json(r, bytes).c_str());
  return 0;
}

// Extracts "key":value (number or string) from one of our JSON lines.
std::string field(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  auto p = json.find(k);
  if (p == std::string::npos) return "";
  p += k.size();
  if (json[p] == '"') {
    const auto e = json.find('"', p + 1);
    return json.substr(p + 1, e - p - 1);
  }
  const auto e = json.find_first_of(",}", p);
  return json.substr(p, e - p);
}
double num(const std::string& json, const std::string& key) { return std::atof(field(json, key).c_str()); }

// Runs one case in a child process (this executable, --gpus/--algo); nothing on failure.
bool run_child(const std::string& self, long gpus, const std::string& algo, long long bytes,
               const std::string& cluster, CaseResult& out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  std::vector<std::string> args = {self, "--gpus", std::to_string(gpus), "--algo", algo,
                                   "--bytes", std::to_string(bytes), "--cluster", cluster};
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double wall = seconds_since(t0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  out.gpus = static_cast<long>(num(text, "gpus"));
  out.algo = field(text, "algo");
  out.chosen = field(text, "ran");
  out.candidates = static_cast<int>(num(text, "candidates"));
  out.simulated = static_cast<int>(num(text, "simulated"));
  out.load_s = num(text, "load_s");
  out.sim_s = num(text, "sim_s");
  out.total_s = num(text, "total_s");
  out.sim_time_s = num(text, "simulated_s");
  out.busbw_GBps = num(text, "busbw_GBps");
  out.flows = static_cast<unsigned long long>(num(text, "flows"));
  out.events = static_cast<unsigned long long>(num(text, "events"));
  out.rss_kib = static_cast<long>(num(text, "peak_rss_mib") * 1024.0);
  out.proc_s = wall;
  out.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  out.proc_rss_kib = ru.ru_maxrss;
  return true;
}

int run_all(long max_gpus, int repeat, long long bytes, const std::string& cluster_arg) {
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    std::fprintf(stderr, "bench_collective: cannot find its own executable\n");
    return 1;
  }
  const std::string rail = find_cluster(cluster_arg);
  const std::string three_tier = find_cluster(cluster_arg, kThreeTierRel);
  struct Case {
    long gpus;
    const char* algo;
  };
  // Ring and hierarchical at every doubling; tree and auto (the issue 11 curves) at 4k, 16k,
  // 32k, 65k and 131k GPUs.
  std::vector<Case> cases;
  for (long g : {4096L, 8192L, 16384L, 32768L, 65536L, 131072L}) {
    if (g > max_gpus) continue;
    cases.push_back({g, "ring"});
    cases.push_back({g, "hierarchical"});
    if (g == 8192) continue;
    cases.push_back({g, "tree"});
    cases.push_back({g, "auto"});
  }

  std::vector<CaseResult> results;
  int status = 0;
  for (const Case& c : cases) {
    CaseResult best;
    bool any = false;
    long rss_max = 0;
    for (int i = 0; i < repeat; ++i) {
      CaseResult r;
      const std::string& cluster = c.gpus >= kThreeTierFrom ? three_tier : rail;
      if (!run_child(self, c.gpus, c.algo, bytes, cluster, r)) {
        std::fprintf(stderr, "bench_collective: case %ld %s failed\n", c.gpus, c.algo);
        status = 1;
        break;
      }
      rss_max = std::max(rss_max, r.proc_rss_kib);
      if (!any || r.proc_s < best.proc_s) best = r;
      any = true;
      if (r.proc_s > kSlowCase_s) break;  // slow enough that noise does not matter
    }
    if (!any) continue;
    best.proc_rss_kib = rss_max;
    results.push_back(best);
  }

  std::printf("collective: all_reduce %lld bytes over all GPUs of h100-rail-512 (from %ld GPUs: "
              "h100-fat-tree-3tier; + --set /servers/0/count), max-min flow model; best of %d "
              "processes per case (1 if > 10 s)\n",
              bytes, kThreeTierFrom, repeat);
  std::printf("%6s %-13s %-19s %4s %4s %8s %8s %8s %8s %8s %8s %11s %9s %9s %10s\n", "gpus", "algo",
              "ran", "cand", "sim", "load_s", "sim_s", "total_s", "proc_s", "cpu_s", "rss_MiB", "simulated",
              "busbw", "flows", "events");
  for (const CaseResult& r : results) {
    std::printf("%6ld %-13s %-19s %4d %4d %8.3f %8.3f %8.3f %8.3f %8.3f %8.1f %9.3fms %7.2fGB/s %9llu %10llu\n",
                r.gpus, r.algo.c_str(), r.chosen.c_str(), r.candidates, r.simulated, r.load_s, r.sim_s,
                r.total_s, r.proc_s, r.cpu_s, static_cast<double>(r.proc_rss_kib) / 1024.0, r.sim_time_s * 1e3,
                r.busbw_GBps, r.flows, r.events);
  }
  for (const CaseResult& r : results) std::printf("%s\n", to_json(r, bytes).c_str());
  return status;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_collective [--max-gpus N] [--repeat R] [--bytes B] [--cluster PATH]\n"
               "       bench_collective --gpus N --algo ALGO [--protocol simple|ll] [--bytes B] [--cluster PATH]\n"
               "                        [--op OP] [--routing ecmp|adaptive] [--fold on|off] [--rounds closed|flows]\n"
               "         ALGO: ring, tree, hd, direct, hierarchical, nvls, nvls_tree, collnet (run_fixed) or auto (run)\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  long gpus = 0, max_gpus = 131072;
  int repeat = 3;
  long long bytes = 1LL << 30;
  std::string algo, cluster, protocol = "simple";
  CaseOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--gpus") gpus = std::atol(v);
    else if (a == "--algo") algo = v;
    else if (a == "--protocol") protocol = v;
    else if (a == "--bytes") bytes = std::atoll(v);
    else if (a == "--cluster") cluster = v;
    else if (a == "--max-gpus") max_gpus = std::atol(v);
    else if (a == "--repeat") repeat = std::atoi(v);
    else if (a == "--op") options.op = v;
    else if (a == "--routing") options.routing = v;
    else if (a == "--fold" && (std::strcmp(v, "on") == 0 || std::strcmp(v, "off") == 0)) options.fold = std::strcmp(v, "on") == 0;
    else if (a == "--rounds" && (std::strcmp(v, "closed") == 0 || std::strcmp(v, "flows") == 0)) options.closed_rounds = std::strcmp(v, "closed") == 0;
    else usage();
  }
  if (bytes <= 0 || repeat < 1) usage();
  try {
    if (gpus != 0 || !algo.empty()) {
      if (gpus == 0 || algo.empty()) usage();
      return run_case(gpus, algo, protocol, bytes, cluster, options);
    }
    return run_all(max_gpus, repeat, bytes, cluster);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_collective: %s\n", e.what());
    return 1;
  }
}
