#include "cost/price_catalog.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/config.h"
#include "core/errors.h"
#include "hardware/catalog.h"

namespace cs::cost {
namespace {

constexpr std::string_view kBuiltinName = "configs/prices/prices.json";

// A sourced number that must be positive (a price, a power, a rate); zero where `allow_zero`.
double positive(const ConfigNode& node, std::vector<SourcedFact>& facts, bool allow_zero = false) {
  const ConfigNode v = sourced_value(node, &facts);
  const double x = v.as_number();
  if (!(x > 0) && !(allow_zero && x == 0)) v.fail_expected(allow_zero ? "a number >= 0" : "a positive number");
  return x;
}

// "--set-price /facility/pue=1.2": a pointer to a sourced object sets its "value".
std::string to_value_assignment(const nlohmann::json& doc, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos) return assignment;
  const std::string pointer = assignment.substr(0, eq);
  if (pointer.empty() || pointer[0] != '/') return assignment;
  try {
    const nlohmann::json& target = doc.at(nlohmann::json::json_pointer(pointer));
    if (target.is_object() && target.contains("value")) return pointer + "/value" + assignment.substr(eq);
  } catch (const nlohmann::json::exception&) {
  }
  return assignment;
}

// The compiled-in document's text.
const std::string& builtin_text() {
  for (const auto& [n, text] : builtin_price_documents()) {
    if (n == kBuiltinName) return text;
  }
  throw ConfigError(std::string(kBuiltinName), "", "not compiled into this binary");
}

}  // namespace

PriceCatalog PriceCatalog::parse(const std::string& text, const std::string& name,
                                 const std::vector<std::string>& overrides, const std::string& overrides_where) {
  ConfigDocument parsed = ConfigDocument::parse(text, name);
  nlohmann::json doc = parsed.json();
  std::vector<std::string> set_paths;
  for (const std::string& o : overrides) {
    const std::string assignment = to_value_assignment(doc, o);
    const std::string pointer = assignment.substr(0, assignment.find('='));
    const std::string parent = pointer.substr(0, pointer.rfind('/'));
    if (pointer.empty() || pointer[0] != '/' ||
        !doc.contains(nlohmann::json::json_pointer(parent))) {
      throw ConfigError(name, overrides_where,
                        "no price catalog value at \"" + pointer + "\" (configs/prices/prices.json, docs/cost-model.md)");
    }
    apply_override(doc, name, assignment);
    set_paths.push_back(pointer.ends_with("/value") ? pointer.substr(0, pointer.size() - 6) : pointer);
  }
  const ConfigDocument document = ConfigDocument::from_json(std::move(doc), name);
  const ConfigNode root = document.root();
  root.expect_only({"description", "servers", "switches", "links", "media", "facility"});
  PriceCatalog c;
  c.file_ = name;
  std::vector<SourcedFact> facts;

  for (const auto& [gpu, s] : root.at("servers").members()) {
    s.expect_only({"description", "gpus", "price_usd", "power_max_w", "gpu_idle_w", "cloud_usd_per_gpu_hour"});
    if (hw::Catalog::builtin().gpus().count(gpu) == 0) {
      std::string known;
      for (const auto& [known_gpu, _] : hw::Catalog::builtin().gpus()) known += (known.empty() ? "" : ", ") + known_gpu;
      s.fail("no GPU \"" + gpu + "\" in the hardware catalog (configs/hardware/gpus.json: " + known + ")");
    }
    ServerPrice p;
    p.gpu = gpu;
    p.gpus = static_cast<int>(s.at("gpus").as_int(1, 1024));
    p.price = dollars(positive(s.at("price_usd"), facts));
    p.power_max = watts(positive(s.at("power_max_w"), facts));
    p.gpu_idle = watts(positive(s.at("gpu_idle_w"), facts, true));
    if (auto rent = s.find("cloud_usd_per_gpu_hour")) p.cloud_per_gpu_hour = dollars(positive(*rent, facts));
    p.file = name;
    p.path = s.path();
    c.servers_.emplace(gpu, std::move(p));
  }
  for (const auto& [sw, s] : root.at("switches").members()) {
    s.expect_only({"family", "port_speed", "price_usd", "power_w"});
    SwitchPrice p;
    p.name = sw;
    p.family = s.at("family").as_choice({"infiniband", "ethernet"}) == 0 ? NetworkFamily::kInfiniband
                                                                         : NetworkFamily::kEthernet;
    p.port_speed = s.at("port_speed").as_bandwidth();
    if (!(p.port_speed.value() > 0)) s.at("port_speed").fail_expected("a positive port speed");
    p.price = dollars(positive(s.at("price_usd"), facts));
    p.power = watts(positive(s.at("power_w"), facts, true));
    p.path = s.path();
    c.switches_.push_back(std::move(p));
  }
  for (const auto& [speed, s] : root.at("links").members()) {
    s.expect_only({"optical_usd", "copper_usd", "transceiver_w"});
    LinkPrice p;
    try {
      p.speed = parse_bandwidth(speed);
    } catch (const std::exception&) {
      s.fail("expected a link speed such as \"400Gbps\" as the key");
    }
    p.optical = dollars(positive(s.at("optical_usd"), facts));
    p.copper = dollars(positive(s.at("copper_usd"), facts));
    p.transceiver = watts(positive(s.at("transceiver_w"), facts, true));
    p.path = s.path();
    c.links_.push_back(p);
  }
  std::sort(c.links_.begin(), c.links_.end(), [](const LinkPrice& a, const LinkPrice& b) { return a.speed < b.speed; });
  const ConfigNode media = root.at("media");
  media.expect_only({"description", "endpoint_leaf", "leaf_spine", "spine_core"});
  const char* tiers[] = {"endpoint_leaf", "leaf_spine", "spine_core"};
  for (int t = 0; t < 3; ++t) {
    c.media_[t + 1] = media.at(tiers[t]).as_choice({"optical", "copper"}) == 0 ? Medium::kOptical : Medium::kCopper;
  }
  const ConfigNode f = root.at("facility");
  f.expect_only({"pue", "usd_per_kwh", "amortization_years", "average_load", "operations_per_server_usd",
                 "liquid_cooling_above_w_per_gpu"});
  c.facility_.pue = positive(f.at("pue"), facts);
  if (c.facility_.pue < 1) f.at("pue").at("value").fail_expected("a PUE of at least 1 (facility power / IT power)");
  c.facility_.per_kwh = dollars(positive(f.at("usd_per_kwh"), facts));
  c.facility_.amortization_years = positive(f.at("amortization_years"), facts);
  c.facility_.average_load = positive(f.at("average_load"), facts);
  if (c.facility_.average_load > 1) f.at("average_load").at("value").fail_expected("a fraction of the maximum draw, at most 1");
  c.facility_.operations_per_server = dollars(positive(f.at("operations_per_server_usd"), facts, true));
  c.facility_.liquid_cooling_above = watts(positive(f.at("liquid_cooling_above_w_per_gpu"), facts));

  for (SourcedFact& fact : facts) c.facts_.emplace(fact.path, std::move(fact));
  for (const std::string& path : set_paths) {
    auto it = c.facts_.find(path);
    if (it == c.facts_.end()) continue;
    it->second.kind = "user";
    it->second.status = "user: set by " + overrides_where;
  }
  return c;
}

const PriceCatalog& PriceCatalog::builtin() {
  static const PriceCatalog catalog = parse(builtin_text(), std::string(kBuiltinName));
  return catalog;
}

PriceCatalog PriceCatalog::load(const std::string& file, const std::vector<std::string>& overrides) {
  if (file.empty()) return overrides.empty() ? builtin() : parse(builtin_text(), std::string(kBuiltinName), overrides);
  const ConfigDocument doc = ConfigDocument::load(file);
  return parse(doc.json().dump(), file, overrides);
}

const ServerPrice* PriceCatalog::find_server(const std::string& gpu) const {
  auto it = servers_.find(gpu);
  return it == servers_.end() ? nullptr : &it->second;
}

const ServerPrice& PriceCatalog::server(const std::string& gpu, const std::string& file, const std::string& path) const {
  if (const ServerPrice* s = find_server(gpu)) return *s;
  std::string known;
  for (const auto& [name, _] : servers_) known += (known.empty() ? "" : ", ") + name;
  throw ConfigError(file, path, "no server with GPU \"" + gpu + "\" in the price catalog " + file_ +
                                    " (it prices: " + known + "); add one under /servers or pass --prices FILE");
}

const SwitchPrice* PriceCatalog::find_switch(NetworkFamily family, Bandwidth port_speed) const {
  for (const SwitchPrice& s : switches_) {
    if (s.family == family && s.port_speed == port_speed) return &s;
  }
  return nullptr;
}

const LinkPrice* PriceCatalog::find_link(Bandwidth speed) const {
  for (const LinkPrice& l : links_) {
    if (l.speed == speed) return &l;
  }
  return nullptr;
}

const SourcedFact* PriceCatalog::fact(const std::string& path) const {
  auto it = facts_.find(path);
  return it == facts_.end() ? nullptr : &it->second;
}

std::vector<SourcedFact> PriceCatalog::judgements(const std::vector<std::string>& paths) const {
  std::vector<SourcedFact> out;
  for (const std::string& p : paths) {
    const SourcedFact* f = fact(p);
    if (f != nullptr && f->is_judgement() &&
        std::none_of(out.begin(), out.end(), [&](const SourcedFact& o) { return o.path == p; })) {
      out.push_back(*f);
    }
  }
  return out;
}

}  // namespace cs::cost
