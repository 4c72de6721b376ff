// The hardware catalog reader. Catalog documents are JSON objects whose top-level keys are
// "description" and any of the sections "gpus", "nvlink", "nics", "link_classes"; the built-in
// catalog splits them over configs/hardware/{gpus,nvlink,nics,link-classes}.json. Every number
// is a sourced value {"value", "source", "status", "note"?}; docs/hardware-catalog.md has the
// schema and the sources policy.
#include "topology/catalog.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "core/config.h"
#include "core/errors.h"

namespace cs::topo {

// Generated at build time from configs/hardware/*.json by cmake/EmbedFiles.cmake.
const std::vector<std::pair<std::string, std::string>>& builtin_catalog_documents();

namespace {

constexpr std::string_view kStatusKinds[] = {"datasheet", "secondary", "standard",
                                             "derived", "assumed", "fitted"};
// Kinds that are not a reading of a published document must say why.
constexpr std::string_view kStatusKindsWithReason[] = {"derived", "assumed", "fitted"};

void check_status(const ConfigNode& node) {
  const std::string s = node.as_string();
  const std::size_t end = s.find_first_of(":( ");
  const std::string_view kind = std::string_view(s).substr(0, end);
  bool known = false;
  for (auto k : kStatusKinds) known = known || k == kind;
  if (!known) {
    node.fail_expected(
        "a status starting with datasheet, secondary, standard, derived, assumed or fitted");
  }
  for (auto k : kStatusKindsWithReason) {
    if (k != kind) continue;
    const bool has_reason = end != std::string::npos && s[end] == ':' &&
                            s.find_first_not_of(' ', end + 1) != std::string::npos;
    if (!has_reason) node.fail_expected("\"" + std::string(kind) + ": <reason>\"");
  }
}

// Checks the provenance of a sourced value and returns its "value" node.
ConfigNode sourced(const ConfigNode& node) {
  node.expect_only({"value", "source", "status", "note"});
  const ConfigNode source = node.at("source");
  if (source.as_string().empty()) source.fail_expected("a non-empty source (a URL or document)");
  check_status(node.at("status"));
  if (auto note = node.find("note")) note->as_string();
  return node.at("value");
}

// "700W", "1.2kW": the catalog's only quantity the core unit parser does not know.
double parse_watts(const ConfigNode& node) {
  if (!node.is_string()) node.fail_expected("a power such as \"700W\"");
  const std::string s = node.as_string();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit(end);
  double factor = 0;
  if (unit == "W") factor = 1;
  else if (unit == "kW") factor = 1e3;
  if (end == s.c_str() || factor == 0 || !std::isfinite(v) || !(v > 0)) {
    node.fail_expected("a positive power such as \"700W\"");
  }
  return v * factor;
}

template <class Map>
void check_new(const Map& map, const std::string& name, const ConfigNode& node,
               std::map<std::string, std::string>& defined_in) {
  if (map.count(name)) {
    node.fail("\"" + name + "\" is already defined in " + defined_in[name]);
  }
  defined_in[name] = node.file();
}

template <class Map>
[[noreturn]] void fail_unknown(const Map& map, std::string_view what, const std::string& name,
                               const std::string& file, const std::string& path) {
  std::string known;
  for (const auto& [key, value] : map) known += (known.empty() ? "" : ", ") + key;
  throw ConfigError(file, path,
                    "unknown " + std::string(what) + " \"" + name + "\" (known: " + known + ")");
}

}  // namespace

Catalog Catalog::from_documents(
    const std::vector<std::pair<std::string, std::string>>& name_and_text) {
  Catalog c;
  // Parsed documents stay alive while nodes point into them.
  std::vector<ConfigDocument> docs;
  docs.reserve(name_and_text.size());
  std::map<std::string, std::string> gpu_file, nvlink_file, nic_file;
  std::vector<ConfigNode> gpu_nvlink_refs;  // checked once every document is read
  bool class_seen[kLinkClassCount] = {};
  bool collective_model_seen = false;

  for (const auto& [name, text] : name_and_text) {
    docs.push_back(ConfigDocument::parse(text, name));
    const ConfigNode root = docs.back().root();
    root.expect_only({"description", "gpus", "nvlink", "nics", "link_classes", "collective_model"});
    if (auto d = root.find("description")) d->as_string();

    if (auto gpus = root.find("gpus")) {
      for (const auto& [gpu_name, node] : gpus->members()) {
        check_new(c.gpus_, gpu_name, node, gpu_file);
        node.expect_only({"description", "peak", "hbm_capacity", "hbm_bandwidth", "nvlink",
                          "pcie_bandwidth", "tdp", "efficiency"});
        if (auto d = node.find("description")) d->as_string();
        GpuSpec g;
        g.name = gpu_name;
        const ConfigNode peak = node.at("peak");
        for (const auto& [dtype, value] : peak.members()) {
          static constexpr std::string_view kDtypes[] = {"bf16", "fp16", "fp8", "fp4",
                                                         "tf32", "fp32", "fp64"};
          bool ok = false;
          for (auto d : kDtypes) ok = ok || d == dtype;
          if (!ok) value.fail("unknown data type \"" + dtype + "\" (allowed: bf16, fp16, fp8, fp4, tf32, fp32, fp64)");
          g.peak[dtype] = sourced(value).as_flop_rate();
        }
        if (!g.peak.count("bf16")) peak.fail("missing required key \"bf16\"");
        g.hbm_capacity = sourced(node.at("hbm_capacity")).as_bytes();
        if (g.hbm_capacity.value() <= 0) node.at("hbm_capacity").fail("HBM capacity must be positive");
        g.hbm_bandwidth = sourced(node.at("hbm_bandwidth")).as_bandwidth();
        if (auto nv = node.find("nvlink")) {
          g.nvlink = nv->as_string();
          gpu_nvlink_refs.push_back(*nv);
        }
        g.pcie_bandwidth = sourced(node.at("pcie_bandwidth")).as_bandwidth();
        g.tdp_watts = parse_watts(sourced(node.at("tdp")));
        const ConfigNode eff = node.at("efficiency");
        eff.expect_only({"gemm", "attention", "memory", "kernel_launch", "overlap_slowdown"});
        auto fraction = [&](const char* key) {
          const ConfigNode v = sourced(eff.at(key));
          const double x = v.as_number();
          if (!(x > 0 && x <= 1)) v.fail_expected("a fraction in (0, 1]");
          return x;
        };
        g.efficiency.gemm = fraction("gemm");
        g.efficiency.attention = fraction("attention");
        g.efficiency.memory = fraction("memory");
        g.efficiency.kernel_launch = sourced(eff.at("kernel_launch")).as_duration();
        {
          const ConfigNode v = sourced(eff.at("overlap_slowdown"));
          g.efficiency.overlap_slowdown = v.as_number();
          if (!(g.efficiency.overlap_slowdown >= 1 && g.efficiency.overlap_slowdown <= 10)) v.fail_expected("a slowdown factor from 1 to 10");
        }
        c.gpus_.emplace(gpu_name, std::move(g));
      }
    }

    if (auto nvlinks = root.find("nvlink")) {
      for (const auto& [nv_name, node] : nvlinks->members()) {
        check_new(c.nvlinks_, nv_name, node, nvlink_file);
        node.expect_only({"description", "per_gpu_bandwidth", "links_per_gpu",
                          "switch_reduction_per_gpu"});
        if (auto d = node.find("description")) d->as_string();
        NvlinkSpec n;
        n.name = nv_name;
        n.per_gpu_bandwidth = sourced(node.at("per_gpu_bandwidth")).as_bandwidth();
        n.links_per_gpu = static_cast<int>(sourced(node.at("links_per_gpu")).as_int(1, 1024));
        const ConfigNode red = sourced(node.at("switch_reduction_per_gpu"));
        if (!(red.is_string() && red.as_string() == "none")) n.switch_reduction_per_gpu = red.as_bandwidth();
        c.nvlinks_.emplace(nv_name, std::move(n));
      }
    }

    if (auto nics = root.find("nics")) {
      for (const auto& [nic_name, node] : nics->members()) {
        check_new(c.nics_, nic_name, node, nic_file);
        node.expect_only({"description", "bandwidth", "latency"});
        if (auto d = node.find("description")) d->as_string();
        NicSpec n;
        n.name = nic_name;
        n.bandwidth = sourced(node.at("bandwidth")).as_bandwidth();
        n.latency = sourced(node.at("latency")).as_duration();
        c.nics_.emplace(nic_name, std::move(n));
      }
    }

    if (auto classes = root.find("link_classes")) {
      classes->expect_only({"nvlink", "pcie", "network"});
      for (const auto& [class_name, node] : classes->members()) {
        const int i = class_name == "nvlink" ? 0 : class_name == "pcie" ? 1 : 2;
        if (class_seen[i]) node.fail("link class \"" + class_name + "\" is defined twice");
        class_seen[i] = true;
        // "latency" is the wire latency of generated links; the cluster loader reads it.
        node.expect_only({"description", "efficiency", "step_latency", "ll_step_latency", "latency"});
        if (auto d = node.find("description")) d->as_string();
        LinkClassParams p;
        const ConfigNode eff = sourced(node.at("efficiency"));
        p.efficiency = eff.as_number();
        if (!(p.efficiency > 0 && p.efficiency <= 1)) eff.fail_expected("a number in (0, 1]");
        p.step_latency = sourced(node.at("step_latency")).as_duration();
        // Without an LL figure the LL protocol gets no latency advantage.
        p.ll_step_latency = p.step_latency;
        if (auto ll = node.find("ll_step_latency")) p.ll_step_latency = sourced(*ll).as_duration();
        if (auto lat = node.find("latency")) sourced(*lat).as_duration();
        c.link_classes_[i] = p;
      }
    }

    if (auto model = root.find("collective_model")) {
      if (collective_model_seen) model->fail("\"collective_model\" is defined twice");
      collective_model_seen = true;
      model->expect_only({"description", "launch_latency", "ll_wire_factor"});
      if (auto d = model->find("description")) d->as_string();
      if (auto launch = model->find("launch_latency")) {
        c.collective_model_.launch_latency = sourced(*launch).as_duration();
      }
      if (auto factor = model->find("ll_wire_factor")) {
        const ConfigNode v = sourced(*factor);
        c.collective_model_.ll_wire_factor = v.as_number();
        if (!(c.collective_model_.ll_wire_factor >= 1)) v.fail_expected("a number >= 1");
      }
    }
  }

  for (const ConfigNode& ref : gpu_nvlink_refs) {
    const std::string name = ref.as_string();
    if (!c.nvlinks_.count(name)) fail_unknown(c.nvlinks_, "NVLink generation", name, ref.file(), ref.path());
  }
  return c;
}

const Catalog& Catalog::builtin() {
  static const Catalog catalog = from_documents(builtin_catalog_documents());
  return catalog;
}

const GpuSpec& Catalog::gpu(const std::string& name, const std::string& file,
                            const std::string& path) const {
  auto it = gpus_.find(name);
  if (it == gpus_.end()) fail_unknown(gpus_, "GPU", name, file, path);
  return it->second;
}

const NvlinkSpec& Catalog::nvlink(const std::string& name, const std::string& file,
                                  const std::string& path) const {
  auto it = nvlinks_.find(name);
  if (it == nvlinks_.end()) fail_unknown(nvlinks_, "NVLink generation", name, file, path);
  return it->second;
}

const NicSpec& Catalog::nic(const std::string& name, const std::string& file,
                            const std::string& path) const {
  auto it = nics_.find(name);
  if (it == nics_.end()) fail_unknown(nics_, "NIC", name, file, path);
  return it->second;
}

}  // namespace cs::topo
