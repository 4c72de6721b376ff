// The hardware catalog reader. Catalog documents are JSON objects whose top-level keys are
// "description" and any of the sections "gpus", "nvlink", "nics", "switches", "link_classes"; the
// built-in catalog splits them over configs/hardware/{gpus,nvlink,nics,switches,link-classes}.json. Every number
// is a sourced value (core/sourced_value.h); docs/hardware-catalog.md has the schema.
#include "hardware/catalog.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "core/config.h"
#include "core/errors.h"
#include "core/sourced_value.h"
#include "core/unit_parse.h"

namespace cs::hw {

namespace {

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

// "256x128" (a tile) or "2048x2048x13312" (a shape): `count` positive integers joined by 'x'.
std::vector<std::int64_t> parse_dimensions(const ConfigNode& v, int count, const char* what) {
  std::vector<std::int64_t> out;
  const std::string s = v.is_string() ? v.as_string() : std::string();
  std::size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    const std::size_t x = s.find('x', pos);
    const std::string part = s.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    char* end = nullptr;
    const long long n = part.empty() ? 0 : std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || n <= 0 || n > (1LL << 24)) break;
    out.push_back(n);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (static_cast<int>(out.size()) != count) v.fail_expected(what);
  return out;
}

// `sourced_value_of` reads a {value, source, status} and records its fact.
template <class SourcedValueOf>
GemmStructure parse_gemm_structure(const ConfigNode& node, const GpuSpec& g, SourcedValueOf sourced_value_of) {
  node.expect_only({"sms", "tile", "mamf", "mamf_shape"});
  GemmStructure s;
  {
    const ConfigNode v = sourced_value_of(node.at("sms"));
    const double n = v.as_number();
    if (!(n >= 1 && n <= 4096 && n == std::floor(n))) v.fail_expected("a whole number of SMs from 1 to 4096");
    s.sms = static_cast<int>(n);
  }
  {
    const auto t = parse_dimensions(sourced_value_of(node.at("tile")), 2, "a tile such as \"256x128\"");
    s.tile = GemmTile{static_cast<int>(t[0]), static_cast<int>(t[1])};
  }
  const ConfigNode mamf = node.at("mamf");
  for (const auto& [dtype, value] : mamf.members()) {
    auto peak = g.peak.find(dtype);
    if (peak == g.peak.end()) value.fail("a MAMF for " + dtype + ", which the GPU has no peak for");
    const ConfigNode v = sourced_value_of(value);
    const FlopRate r = v.as_flop_rate();
    if (!(r.value() > 0 && r.value() <= peak->second.value())) v.fail_expected("a rate above zero and at most the GPU's " + dtype + " peak");
    s.mamf[dtype] = r;
  }
  for (const char* dtype : {"bf16", "fp16", "fp8"}) {
    if (g.peak.count(dtype) && !s.mamf.count(dtype)) mamf.fail(std::string("missing required key \"") + dtype + "\" (the GPU has a " + dtype + " peak)");
  }
  if (auto shape = node.find("mamf_shape")) {
    const auto d = parse_dimensions(sourced_value_of(*shape), 3, "a shape such as \"2048x2048x13312\"");
    s.mamf_shape = std::array<std::int64_t, 3>{d[0], d[1], d[2]};
  }
  return s;
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
  std::vector<SourcedFact> facts;
  auto sourced_value_of = [&facts](const ConfigNode& node) { return sourced_value(node, &facts); };
  // Parsed documents stay alive while nodes point into them.
  std::vector<ConfigDocument> docs;
  docs.reserve(name_and_text.size());
  std::map<std::string, std::string> gpu_file, nvlink_file, nic_file, switch_file;
  std::vector<ConfigNode> gpu_nvlink_refs;  // checked once every document is read
  bool class_seen[kLinkClassCount] = {};

  for (const auto& [name, text] : name_and_text) {
    docs.push_back(ConfigDocument::parse(text, name));
    const ConfigNode root = docs.back().root();
    root.expect_only({"description", "gpus", "nvlink", "nics", "switches", "link_classes"});
    if (auto d = root.find("description")) d->as_string();

    if (auto gpus = root.find("gpus")) {
      for (const auto& [gpu_name, node] : gpus->members()) {
        check_new(c.gpus_, gpu_name, node, gpu_file);
        node.expect_only({"description", "peak", "hbm_capacity", "hbm_bandwidth", "nvlink",
                          "pcie_bandwidth", "tdp", "efficiency", "gemm"});
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
          g.peak[dtype] = sourced_value_of(value).as_flop_rate();
        }
        // A 16-bit tensor-core rate is required: bf16, or fp16 alone for a GPU without BF16 (V100).
        if (!g.peak.count("bf16") && !g.peak.count("fp16")) {
          peak.fail("missing required key \"bf16\" (or \"fp16\", for a GPU without BF16)");
        }
        g.hbm_capacity = sourced_value_of(node.at("hbm_capacity")).as_bytes();
        if (g.hbm_capacity.value() <= 0) node.at("hbm_capacity").fail("HBM capacity must be positive");
        g.hbm_bandwidth = sourced_value_of(node.at("hbm_bandwidth")).as_bandwidth();
        if (auto nv = node.find("nvlink")) {
          g.nvlink = nv->as_string();
          gpu_nvlink_refs.push_back(*nv);
        }
        g.pcie_bandwidth = sourced_value_of(node.at("pcie_bandwidth")).as_bandwidth();
        g.tdp_watts = parse_watts(sourced_value_of(node.at("tdp")));
        const ConfigNode eff = node.at("efficiency");
        eff.expect_only({"gemm", "attention", "memory", "kernel_launch", "overlap_slowdown"});
        auto fraction = [&](const char* key) {
          const ConfigNode v = sourced_value_of(eff.at(key));
          const double x = v.as_number();
          if (!(x >= 0.01 && x <= 1)) v.fail_expected("a fraction from 0.01 to 1");
          return x;
        };
        g.roofline.gemm = fraction("gemm");
        g.roofline.attention = fraction("attention");
        g.roofline.memory = fraction("memory");
        g.roofline.kernel_launch = sourced_value_of(eff.at("kernel_launch")).as_duration();
        {
          const ConfigNode v = sourced_value_of(eff.at("overlap_slowdown"));
          g.roofline.overlap_slowdown = v.as_number();
          if (!(g.roofline.overlap_slowdown >= 1 && g.roofline.overlap_slowdown <= 10)) v.fail_expected("a slowdown factor from 1 to 10");
        }
        g.gemm = parse_gemm_structure(node.at("gemm"), g, sourced_value_of);
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
        n.per_gpu_bandwidth = sourced_value_of(node.at("per_gpu_bandwidth")).as_bandwidth();
        n.links_per_gpu = static_cast<int>(sourced_value_of(node.at("links_per_gpu")).as_int(1, 1024));
        const ConfigNode red = sourced_value_of(node.at("switch_reduction_per_gpu"));
        if (!(red.is_string() && red.as_string() == "none")) n.switch_reduction_per_gpu = red.as_bandwidth();
        c.nvlinks_.emplace(nv_name, std::move(n));
      }
    }

    if (auto nics = root.find("nics")) {
      for (const auto& [nic_name, node] : nics->members()) {
        check_new(c.nics_, nic_name, node, nic_file);
        node.expect_only({"description", "link_layer", "bandwidth", "latency", "packet"});
        if (auto d = node.find("description")) d->as_string();
        NicSpec n;
        n.name = nic_name;
        n.link_layer = sourced_value_of(node.at("link_layer")).as_enum(kLinkLayerNames);
        n.bandwidth = sourced_value_of(node.at("bandwidth")).as_bandwidth();
        n.latency = sourced_value_of(node.at("latency")).as_duration();
        if (auto packet = node.find("packet")) {
          packet->expect_only({"description", "payload", "overhead"});
          if (auto d = packet->find("description")) d->as_string();
          const ConfigNode payload = sourced_value_of(packet->at("payload"));
          n.packet_payload = payload.as_bytes();
          if (!(n.packet_payload.value() > 0)) payload.fail("a packet's payload must be positive");
          const ConfigNode overhead = sourced_value_of(packet->at("overhead"));
          n.packet_overhead = overhead.as_bytes();
          if (n.packet_overhead.value() < 0) overhead.fail("a packet's overhead cannot be negative");
        }
        c.nics_.emplace(nic_name, std::move(n));
      }
    }

    if (auto switches = root.find("switches")) {
      for (const auto& [switch_name, node] : switches->members()) {
        check_new(c.switches_, switch_name, node, switch_file);
        node.expect_only({"description", "radix"});
        SwitchSpec s;
        s.name = switch_name;
        if (auto d = node.find("description")) s.description = d->as_string();
        const ConfigNode radix = node.at("radix");
        if (radix.members().empty()) radix.fail_expected("at least one port speed, such as {\"400Gbps\": 64}");
        for (const auto& [speed_text, count] : radix.members()) {
          SwitchPorts p;
          try {
            p.speed = parse_bandwidth(speed_text);
          } catch (const UnitParseError& e) {
            count.fail(std::string("a port speed such as \"400Gbps\" as the key: ") + e.what());
          }
          for (const SwitchPorts& q : s.radix) {
            if (q.speed.value() == p.speed.value()) count.fail("the port speed \"" + speed_text + "\" is given twice");
          }
          p.ports = static_cast<int>(sourced_value_of(count).as_int(1, 1 << 20));
          s.radix.push_back(p);
        }
        std::sort(s.radix.begin(), s.radix.end(),
                  [](const SwitchPorts& a, const SwitchPorts& b) { return a.speed.value() > b.speed.value(); });
        c.switches_.emplace(switch_name, std::move(s));
      }
    }

    if (auto classes = root.find("link_classes")) {
      classes->expect_only(enum_names(kLinkClassNames));
      for (const auto& [class_name, node] : classes->members()) {
        const int i = static_cast<int>(*parse_enum(kLinkClassNames, class_name));
        if (class_seen[i]) node.fail("link class \"" + class_name + "\" is defined twice");
        class_seen[i] = true;
        node.expect_only({"description", "latency"});
        if (auto d = node.find("description")) d->as_string();
        c.wire_latency_[static_cast<std::size_t>(i)] = sourced_value_of(node.at("latency")).as_duration();
      }
    }
  }

  for (const ConfigNode& ref : gpu_nvlink_refs) {
    const std::string name = ref.as_string();
    if (!c.nvlinks_.count(name)) fail_unknown(c.nvlinks_, "NVLink generation", name, ref.file(), ref.path());
  }
  for (SourcedFact& f : facts) c.facts_.emplace(f.path, std::move(f));
  return c;
}

int SwitchSpec::max_ports_at(Bandwidth speed) const {
  int most = 0;
  for (const SwitchPorts& p : radix) {
    if (p.speed.value() >= speed.value()) most = std::max(most, p.ports);
  }
  return most;
}

Catalog Catalog::builtin_with(const std::vector<std::string>& overrides, const std::string& file, const std::string& where) {
  if (overrides.empty()) return builtin();
  std::vector<std::pair<std::string, std::string>> docs = builtin_catalog_documents();
  std::vector<std::string> set_paths;
  for (const std::string& o : overrides) {
    const std::string pointer = o.substr(0, o.find('='));
    const std::string parent = pointer.substr(0, pointer.rfind('/'));
    bool applied = false;
    for (auto& [name, text] : docs) {
      nlohmann::json j = nlohmann::json::parse(text);
      if (pointer.empty() || pointer[0] != '/' || !j.contains(nlohmann::json::json_pointer(parent.empty() ? "" : parent))) continue;
      apply_override(j, name, o);
      text = j.dump();
      applied = true;
      break;
    }
    if (!applied) throw ConfigError(file, where, "no hardware catalog value at \"" + pointer + "\" (configs/hardware, docs/hardware-catalog.md)");
    // "/gpus/H100-SXM/efficiency/gemm/value" sets the sourced value "/gpus/H100-SXM/efficiency/gemm".
    set_paths.push_back(pointer.size() > 6 && pointer.ends_with("/value") ? pointer.substr(0, pointer.size() - 6) : pointer);
  }
  Catalog c = from_documents(docs);
  for (const std::string& path : set_paths) {
    auto it = c.facts_.find(path);
    if (it == c.facts_.end()) continue;
    it->second.kind = "user";
    it->second.status = "user: set by " + (file.empty() ? where : file + " at " + where);
  }
  return c;
}

const SourcedFact* Catalog::fact(const std::string& path) const {
  auto it = facts_.find(path);
  return it == facts_.end() ? nullptr : &it->second;
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

}  // namespace cs::hw
