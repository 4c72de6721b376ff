// Small machines built in code for closed-form tests: uniform links, explicit link-class
// protocol parameters, no launch latency, so every expected time can be written down by hand.
#pragma once

#include <string>

#include "sim/collectives/machine.h"
#include "topology/cluster.h"
#include "topology/cluster_builder.h"

namespace cs::testing {

struct Uniform {
  Bandwidth bandwidth = gigabytes_per_second(100);
  Duration latency = nanoseconds(500);
  Duration step = microseconds(2);     // Simple step latency of the class
  Duration ll_step = nanoseconds(700); // LL step latency
  Duration nvls_step = microseconds(3);  // NVLS step latency (one pass through the switch)
};

// Protocol parameters of a class: efficiency 1, the given step latencies.
inline void set_class(coll::ProtocolParams& p, hw::LinkClass cls, const Uniform& u) {
  p.of(cls) = {1.0, u.step, u.ll_step};
}

// No launch latency (nor NVLS base latency); LL puts twice the bytes on the wire; every class at
// efficiency 1 with the given step latencies; NVLS steps take `nvls_step`.
inline coll::ProtocolParams uniform_protocol(const Uniform& u) {
  coll::ProtocolParams p;
  for (int i = 0; i < hw::kLinkClassCount; ++i) set_class(p, static_cast<hw::LinkClass>(i), u);
  p.launch_latency = Duration{0};
  p.ll_wire_factor = 2.0;
  p.nvls_base_latency = Duration{0};
  p.nvls_step_latency = u.nvls_step;
  return p;
}

inline topo::NodeId add_gpu(topo::ClusterBuilder& c, const std::string& name, int server, int local) {
  topo::NodeInfo n;
  n.name = name;
  n.kind = topo::NodeKind::kGpu;
  n.server = server;
  n.local = local;
  return c.add_node(n);
}

inline topo::NodeId add_switch(topo::ClusterBuilder& c, const std::string& name, topo::NodeKind kind,
                               int server = -1) {
  topo::NodeInfo n;
  n.name = name;
  n.kind = kind;
  n.server = server;
  return c.add_node(n);
}

// n single-GPU servers, GPU i cabled to GPU i+1 (mod n).
inline coll::Machine uniform_ring(int n, const Uniform& u) {
  topo::ClusterBuilder c("ring");
  for (int i = 0; i < n; ++i) add_gpu(c, "gpu" + std::to_string(i), i, 0);
  for (int i = 0; i < n; ++i) {
    c.add_cable(topo::NodeId{static_cast<std::uint32_t>(i)}, topo::NodeId{static_cast<std::uint32_t>((i + 1) % n)},
                u.bandwidth, u.latency, hw::LinkClass::kNetwork, 1);
  }
  return coll::Machine{std::move(c).build(), uniform_protocol(u), {}};
}

// n single-GPU servers behind one switch. With `reduction` > 0 the switch is an NVSwitch that
// reduces in-switch at `reduction` per GPU, and all GPUs are in server 0. With `gpu`, every GPU
// has that catalog entry.
inline coll::Machine uniform_star(int n, const Uniform& u, Bandwidth reduction = Bandwidth{0},
                                  const hw::GpuSpec* gpu = nullptr) {
  topo::ClusterBuilder c("star");
  const bool nvls = reduction.value() > 0;
  const auto cls = nvls ? hw::LinkClass::kNvlink : hw::LinkClass::kNetwork;
  for (int i = 0; i < n; ++i) {
    const topo::NodeId g = add_gpu(c, "gpu" + std::to_string(i), nvls ? 0 : i, nvls ? i : 0);
    if (gpu) c.set_gpu_spec(g, *gpu);
  }
  topo::NodeInfo sw;
  sw.name = "switch";
  sw.kind = nvls ? topo::NodeKind::kNvSwitch : topo::NodeKind::kLeafSwitch;
  sw.server = nvls ? 0 : -1;
  sw.reduction_bandwidth = Bandwidth{reduction.value() * n};
  const topo::NodeId s = c.add_node(sw);
  for (int i = 0; i < n; ++i) {
    c.add_cable(topo::NodeId{static_cast<std::uint32_t>(i)}, s, u.bandwidth, u.latency, cls, nvls ? 0 : 1);
  }
  return coll::Machine{std::move(c).build(), uniform_protocol(u), {}};
}

// A GPU with round numbers for compute tests: 100 TFLOP/s bf16 at GEMM efficiency 0.5
// (50 TFLOP/s achieved), 1 TB/s HBM at efficiency 1, no launch overhead. Its GEMM shape model
// has no quantization (one SM of 1 x 1 tiles: eta = 1 for every shape) and a MAMF equal to the
// peak, so a GEMM runs at peak x efficiency whatever its shape.
inline hw::GpuSpec round_gpu() {
  hw::GpuSpec g;
  g.name = "TestGPU";
  g.peak["bf16"] = teraflops_per_second(100);
  g.hbm_capacity = gibibytes(80);
  g.hbm_bandwidth = bytes_per_second(1e12);
  g.roofline = {0.5, 0.5, 1.0, Duration{0}};
  g.gemm.sms = 1;
  g.gemm.tile = {1, 1};
  g.gemm.mamf["bf16"] = g.peak["bf16"];
  return g;
}

// n GPUs (round ones by default) behind one switch with a 5 us collective launch; with
// `free_comm`, transfers take (next to) no time: zero latencies, steps and launch, 10^18 B/s links.
inline coll::Machine compute_star(int n, bool free_comm, const hw::GpuSpec& gpu = round_gpu()) {
  Uniform u;
  if (free_comm) {
    u.latency = u.step = u.ll_step = u.nvls_step = Duration{0};
    u.bandwidth = bytes_per_second(1e18);
  }
  coll::Machine m = uniform_star(n, u, Bandwidth{0}, &gpu);
  m.protocol.launch_latency = free_comm ? Duration{0} : microseconds(5);
  return m;
}

}  // namespace cs::testing
