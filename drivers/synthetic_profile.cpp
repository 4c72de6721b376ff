#include "drivers/synthetic_profile.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include "calibration/fit.h"
#include "calibration/nominal.h"
#include "core/errors.h"
#include "core/random.h"
#include "drivers/inventory_machine.h"
#include "hardware/catalog.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/compute/compute_model.h"

namespace cs::drv {
namespace {

constexpr std::uint64_t kSeed = 20261129;


// A "measured" timing around `t`: seeded multiplicative noise, uniform in +-noise, on the median
// (so the fits have something to do), p10/p90 half a percent either side, 10 samples.
cal::Timing timing(Duration t, Rng& rng, double noise) {
  const double u = static_cast<double>(rng.next() >> 11) / static_cast<double>(1ULL << 53);
  const double median = to_seconds(t) * (1 + 2 * noise * (u - 0.5));
  cal::Timing x;
  x.median = duration_from_seconds(median);
  x.p10 = duration_from_seconds(median * 0.995);
  x.p90 = duration_from_seconds(median * 1.005);
  x.min = duration_from_seconds(median * 0.99);
  x.samples = 10;
  return x;
}


}  // namespace

cal::Profile synthetic_profile(const std::string& gpu_name, int gpu_count, const std::string& command, const std::string& where,
                               double noise) {
  const hw::Catalog& catalog = hw::Catalog::builtin();
  const hw::GpuSpec& gpu = catalog.gpu(gpu_name, "", where);
  // The profile's GEMMs are bf16 (a measured profile's are too), so a GPU without a bf16 peak
  // (V100: fp16 only) cannot have one.
  if (!gpu.peak.count("bf16")) {
    throw ConfigError("", where, "GPU " + gpu.name + " has no bf16 peak in the hardware catalog, so it cannot have a synthetic profile (its GEMMs are bf16)");
  }
  const int n = gpu_count > 0 ? gpu_count : 8;
  const coll::Machine machine = inventory_machine(gpu.name, n, 1, "NDR-400G", "", where);
  const topo::Cluster& cluster = machine.cluster;
  Rng rng = Rng::derive(kSeed, std::hash<std::string>{}(gpu.name) & 0xffff);

  cal::Profile p;
  p.provenance.kind = "synthetic";
  p.provenance.tool = "clustersim 0.1.0";
  p.provenance.command = command;
  p.provenance.created = cal::utc_timestamp();
  p.provenance.host = "catalog";
  char percent[32];
  std::snprintf(percent, sizeof percent, "%g", 100 * noise);
  p.provenance.notes = "Generated from the hardware catalog (configs/hardware) by the simulator's own models, with +-" +
                       std::string(percent) + "% seeded noise: GEMMs by the GEMM shape model and memory-bound kernels by the catalog roofline (kernel time, without the launch overhead), "
                       "collectives and copies by the flow model on one " + gpu.name + " server (collectives also with ring, "
                       "tree and NVLS forced, as --algos measures). Not a measurement: it shows the format and exercises the "
                       "tools.";
  p.inventory.driver_version = p.inventory.cuda_runtime_version = p.inventory.cublas_version = p.inventory.nccl_version = "";
  p.inventory.nodes = 1;
  for (int i = 0; i < n; ++i) {
    cal::GpuInventory g;
    g.index = i;
    g.name = gpu.name + " (synthetic)";
    g.uuid = "GPU-synthetic-" + std::to_string(i);
    g.memory = gpu.hbm_capacity;
    g.catalog_gpu = gpu.name;
    g.power_limit_w = gpu.tdp_watts;
    p.inventory.gpus.push_back(g);
  }
  p.inventory.peer_access.assign(static_cast<std::size_t>(n), std::vector<bool>(static_cast<std::size_t>(n), true));
  const hw::NvlinkSpec* nv = gpu.nvlink.empty() ? nullptr : &catalog.nvlink(gpu.nvlink, "", where);
  p.inventory.nvlink.assign(static_cast<std::size_t>(n), std::vector<int>(static_cast<std::size_t>(n), 0));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && nv) p.inventory.nvlink[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = nv->links_per_gpu;
    }
    p.inventory.peer_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)] = false;
  }
  p.settings.quick = true;
  p.settings.min_samples = 10;

  // GEMMs: a log grid and the transformer shapes the workloads generate, timed by the catalog
  // compute model (the GEMM shape model, A, B read and C written once). The probe times a kernel alone, between events, and
  // the launch overhead apart; the compute model adds the launch overhead to a profile's kernel
  // times. So a kernel's synthetic time is the roofline's without its launch term.
  const compute::ComputeModel roofline("bf16");
  const auto kernel_time = [&](const hw::GpuSpec& g, tg::ComputeClass cls, Flops f, Bytes b,
                               std::span<const tg::GemmShape> shapes = {}) {
    return roofline.time(g, cls, f, b, shapes) - g.roofline.kernel_launch;
  };
  auto add_gemm = [&](std::int64_t m, std::int64_t nn, std::int64_t k, const char* source) {
    cal::GemmPoint g;
    g.shape = {"bf16", m, nn, k};
    g.source = source;
    const Bytes io{2 * (m * k + k * nn + m * nn)};
    const tg::GemmShape shape{m, nn, k};
    g.timing = timing(kernel_time(gpu, tg::ComputeClass::kGemm, g.shape.flops(), io, {&shape, 1}), rng, noise);
    p.gemm.push_back(g);
  };
  for (std::int64_t m = 256; m <= 65536; m *= 4)  // m: tokens of a micro-batch, up to 16 x 4096
    for (std::int64_t nn = 256; nn <= 16384; nn *= 4)
      for (std::int64_t k = 256; k <= 16384; k *= 4) add_gemm(m, nn, k, "grid");
  for (std::int64_t h : {4096, 8192}) {
    for (std::int64_t t : {1, 8}) {
      add_gemm(4096, 3 * h / t, h, "model-shape");
      add_gemm(4096, h, h / t, "model-shape");
      add_gemm(4096, 4 * h / t, h, "model-shape");
      add_gemm(4096, h, 4 * h / t, "model-shape");
    }
  }
  add_gemm(8192, 8192, 8192, "mamf");

  // Memory-bound kernels, launch overhead and the overlap slowdown.
  for (const char* kernel : {"copy", "elementwise", "reduction", "norm"}) {
    for (std::int64_t b = 4096; b <= (std::int64_t{4} << 30); b *= 4) {
      cal::MemoryPoint mp;
      mp.kernel = kernel;
      mp.bytes = Bytes{b};
      mp.timing = timing(kernel_time(gpu, tg::ComputeClass::kElementwise, Flops{0}, mp.bytes), rng, noise);
      p.memory.push_back(mp);
    }
  }
  cal::LaunchPoint lp;
  lp.timing = timing(gpu.roofline.kernel_launch, rng, noise);
  p.launch.push_back(lp);
  if (n >= 2) {
    cal::OverlapPoint op;
    op.gemm = {"bf16", 8192, 8192, 8192};
    op.collective_op = "all_reduce";
    op.collective_ranks = n;
    op.collective_bytes = Bytes{std::int64_t{1} << 30};
    const tg::GemmShape shape{op.gemm.m, op.gemm.n, op.gemm.k};
    op.alone = kernel_time(gpu, tg::ComputeClass::kGemm, op.gemm.flops(), Bytes{0}, {&shape, 1});
    op.beside = duration_from_seconds(to_seconds(op.alone) * gpu.roofline.overlap_slowdown);
    p.overlap.push_back(op);
  }

  // Copies and collectives on the flow model of one server.
  coll::CollectiveSimulator sim(machine);
  const auto& gpus = cluster.gpus();
  for (int dst = 1; dst < std::min(n, 2); ++dst) {
    for (std::int64_t b = 8; b <= (std::int64_t{1} << 30); b *= 16) {
      coll::CollectiveSpec spec;
      spec.op = CollectiveOp::kSendRecv;
      spec.size = Bytes{b};
      spec.ranks = {gpus[0], gpus[static_cast<std::size_t>(dst)]};
      cal::LinkPoint lk;
      lk.kind = "d2d";
      lk.src = 0;
      lk.dst = dst;
      lk.bytes = spec.size;
      lk.link_class = nv ? "nvlink" : "pcie";
      lk.timing = timing(sim.run(spec).time, rng, noise);
      p.links.push_back(lk);
    }
  }
  // Every collective with the algorithm left to the tuner, then, as `clustersim-calibrate --algos`
  // measures, again with each algorithm forced where NCCL implements it (tree: all_reduce; nvls:
  // all_reduce, all_gather, reduce_scatter; ring: all but the point-to-point ops) and the
  // simulator can run it (nvls: all_reduce in an NVLS server), the protocol left to the tuner.
  // The forced rings give the network fit (calibration/fit.h) ring all-reduce Simple points at
  // every rank count also where NVLS wins the large sizes.
  static constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                                      CollectiveOp::kAllToAll, CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};
  const auto add_points = [&](CollectiveOp op, CollectiveAlgorithm algorithm) {
    for (int ranks = 2; ranks <= n; ranks *= 2) {
      if (op == CollectiveOp::kSendRecv && ranks != 2) continue;
      for (std::int64_t b = 8; b <= (std::int64_t{1} << 30); b *= 4) {
        coll::CollectiveSpec spec;
        spec.op = op;
        spec.size = Bytes{b};
        spec.ranks.assign(gpus.begin(), gpus.begin() + ranks);
        spec.algorithm = algorithm;
        if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllToAll) {
          if (b % ranks != 0) continue;
        }
        if (algorithm != CollectiveAlgorithm::kAuto && !sim.run_fixed(spec, algorithm, coll::Protocol::kSimple, nullptr)) return;
        const coll::CollectiveResult r = sim.run(spec);
        cal::CollectivePoint cp;
        cp.op = to_string(op);
        cp.ranks = ranks;
        cp.bytes = spec.size;
        cp.link_class = nv ? "nvlink" : "pcie";
        cp.algorithm = to_string(algorithm);
        cp.nccl_choice = {to_string(r.algorithm), coll::to_string(r.protocol), 0};
        cp.timing = timing(r.time, rng, noise);
        p.collectives.push_back(cp);
      }
    }
  };
  for (CollectiveOp op : kOps) add_points(op, CollectiveAlgorithm::kAuto);
  for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree, CollectiveAlgorithm::kNvls}) {
    for (CollectiveOp op : kOps) {
      const bool point_to_point = op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv;
      const bool nccl_has = algorithm == CollectiveAlgorithm::kRing   ? !point_to_point
                            : algorithm == CollectiveAlgorithm::kTree ? op == CollectiveOp::kAllReduce
                                                                      : op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
                                                                            op == CollectiveOp::kReduceScatter;
      if (nccl_has) add_points(op, algorithm);
    }
  }

  p.models = cal::fit_models(p, cal::nominal_from_catalog(p.inventory));
  return p;
}

}  // namespace cs::drv
