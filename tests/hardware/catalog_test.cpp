// The built-in hardware catalog and the catalog reader's errors.
#include "hardware/catalog.h"

#include <cstdio>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::hw {
namespace {

TEST(BuiltinCatalog, EmbedsEveryHardwareFile) {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_catalog_documents()) {
    names.push_back(name);
    EXPECT_FALSE(text.empty()) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"configs/hardware/gpus.json",
                                             "configs/hardware/link-classes.json",
                                             "configs/hardware/nics.json",
                                             "configs/hardware/nvlink.json",
                                             "configs/hardware/switches.json"}));
}

TEST(BuiltinCatalog, EveryGpuHasA16BitPeakAndHbm) {
  const Catalog& c = Catalog::builtin();
  for (const char* name : {"A100-SXM-80GB", "A100-SXM-40GB", "V100-SXM2-32GB", "H100-SXM", "H100-PCIe", "H800-SXM",
                           "H20", "H200-SXM", "B200", "GB200", "MI300X"}) {
    EXPECT_TRUE(c.gpus().count(name)) << name;
  }
  EXPECT_EQ(c.gpus().size(), 11u);
  std::vector<std::string> without_nvlink;
  for (const auto& [name, gpu] : c.gpus()) {
    // bf16, or fp16 alone on a GPU without BF16 (V100).
    const std::string sixteen = gpu.peak.count("bf16") ? "bf16" : "fp16";
    ASSERT_TRUE(gpu.peak.count(sixteen)) << name;
    EXPECT_GT(gpu.peak.at(sixteen).value(), 0) << name;
    EXPECT_GT(gpu.hbm_capacity.value(), 0) << name;
    EXPECT_GT(gpu.hbm_bandwidth.value(), 0) << name;
    EXPECT_GT(gpu.pcie_bandwidth.value(), 0) << name;
    EXPECT_GT(gpu.tdp_watts, 0) << name;
    if (gpu.nvlink.empty()) {
      without_nvlink.push_back(name);
    } else {
      EXPECT_TRUE(c.nvlinks().count(gpu.nvlink)) << name;
    }
  }
  // H100 PCIe's 2-card NVLink bridge and MI300X's Infinity Fabric mesh are no NVSwitch generation.
  EXPECT_EQ(without_nvlink, (std::vector<std::string>{"H100-PCIe", "MI300X"}));
}

TEST(BuiltinCatalog, BreadthGpusDatasheetValues) {
  // Issue 10's GPUs: a few numbers per entry from the sources their entries cite.
  const Catalog& c = Catalog::builtin();
  const GpuSpec& v100 = c.gpu("V100-SXM2-32GB", "test", "/");
  EXPECT_DOUBLE_EQ(v100.peak.at("fp16").value(), 125e12);  // FP16 tensor core
  EXPECT_FALSE(v100.peak.count("bf16"));                   // Volta has no BF16 (compute capability 7.0)
  EXPECT_FALSE(v100.peak.count("tf32"));
  EXPECT_EQ(v100.hbm_capacity, bytes(32'000'000'000));
  EXPECT_DOUBLE_EQ(v100.hbm_bandwidth.value(), 900e9);
  EXPECT_DOUBLE_EQ(v100.pcie_bandwidth.value(), 16e9);  // Gen3 x16
  EXPECT_EQ(v100.nvlink, "NVLink2");
  EXPECT_DOUBLE_EQ(v100.tdp_watts, 300);

  const GpuSpec& a100_40 = c.gpu("A100-SXM-40GB", "test", "/");
  EXPECT_DOUBLE_EQ(a100_40.peak.at("bf16").value(), 312e12);
  EXPECT_EQ(a100_40.hbm_capacity, bytes(40'000'000'000));
  EXPECT_DOUBLE_EQ(a100_40.hbm_bandwidth.value(), 1555e9);
  EXPECT_EQ(a100_40.nvlink, "NVLink3");

  const GpuSpec& h100_pcie = c.gpu("H100-PCIe", "test", "/");
  EXPECT_DOUBLE_EQ(h100_pcie.peak.at("bf16").value(), 756e12);  // datasheet 1,513* sparse
  EXPECT_DOUBLE_EQ(h100_pcie.hbm_bandwidth.value(), 2000e9);
  EXPECT_DOUBLE_EQ(h100_pcie.tdp_watts, 350);
  EXPECT_EQ(h100_pcie.nvlink, "");

  const GpuSpec& h800 = c.gpu("H800-SXM", "test", "/");
  EXPECT_DOUBLE_EQ(h800.peak.at("bf16").value(), 989.4e12);  // the H100 SXM die
  EXPECT_DOUBLE_EQ(h800.peak.at("fp64").value(), 1e12);      // the export cut
  EXPECT_EQ(h800.nvlink, "NVLink4-H800");

  const GpuSpec& h20 = c.gpu("H20", "test", "/");
  EXPECT_DOUBLE_EQ(h20.peak.at("fp16").value(), 148e12);
  EXPECT_EQ(h20.hbm_capacity, bytes(96'000'000'000));
  EXPECT_DOUBLE_EQ(h20.hbm_bandwidth.value(), 4000e9);
  EXPECT_EQ(h20.nvlink, "NVLink4");
  EXPECT_DOUBLE_EQ(h20.tdp_watts, 400);

  const GpuSpec& gb200 = c.gpu("GB200", "test", "/");
  EXPECT_DOUBLE_EQ(gb200.peak.at("bf16").value(), 2500e12);
  EXPECT_DOUBLE_EQ(gb200.peak.at("fp4").value(), 10000e12);
  EXPECT_EQ(gb200.hbm_capacity, bytes(186'000'000'000));
  EXPECT_EQ(gb200.nvlink, "NVLink5");  // NVL72: the same 1.8 TB/s bidirectional per GPU
  EXPECT_DOUBLE_EQ(gb200.tdp_watts, 1200);

  const GpuSpec& mi300x = c.gpu("MI300X", "test", "/");
  EXPECT_DOUBLE_EQ(mi300x.peak.at("bf16").value(), 1307.4e12);
  EXPECT_FALSE(mi300x.peak.count("fp64"));  // no reliable source
  EXPECT_EQ(mi300x.hbm_capacity, bytes(192'000'000'000));
  EXPECT_DOUBLE_EQ(mi300x.hbm_bandwidth.value(), 5.3e12);
  EXPECT_DOUBLE_EQ(mi300x.tdp_watts, 750);
  EXPECT_EQ(mi300x.nvlink, "");  // Infinity Fabric full mesh: not an NVSwitch generation

  // No new GPU copies another's efficiency silently: its roofline fractions are assumed (listed
  // among a run's assumptions), and the gemm fraction says it is the A100's.
  for (const char* name : {"V100-SXM2-32GB", "A100-SXM-40GB", "H100-PCIe", "H800-SXM", "H20", "GB200", "MI300X"}) {
    for (const char* key : {"gemm", "attention", "memory"}) {
      const SourcedFact* f = c.fact(std::string("/gpus/") + name + "/efficiency/" + key);
      ASSERT_NE(f, nullptr) << name << " " << key;
      EXPECT_EQ(f->kind, "assumed") << name << " " << key;
    }
    const SourcedFact* gemm = c.fact(std::string("/gpus/") + name + "/efficiency/gemm");
    EXPECT_NE(gemm->status.find("equal to the A100"), std::string::npos) << name;
  }
  // Where a maximum achievable matmul rate is published, the gemm note gives it.
  EXPECT_NE(c.fact("/gpus/MI300X/efficiency/gemm")->status.find("668"), std::string::npos);
  EXPECT_NE(c.fact("/gpus/A100-SXM-40GB/efficiency/gemm")->status.find("271.2"), std::string::npos);
}

TEST(BuiltinCatalog, H100Values) {
  // Dense peaks are half the datasheet's sparse figures: 1,979 / 2 = 989.4 TFLOP/s bf16.
  const GpuSpec& h100 = Catalog::builtin().gpu("H100-SXM", "test", "/");
  EXPECT_DOUBLE_EQ(h100.peak.at("bf16").value(), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak.at("fp8").value(), 1978.9e12);
  EXPECT_EQ(h100.hbm_capacity, bytes(80'000'000'000));  // vendor GB = 10^9 B
  EXPECT_DOUBLE_EQ(h100.hbm_bandwidth.value(), 3350e9);
  EXPECT_DOUBLE_EQ(h100.pcie_bandwidth.value(), 64e9);  // Gen5 x16, per direction
  EXPECT_EQ(h100.nvlink, "NVLink4");
  EXPECT_DOUBLE_EQ(h100.tdp_watts, 700);
  // Ampere has no FP8.
  EXPECT_FALSE(Catalog::builtin().gpu("A100-SXM-80GB", "test", "/").peak.count("fp8"));
}

TEST(BuiltinCatalog, NvlinkGenerations) {
  const Catalog& c = Catalog::builtin();
  const NvlinkSpec& nv3 = c.nvlink("NVLink3", "test", "/");
  EXPECT_DOUBLE_EQ(nv3.per_gpu_bandwidth.value(), 300e9);
  EXPECT_EQ(nv3.links_per_gpu, 12);
  EXPECT_EQ(nv3.switch_reduction_per_gpu.value(), 0);  // NVSwitch gen 2: no NVLS
  const NvlinkSpec& nv4 = c.nvlink("NVLink4", "test", "/");
  EXPECT_DOUBLE_EQ(nv4.per_gpu_bandwidth.value(), 450e9);
  EXPECT_EQ(nv4.links_per_gpu, 18);
  // NVLS all-reduce on 8 H100, algbw 275 GB/s (nccl-tests #212): in the model each GPU's switch
  // port reduces S bytes at r (the NVLinks, 8/9 x 360 GB/s, are not the bound), so
  // S / algbw = S / r plus the latency and the pipeline's fill (0.4% at 8 GiB): r = 276 GB/s is
  // what `validate nccl --refit` finds on that record.
  EXPECT_DOUBLE_EQ(nv4.switch_reduction_per_gpu.value(), 276e9);
  const NvlinkSpec& nv5 = c.nvlink("NVLink5", "test", "/");
  EXPECT_DOUBLE_EQ(nv5.per_gpu_bandwidth.value(), 900e9);
  EXPECT_DOUBLE_EQ(nv5.switch_reduction_per_gpu.value(), 2 * 276e9);  // assumed 2x NVLink4
  // V100: 6 links, 300 GB/s bidirectional; NVSwitch gen 1 cannot reduce.
  const NvlinkSpec& nv2 = c.nvlink("NVLink2", "test", "/");
  EXPECT_DOUBLE_EQ(nv2.per_gpu_bandwidth.value(), 150e9);
  EXPECT_EQ(nv2.links_per_gpu, 6);
  EXPECT_EQ(nv2.switch_reduction_per_gpu.value(), 0);
  // H800: NVLink 4 cut to 8 links, 400 GB/s bidirectional; NVLS assumed NVLink4's x 200/450.
  const NvlinkSpec& h800 = c.nvlink("NVLink4-H800", "test", "/");
  EXPECT_DOUBLE_EQ(h800.per_gpu_bandwidth.value(), 200e9);
  EXPECT_EQ(h800.links_per_gpu, 8);
  EXPECT_NEAR(h800.switch_reduction_per_gpu.value(), 276e9 * 200 / 450, 0.1e9);
  EXPECT_EQ(c.fact("/nvlink/NVLink4-H800/switch_reduction_per_gpu")->kind, "assumed");
}

TEST(BuiltinCatalog, Nics) {
  const Catalog& c = Catalog::builtin();
  const std::pair<const char*, double> rates[] = {
      {"HDR-200G", 200e9}, {"NDR-400G", 400e9}, {"400GbE", 400e9}, {"XDR-800G", 800e9},
      {"800GbE", 800e9},   {"100GbE", 100e9},   {"25GbE", 25e9},   {"10GbE", 10e9},
      {"EDR-100G", 100e9}, {"OPA-100", 100e9},  {"200GbE", 200e9}};
  for (const auto& [name, bits] : rates) {
    const NicSpec& nic = c.nic(name, "test", "/");
    EXPECT_DOUBLE_EQ(nic.bandwidth.value(), bits / 8) << name;  // bytes per second
    EXPECT_GT(nic.latency.count(), 0) << name;
  }
}

TEST(BuiltinCatalog, EachNicsRateAndPacketEfficiencyFollowFromItsStandard) {
  // The data rate: lanes x signalling x coding (docs/network-model.md, "Per-NIC achievable
  // bandwidth"). 64b/66b for EDR, 25GbE, 10GbE, 100GBASE-R; RS(544,514) FEC with 256b/257b
  // transcoding for the 50G/100G/200G PAM4 lanes of HDR, NDR, XDR and 200/400/800GbE; Omni-Path's
  // link transfer packets carry 1024 data bits in 1056.
  const double ethernet_64_66 = 64.0 / 66;
  const double pam4 = 514.0 / 544 * 256 / 257;
  struct Row {
    const char* nic;
    int lanes;
    double lane_gbps;  // signalling
    double coding;
    double payload, overhead;  // bytes per packet
  };
  // InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes on a 4096-byte MTU. RoCEv2: preamble
  // and SFD 8 + Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + inter-packet gap 12 = 82.
  // TCP at a 1500-byte MTU: 1500 - 20 (IPv4) - 32 (TCP with timestamps) = 1448 bytes of payload,
  // 8 + 14 + 20 + 32 + 4 + 12 = 90 bytes more on the wire. Omni-Path 9B: LRH, BTH, ICRC = 24.
  const Row rows[] = {
      {"EDR-100G", 4, 25.78125, ethernet_64_66, 4096, 26}, {"HDR-200G", 4, 53.125, pam4, 4096, 26},
      {"NDR-400G", 4, 106.25, pam4, 4096, 26},             {"XDR-800G", 4, 212.5, pam4, 4096, 26},
      {"OPA-100", 4, 25.78125, 1024.0 / 1056, 4096, 24},   {"100GbE", 4, 25.78125, ethernet_64_66, 4096, 82},
      {"200GbE", 4, 53.125, pam4, 4096, 82},               {"400GbE", 8, 53.125, pam4, 4096, 82},
      {"800GbE", 8, 106.25, pam4, 4096, 82},               {"25GbE", 1, 25.78125, ethernet_64_66, 1448, 90},
      {"10GbE", 1, 10.3125, ethernet_64_66, 1448, 90}};
  const Catalog& c = Catalog::builtin();
  EXPECT_EQ(std::size(rows), c.nics().size());
  for (const Row& r : rows) {
    const NicSpec& nic = c.nic(r.nic, "test", "/");
    EXPECT_NEAR(nic.bandwidth.value(), r.lanes * r.lane_gbps * 1e9 * r.coding / 8, 1e3) << r.nic;
    EXPECT_EQ(nic.packet_payload, Bytes{static_cast<std::int64_t>(r.payload)}) << r.nic;
    EXPECT_EQ(nic.packet_overhead, Bytes{static_cast<std::int64_t>(r.overhead)}) << r.nic;
    EXPECT_DOUBLE_EQ(nic.packet_efficiency(), r.payload / (r.payload + r.overhead)) << r.nic;
  }
  // The families differ: InfiniBand 0.9937, RoCEv2 0.9804, TCP 0.9415.
  EXPECT_NEAR(c.nic("NDR-400G", "", "").packet_efficiency(), 0.9937, 5e-5);
  EXPECT_NEAR(c.nic("400GbE", "", "").packet_efficiency(), 0.9804, 5e-5);
  EXPECT_NEAR(c.nic("25GbE", "", "").packet_efficiency(), 0.9415, 5e-5);
  EXPECT_EQ(c.fact("/nics/NDR-400G/packet/overhead")->kind, "derived");
  EXPECT_EQ(c.fact("/nics/OPA-100/packet/overhead")->kind, "assumed");
}

TEST(BuiltinCatalog, SwitchesAndTheirRadixPerPortSpeed) {
  // shared/reference/hardware-datasheets.md section 3.2; SN5600 from NVIDIA's SN5000 user manual.
  const Catalog& c = Catalog::builtin();
  using Radix = std::vector<std::pair<double, int>>;  // Gb/s, ports; fastest first
  const std::pair<const char*, Radix> expected[] = {
      {"Quantum-QM8700", {{200, 40}, {100, 80}}},
      {"Quantum-2-QM9700", {{400, 64}, {200, 128}}},
      {"Quantum-X800-Q3400", {{800, 144}}},
      {"Spectrum-4-SN5600", {{800, 64}, {400, 128}, {200, 256}, {100, 256}}},
      {"Tomahawk-5", {{800, 64}, {400, 128}, {200, 256}}}};
  ASSERT_EQ(c.switches().size(), std::size(expected));
  for (const auto& [name, radix] : expected) {
    ASSERT_TRUE(c.switches().count(name)) << name;
    const SwitchSpec& sw = c.switches().at(name);
    EXPECT_EQ(sw.name, name);
    EXPECT_FALSE(sw.description.empty()) << name;
    Radix got;
    for (const SwitchPorts& p : sw.radix) got.emplace_back(p.speed.value() * 8 / 1e9, p.ports);
    EXPECT_EQ(got, radix) << name;
    // Every value cites its source.
    for (const SwitchPorts& p : sw.radix) {
      char speed[32];
      std::snprintf(speed, sizeof speed, "%gGbps", p.speed.value() * 8 / 1e9);
      const SourcedFact* f = c.fact(std::string("/switches/") + name + "/radix/" + speed);
      ASSERT_NE(f, nullptr) << name << " " << speed;
      EXPECT_TRUE(f->kind == "secondary" || f->kind == "datasheet") << f->kind;
      EXPECT_EQ(f->source.rfind("https://", 0), 0u) << f->source;
    }
  }
  // The most ports at a speed: configurations at that speed or faster.
  const SwitchSpec& qm9700 = c.switches().at("Quantum-2-QM9700");
  EXPECT_EQ(qm9700.max_ports_at(gigabits_per_second(100)), 128);
  EXPECT_EQ(qm9700.max_ports_at(gigabits_per_second(200)), 128);
  EXPECT_EQ(qm9700.max_ports_at(gigabits_per_second(400)), 64);
  EXPECT_EQ(qm9700.max_ports_at(gigabits_per_second(800)), 0);
}

TEST(BuiltinCatalog, WireLatencyOfEachLinkClass) {
  // The catalog holds only the wires' latency; what NCCL's protocols add is the collective
  // model's (tests/collectives/machine_test.cpp).
  const Catalog& c = Catalog::builtin();
  EXPECT_EQ(c.wire_latency(LinkClass::kNvlink), nanoseconds(500));
  EXPECT_EQ(c.wire_latency(LinkClass::kPcie), nanoseconds(500));
  EXPECT_EQ(c.wire_latency(LinkClass::kNetwork), nanoseconds(300));
}

TEST(BuiltinCatalog, UnknownNameListsKnownOnes) {
  try {
    Catalog::builtin().gpu("H300", "cluster.json", "/servers/0/gpu");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config error in cluster.json at /servers/0/gpu: unknown GPU \"H300\" (known: "
              "A100-SXM-40GB, A100-SXM-80GB, B200, GB200, H100-PCIe, H100-SXM, H20, H200-SXM, H800-SXM, MI300X, "
              "V100-SXM2-32GB)");
  }
  EXPECT_THROW(Catalog::builtin().nic("NDR", "f", "/x"), ConfigError);
  EXPECT_THROW(Catalog::builtin().nvlink("NVLink9", "f", "/x"), ConfigError);
}

// A catalog document with one GPU whose entry is `gpu_body`.
std::string gpu_doc(const std::string& gpu_body) {
  return R"({"nvlink": {"NV": {"per_gpu_bandwidth": {"value": "100GB/s", "source": "s", "status": "datasheet"},
                               "links_per_gpu": {"value": 4, "source": "s", "status": "datasheet"},
                               "switch_reduction_per_gpu": {"value": "none", "source": "s", "status": "datasheet"}}},
            "gpus": {"G": )" + gpu_body + "}}";
}

std::string error_of(const std::string& text) {
  try {
    Catalog::from_documents({{"cat.json", text}});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kGoodGpu = R"({"peak": {"bf16": {"value": "1TFLOP/s", "source": "s", "status": "secondary"}},
  "hbm_capacity": {"value": "1GB", "source": "s", "status": "secondary"},
  "hbm_bandwidth": {"value": "1GB/s", "source": "s", "status": "secondary"},
  "nvlink": "NV",
  "pcie_bandwidth": {"value": "1GB/s", "source": "s", "status": "secondary"},
  "tdp": {"value": "1kW", "source": "s", "status": "assumed: a test"},
  "efficiency": {"gemm": {"value": 0.7, "source": "s", "status": "secondary"},
                 "attention": {"value": 0.5, "source": "s", "status": "secondary"},
                 "memory": {"value": 0.8, "source": "s", "status": "secondary"},
                 "kernel_launch": {"value": "4us", "source": "s", "status": "secondary"},
                 "overlap_slowdown": {"value": 1.2, "source": "s", "status": "secondary"}},
  "gemm": {"sms": {"value": 100, "source": "s", "status": "secondary"},
           "tile": {"value": "256x128", "source": "s", "status": "secondary"},
           "mamf": {"bf16": {"value": "0.8TFLOP/s", "source": "s", "status": "secondary"}}}})";

std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(CatalogReader, ParsesAMinimalDocument) {
  const Catalog c = Catalog::from_documents({{"cat.json", gpu_doc(kGoodGpu)}});
  EXPECT_DOUBLE_EQ(c.gpu("G", "", "").tdp_watts, 1000);
  EXPECT_DOUBLE_EQ(c.gpu("G", "", "").peak.at("bf16").value(), 1e12);
  EXPECT_DOUBLE_EQ(c.gpu("G", "", "").roofline.gemm, 0.7);
  EXPECT_EQ(c.gpu("G", "", "").roofline.kernel_launch, microseconds(4));
  EXPECT_DOUBLE_EQ(c.gpu("G", "", "").roofline.overlap_slowdown, 1.2);
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"({"value": 1.2,)", R"({"value": 0.5,)"))),
            "config error in cat.json at /gpus/G/efficiency/overlap_slowdown/value: expected a slowdown factor from 1 to 10; got the number 0.5");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"({"value": 0.7,)", R"({"value": 1.7,)"))),
            "config error in cat.json at /gpus/G/efficiency/gemm/value: expected a fraction from 0.01 to 1; "
            "got the number 1.7");
}

TEST(CatalogReader, ErrorsNameFileAndPath) {
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("nvlink": "NV")", R"("nvlink": "NV", "l2": 1)"))),
            "config error in cat.json at /gpus/G/l2: unknown key \"l2\" (allowed: description, "
            "peak, hbm_capacity, hbm_bandwidth, nvlink, pcie_bandwidth, tdp, efficiency, gemm)");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("status": "assumed: a test")", R"("status": "assumed")"))),
            "config error in cat.json at /gpus/G/tdp/status: expected \"assumed: <reason>\"; got "
            "the string \"assumed\"");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("value": "1GB", "source": "s")", R"("value": "1GB", "source": "")"))),
            "config error in cat.json at /gpus/G/hbm_capacity/source: expected a non-empty source "
            "(a URL or document); got the string \"\"");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("nvlink": "NV")", R"("nvlink": "NV9")"))),
            "config error in cat.json at /gpus/G/nvlink: unknown NVLink generation \"NV9\" (known: NV)");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("value": "1GB/s", "source": "s", "status": "secondary"},
  "nvlink")", R"("value": 1, "source": "s", "status": "secondary"},
  "nvlink")"))),
            "config error in cat.json at /gpus/G/hbm_bandwidth/value: expected a bandwidth such as "
            "\"400Gbps\"; got the number 1");
  EXPECT_NE(error_of(gpu_doc(with(with(kGoodGpu, R"("bf16")", R"("fp32")"), R"("bf16")", R"("fp32")")))
                .find("at /gpus/G/peak: missing required key \"bf16\" (or \"fp16\", for a GPU without BF16)"),
            std::string::npos);
  // fp16 alone is enough (V100 has no BF16).
  EXPECT_EQ(error_of(gpu_doc(with(with(kGoodGpu, R"("bf16")", R"("fp16")"), R"("bf16")", R"("fp16")"))), "no error");
}

TEST(CatalogReader, TheGemmSectionIsCheckedAgainstThePeaks) {
  const Catalog c = Catalog::from_documents({{"cat.json", gpu_doc(kGoodGpu)}});
  EXPECT_EQ(c.gpu("G", "", "").gemm.sms, 100);
  EXPECT_EQ(c.gpu("G", "", "").gemm.tile.m, 256);
  EXPECT_EQ(c.gpu("G", "", "").gemm.tile.n, 128);
  EXPECT_DOUBLE_EQ(c.gpu("G", "", "").gemm.mamf.at("bf16").value(), 0.8e12);
  EXPECT_EQ(c.gpu("G", "", "").gemm.mamf_shape[0], 0);
  // A MAMF above the peak, for a dtype without a peak, or missing for one with a peak.
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("0.8TFLOP/s")", R"("1.2TFLOP/s")"))),
            "config error in cat.json at /gpus/G/gemm/mamf/bf16/value: expected a rate above zero and at most the GPU's bf16 peak; got the string \"1.2TFLOP/s\"");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("mamf": {"bf16")", R"("mamf": {"fp8")"))),
            "config error in cat.json at /gpus/G/gemm/mamf/fp8: a MAMF for fp8, which the GPU has no peak for");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("mamf": {"bf16": {"value": "0.8TFLOP/s", "source": "s", "status": "secondary"}})", R"("mamf": {})"))),
            "config error in cat.json at /gpus/G/gemm/mamf: missing required key \"bf16\" (the GPU has a bf16 peak)");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"("256x128")", R"("256x")"))),
            "config error in cat.json at /gpus/G/gemm/tile/value: expected a tile such as \"256x128\"; got the string \"256x\"");
  EXPECT_EQ(error_of(gpu_doc(with(kGoodGpu, R"({"value": 100,)", R"({"value": 0,)"))),
            "config error in cat.json at /gpus/G/gemm/sms/value: expected a whole number of SMs from 1 to 4096; got the number 0");
  const std::string shaped = with(kGoodGpu, R"("mamf": {)", R"("mamf_shape": {"value": "2048x2048x13312", "source": "s", "status": "secondary"}, "mamf": {)");
  EXPECT_EQ(Catalog::from_documents({{"cat.json", gpu_doc(shaped)}}).gpu("G", "", "").gemm.mamf_shape[2], 13312);
  EXPECT_EQ(error_of(gpu_doc(with(shaped, "2048x2048x13312", "2048x2048"))),
            "config error in cat.json at /gpus/G/gemm/mamf_shape/value: expected a shape such as \"2048x2048x13312\"; got the string \"2048x2048\"");
  EXPECT_NE(error_of(R"({"gpu": {}})").find("at /gpu: unknown key"), std::string::npos);
}

TEST(CatalogReader, DuplicateEntriesAcrossDocumentsAreErrors) {
  try {
    Catalog::from_documents({{"a.json", gpu_doc(kGoodGpu)},
                             {"b.json", R"({"gpus": {"G": {}}})"}});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "config error in b.json at /gpus/G: \"G\" is already defined in a.json");
  }
}

TEST(CatalogReader, SwitchRadixKeysArePortSpeeds) {
  const Catalog c = Catalog::from_documents({{"cat.json", R"({"switches": {"S": {"radix": {
      "100Gbps": {"value": 8, "source": "s", "status": "secondary"},
      "50GB/s": {"value": 2, "source": "s", "status": "secondary"}}}}})"}});
  const SwitchSpec& s = c.switches().at("S");
  ASSERT_EQ(s.radix.size(), 2u);  // fastest first
  EXPECT_DOUBLE_EQ(s.radix[0].speed.value(), 50e9);
  EXPECT_EQ(s.radix[0].ports, 2);
  EXPECT_EQ(s.radix[1].ports, 8);
  EXPECT_EQ(error_of(R"({"switches": {"S": {"radix": {"400": {"value": 8, "source": "s", "status": "secondary"}}}}})").rfind(
                "config error in cat.json at /switches/S/radix/400: a port speed such as \"400Gbps\" as the key: ", 0),
            0u);
  EXPECT_EQ(error_of(R"({"switches": {"S": {"radix": {"400Gbps": {"value": 8, "source": "s", "status": "secondary"},
      "50GB/s": {"value": 4, "source": "s", "status": "secondary"}}}}})"),
            "config error in cat.json at /switches/S/radix/50GB~1s: the port speed \"50GB/s\" is given twice");
  EXPECT_EQ(error_of(R"({"switches": {"S": {"radix": {"400Gbps": {"value": 0, "source": "s", "status": "secondary"}}}}})"),
            "config error in cat.json at /switches/S/radix/400Gbps/value: expected an integer from 1 to 1048576; got the number 0");
  EXPECT_EQ(error_of(R"({"switches": {"S": {"radix": {}}}})"),
            "config error in cat.json at /switches/S/radix: expected at least one port speed, such as {\"400Gbps\": 64}; got an object");
  EXPECT_EQ(error_of(R"({"switches": {"S": {"ports": {}}}})"),
            "config error in cat.json at /switches/S/ports: unknown key \"ports\" (allowed: description, radix)");
}

TEST(CatalogReader, LinkClassesHoldOnlyTheWireLatency) {
  const Catalog c = Catalog::from_documents(
      {{"cat.json", R"({"link_classes": {"pcie": {"latency": {"value": "2us", "source": "s", "status": "assumed: a test"}}}})"}});
  EXPECT_EQ(c.wire_latency(LinkClass::kPcie), microseconds(2));
  EXPECT_EQ(c.wire_latency(LinkClass::kNvlink), Duration{0});
  EXPECT_EQ(error_of(R"({"link_classes": {"pcie": {"efficiency": {"value": 0.8, "source": "s", "status": "secondary"}}}})"),
            "config error in cat.json at /link_classes/pcie/efficiency: unknown key \"efficiency\" (allowed: description, latency)");
}

TEST(CatalogReader, ANicsPacketFormatIsOptionalAndChecked) {
  const auto nic_doc = [](const std::string& packet) {
    return std::string(R"({"nics": {"N": {"link_layer": {"value": "ethernet", "source": "s", "status": "standard"},
        "bandwidth": {"value": "100Gbps", "source": "s", "status": "secondary"},
        "latency": {"value": "1us", "source": "s", "status": "assumed: a test"})") + packet + "}}}";
  };
  const Catalog none = Catalog::from_documents({{"cat.json", nic_doc("")}});
  EXPECT_FALSE(none.nic("N", "", "").has_packet_format());
  EXPECT_EQ(none.nic("N", "", "").packet_efficiency(), 0);
  const std::string good = R"(, "packet": {"payload": {"value": "1000B", "source": "s", "status": "standard"},
        "overhead": {"value": "25B", "source": "s", "status": "derived: a test"}})";
  const Catalog packets = Catalog::from_documents({{"cat.json", nic_doc(good)}});
  EXPECT_DOUBLE_EQ(packets.nic("N", "", "").packet_efficiency(), 1000.0 / 1025);
  EXPECT_EQ(error_of(nic_doc(with(good, R"("1000B")", R"("0B")"))),
            "config error in cat.json at /nics/N/packet/payload/value: a packet's payload must be positive");
  EXPECT_EQ(error_of(nic_doc(with(good, R"("25B")", R"(25)"))),
            "config error in cat.json at /nics/N/packet/overhead/value: expected a size such as \"80GiB\"; got the number 25");
  // The link layer is required and one of three names.
  EXPECT_EQ(none.nic("N", "", "").link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(error_of(with(nic_doc(""), R"("link_layer": {"value": "ethernet", "source": "s", "status": "standard"},)", "")),
            "config error in cat.json at /nics/N: missing required key \"link_layer\"");
  EXPECT_NE(error_of(with(nic_doc(""), R"("ethernet")", R"("roce")")).find("/nics/N/link_layer/value"), std::string::npos);
}

}  // namespace
}  // namespace cs::hw
