// The run: find the GPUs, take the inventory, warm up, measure the sections in order, save the
// profile after each (docs/calibration.md).
#include "calibration/probe/probe.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <nlohmann/json.hpp>

#include "calibration/probe/context.h"
#include "calibration/probe/inventory.h"
#include "calibration/probe/nccl_log.h"
#include "calibration/probe/nvml.h"
#include "calibration/probe/plan.h"
#include "calibration/probe/process_group.h"
#include "calibration/probe/table.h"
#include "core/errors.h"

namespace cs::probe {

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  if (g_interrupted.exchange(true)) {
    // A second Ctrl-C: stop now.
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

// Installs the SIGINT handler for the run and restores the previous one.
class SigintGuard {
 public:
  SigintGuard() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~SigintGuard() { sigaction(SIGINT, &previous_, nullptr); }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  struct sigaction previous_ {};
};


std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Asks NCCL to log its tuning choices to a file (only where the user has not set NCCL_DEBUG,
// NCCL_DEBUG_SUBSYS or NCCL_DEBUG_FILE otherwise). Must run before the first NCCL call: NCCL reads
// these once per process.
class NcclLogCapture {
 public:
  explicit NcclLogCapture(ProbeContext& ctx) {
    const char* level = std::getenv("NCCL_DEBUG");
    const char* subsys = std::getenv("NCCL_DEBUG_SUBSYS");
    const char* file = std::getenv("NCCL_DEBUG_FILE");
    if (level != nullptr && upper(level) != "INFO" && upper(level) != "TRACE") {
      ctx.note(std::string("NCCL_DEBUG=") + level + " set by the user: NCCL's choices not captured");
      return;
    }
    if (subsys != nullptr) {
      const std::string s = upper(subsys);
      if (s.empty() || s[0] == '^' || (s.find("TUNING") == std::string::npos && s.find("ALL") == std::string::npos)) {
        ctx.note(std::string("NCCL_DEBUG_SUBSYS=") + subsys + " set by the user: NCCL's choices not captured");
        return;
      }
    }
    if (level == nullptr) setenv("NCCL_DEBUG", "INFO", 1);
    if (subsys == nullptr) setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
    if (file == nullptr) {
      std::error_code ec;
      const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
      path_ = ((ec ? std::filesystem::path("/tmp") : dir) /
               ("clustersim-calibrate-nccl-" + std::to_string(::getpid()) + ".log"))
                  .string();
      setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
      owned_ = true;
    } else {
      path_ = expand_nccl_debug_file(file, host_name(), static_cast<long>(::getpid()));
    }
    ctx.set_nccl_log(path_);
  }
  ~NcclLogCapture() {
    if (owned_) std::remove(path_.c_str());
  }
  NcclLogCapture(const NcclLogCapture&) = delete;
  NcclLogCapture& operator=(const NcclLogCapture&) = delete;

 private:
  std::string path_;
  bool owned_ = false;
};

bool wants(const std::vector<std::string>& sections, const char* name) {
  return std::find(sections.begin(), sections.end(), name) != sections.end();
}

// MPI: every process's GPU, gathered at rank 0 into one inventory (GPU i is rank i; nodes by host
// name in order of first appearance).
void gather_inventory(ProbeContext& ctx, const cal::Inventory& mine) {
  ProcessGroup& pg = ctx.processes();
  const cal::GpuInventory& g = mine.gpus.front();
  const nlohmann::json j = {{"host", host_name()},          {"name", g.name},
                            {"uuid", g.uuid},               {"sm_count", g.sm_count},
                            {"cc", g.compute_capability},   {"memory", g.memory.value()},
                            {"l2", g.l2.value()},           {"sm_clock", g.sm_clock_mhz},
                            {"mem_clock", g.memory_clock_mhz}, {"power", g.power_limit_w},
                            {"catalog", g.catalog_gpu}};
  const std::vector<std::string> all = pg.gather(j.dump());
  std::vector<int> node_of_rank(static_cast<std::size_t>(pg.size()), 0);
  if (pg.rank() == 0) {
    cal::Inventory inv = mine;
    inv.gpus.clear();
    std::map<std::string, int> nodes;
    std::vector<std::string> order;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const nlohmann::json e = nlohmann::json::parse(all[r]);
      const std::string host = e.at("host").get<std::string>();
      if (nodes.count(host) == 0) {
        const int id = static_cast<int>(nodes.size());
        nodes[host] = id;
      }
      cal::GpuInventory x;
      x.index = static_cast<int>(r);
      x.node = nodes[host];
      x.name = e.at("name").get<std::string>();
      x.uuid = e.at("uuid").get<std::string>();
      x.sm_count = e.at("sm_count").get<int>();
      x.compute_capability = e.at("cc").get<std::string>();
      x.memory = Bytes{e.at("memory").get<std::int64_t>()};
      x.l2 = Bytes{e.at("l2").get<std::int64_t>()};
      x.sm_clock_mhz = e.at("sm_clock").get<int>();
      x.memory_clock_mhz = e.at("mem_clock").get<int>();
      x.power_limit_w = e.at("power").get<double>();
      x.catalog_gpu = e.at("catalog").get<std::string>();
      node_of_rank[r] = x.node;
      inv.gpus.push_back(std::move(x));
    }
    const std::size_t n = inv.gpus.size();
    inv.nodes = static_cast<int>(nodes.size());
    inv.peer_access.assign(n, std::vector<bool>(n, false));
    inv.nvlink.assign(n, std::vector<int>(n, 0));
    ctx.profile().inventory = std::move(inv);
    ctx.note("MPI: peer access and NVLink between the processes' GPUs are not recorded");
  }
  pg.broadcast(node_of_rank.data(), node_of_rank.size() * sizeof(int));
  ctx.set_rank_nodes(std::move(node_of_rank));
}

void print_inventory(ProbeContext& ctx) {
  const cal::Inventory& inv = ctx.profile().inventory;
  std::ostream& o = ctx.out();
  o << "# clustersim-calibrate 0.1.0 on " << ctx.profile().provenance.host << (ctx.quick() ? " (--quick)" : "") << "\n"
    << "# driver " << inv.driver_version << ", CUDA runtime " << inv.cuda_runtime_version << ", cuBLASLt "
    << inv.cublas_version << ", NCCL " << (inv.nccl_version.empty() ? "?" : inv.nccl_version) << "\n";
  for (const cal::GpuInventory& g : inv.gpus) {
    o << "# GPU " << g.index << ": " << g.name << " (" << (g.catalog_gpu.empty() ? "not in the catalog" : g.catalog_gpu)
      << "), " << g.sm_count << " SMs, sm_" << g.compute_capability << ", " << format_bytes(g.memory) << ", L2 "
      << format_bytes(g.l2) << ", SM clock " << g.sm_clock_mhz << " MHz, memory clock " << g.memory_clock_mhz
      << " MHz, power limit " << g.power_limit_w << " W\n";
  }
  for (std::size_t i = 0; i < inv.nvlink.size(); ++i) {
    o << "# links from GPU " << i << ":";
    for (std::size_t j = 0; j < inv.nvlink[i].size(); ++j) {
      if (i == j) continue;
      o << " " << j << (inv.nvlink[i][j] > 0 ? "=NV" + std::to_string(inv.nvlink[i][j]) : "=PCIe")
        << (inv.peer_access[i][j] ? "" : "(no P2P)");
    }
    o << "\n";
  }
  if (!Nvml::instance().available()) {
    o << "# NVML unavailable (" << Nvml::instance().unavailable_reason()
      << "): no throttle detection, no power limit, no NVLink counts\n";
  }
  o << std::flush;
}

}  // namespace

std::string probe_build_info() {
  std::string s = "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10) +
                  ", cuBLASLt " + cublas_version_string(CUBLAS_VERSION) + ", NCCL " +
                  std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
  if (mpi_available()) s += ", MPI";
  return s;
}

bool probe_has_mpi() { return mpi_available(); }

int run_probe(const ProbeOptions& options) {
  SigintGuard sigint;
  ProbeContext ctx(options, std::cout, std::cerr, &g_interrupted);
  if (options.mpi) ctx.set_processes(mpi_world(nullptr, nullptr));
  ProcessGroup& pg = ctx.processes();

  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cerr << "clustersim-calibrate: no CUDA GPU found ("
              << (e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) : "0 devices") << ")\n";
    return 2;
  }
  if (options.gpus > count) {
    std::cerr << "clustersim-calibrate: command-line error: --gpus " << options.gpus << " but " << count
              << " CUDA GPU" << (count == 1 ? " is" : "s are") << " visible\n";
    return 2;
  }
  const std::vector<std::string> sections = options.sections.empty() ? all_sections() : options.sections;

  cal::Profile& p = ctx.profile();
  p.provenance.kind = "measured";
  p.provenance.tool = "clustersim-calibrate 0.1.0";
  p.provenance.command = options.command;
  p.provenance.created = cal::utc_timestamp();
  p.provenance.host = host_name();
  p.provenance.complete = true;

  // NCCL reads its debug settings at its first call: set them before anything touches NCCL.
  const std::map<std::string, std::string> user_env = nccl_environment();
  std::unique_ptr<NcclLogCapture> capture;
  if (wants(sections, "collectives") || wants(sections, "overlap")) capture = std::make_unique<NcclLogCapture>(ctx);

  const bool distributed = pg.distributed();
  const int local = distributed ? pg.local_rank() % count : 0;
  const int used = distributed ? 1 : (options.gpus > 0 ? options.gpus : count);
  try {
    std::vector<DeviceInfo> all = describe_devices(count);
    if (distributed) {
      ctx.devices() = {all[static_cast<std::size_t>(local)]};
    } else {
      all.resize(static_cast<std::size_t>(used));
      ctx.devices() = std::move(all);
    }
    const cal::Inventory inv = collect_inventory(ctx.devices(), user_env);
    ctx.link_class() = link_classes(ctx.devices(), inv);
    p.inventory = inv;
    if (distributed) gather_inventory(ctx, inv);
  } catch (const ProbeError& err) {
    std::cerr << "clustersim-calibrate: the GPUs could not be described: " << err.what() << "\n";
    return 1;
  }

  p.settings.quick = options.quick;
  p.settings.min_samples = 10;
  p.settings.target_spread = 0.005;
  p.settings.time_limit = duration_from_seconds(options.time_limit_s > 0 ? options.time_limit_s : (options.quick ? 1.0 : 5.0));
  p.settings.l2_flush = Bytes{static_cast<std::int64_t>(std::max<std::size_t>(2 * ctx.device(0).l2_bytes, 256u << 20))};
  p.settings.warmup = duration_from_seconds(options.quick ? 3.0 : 30.0);
  if (!Nvml::instance().available()) {
    ctx.note("NVML unavailable (" + Nvml::instance().unavailable_reason() + "): no throttle detection");
  }
  if (distributed && (wants(sections, "links") || wants(sections, "overlap"))) {
    ctx.note("MPI: links and overlap are measured single-process only");
  }

  if (ctx.is_root()) print_inventory(ctx);
  ctx.save();  // a valid (empty) profile from the start; also checks that --out can be written

  try {
    // Warm every GPU that a section will time.
    const bool multi = !distributed && used > 1 &&
                       (wants(sections, "links") || wants(sections, "collectives") || wants(sections, "overlap"));
    std::vector<int> warm_devices = {ctx.device(0).cuda_device};
    if (multi) {
      warm_devices.clear();
      for (int d = 0; d < used; ++d) warm_devices.push_back(d);
    }
    run_warmup(ctx, warm_devices, to_seconds(p.settings.warmup));

    for (const std::string& s : sections) {
      if (s == "collectives") {
        run_collectives_section(ctx);
      } else if (distributed && !ctx.is_root()) {
        // Other sections are measured by rank 0 alone.
      } else if (s == "gemm") {
        run_gemm_section(ctx);
      } else if (s == "memory") {
        run_memory_section(ctx);
      } else if (s == "launch") {
        run_launch_section(ctx);
      } else if (s == "overlap") {
        if (!distributed) run_overlap_section(ctx);
      } else if (s == "links") {
        if (!distributed) run_links_section(ctx);
      }
      ctx.save();
      pg.barrier();
    }
  } catch (const Interrupted&) {
    ctx.mark_incomplete();
    ctx.note("interrupted (SIGINT)");
    ctx.save();
    if (ctx.is_root()) std::cerr << "clustersim-calibrate: interrupted; the points so far are in " << options.out << "\n";
    return 130;
  } catch (const ProbeError& err) {
    // A sticky CUDA error: the context is gone; keep what was measured.
    ctx.mark_incomplete();
    ctx.note(std::string("stopped by a fatal CUDA error: ") + err.what());
    ctx.save();
    std::cerr << "clustersim-calibrate: stopped by a fatal CUDA error: " << err.what() << "; the points so far are in "
              << options.out << "\n";
    return 1;
  }

  if (ctx.is_root()) {
    const std::size_t points = p.gemm.size() + p.memory.size() + p.launch.size() + p.overlap.size() + p.links.size() +
                               p.collectives.size();
    std::cerr << "clustersim-calibrate: wrote " << options.out << ": " << points << " points";
    if (ctx.failed_points() > 0) std::cerr << ", " << ctx.failed_points() << " failed (see \"error\" in the file)";
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace cs::probe
