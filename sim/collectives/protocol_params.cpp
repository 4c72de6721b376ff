#include "sim/collectives/protocol_params.h"

#include "core/errors.h"
#include "core/sourced_value.h"

namespace cs::coll {
namespace {

double efficiency_of(const ConfigNode& v) {
  const double e = v.as_number();
  // Below 1% a link would be slower than any fabric clustersim models (docs/cli.md, "Limits").
  if (!(e >= 0.01 && e <= 1)) v.fail_expected("a number from 0.01 to 1");
  return e;
}

double ll_wire_factor_of(const ConfigNode& v) {
  const double f = v.as_number();
  // LL moves 8-byte lines of 4 bytes of data and 4 of flags (2), LL128 120 of 128 bytes.
  if (!(f >= 1 && f <= 4)) v.fail_expected("a number from 1 to 4 (wire bytes per payload byte)");
  return f;
}

int nvls_channels_of(const ConfigNode& v) {
  const double c = v.as_number();
  if (!(c >= 1 && c <= 64 && c == static_cast<double>(static_cast<int>(c)))) v.fail_expected("an integer in [1, 64]");
  return static_cast<int>(c);
}

Bytes positive_bytes_of(const ConfigNode& v) {
  const Bytes b = v.as_bytes();
  if (!(b.value() > 0)) v.fail_expected("a positive size");
  return b;
}

}  // namespace

void ProtocolParams::replaced(const std::string& path, const std::string& value, const std::string& kind,
                              const std::string& status, const std::string& source) {
  SourcedFact& f = facts[path];
  f.path = path;
  f.value = value;
  f.kind = kind;
  f.status = status;
  f.source = source;
}

ProtocolParams ProtocolParams::from_documents(const std::vector<std::pair<std::string, std::string>>& name_and_text) {
  ProtocolParams p;
  std::vector<SourcedFact> facts;
  bool class_seen[hw::kLinkClassCount] = {};
  bool model_seen = false;
  for (const auto& [name, text] : name_and_text) {
    const ConfigDocument doc = ConfigDocument::parse(text, name);
    const ConfigNode root = doc.root();
    root.expect_only({"description", "link_classes", "collective_model"});
    if (auto d = root.find("description")) d->as_string();
    if (auto classes = root.find("link_classes")) {
      classes->expect_only(enum_names(hw::kLinkClassNames));
      for (const auto& [class_name, node] : classes->members()) {
        const hw::LinkClass cls = *parse_enum(hw::kLinkClassNames, class_name);
        const auto i = static_cast<std::size_t>(cls);
        if (class_seen[i]) node.fail("link class \"" + class_name + "\" is defined twice");
        class_seen[i] = true;
        node.expect_only({"description", "efficiency", "step_latency", "ll_step_latency"});
        if (auto d = node.find("description")) d->as_string();
        LinkClassProtocol& c = p.link_classes[i];
        c.efficiency = efficiency_of(sourced_value(node.at("efficiency"), &facts));
        c.step_latency = sourced_value(node.at("step_latency"), &facts).as_duration();
        c.ll_step_latency = sourced_value(node.at("ll_step_latency"), &facts).as_duration();
      }
    }
    if (auto model = root.find("collective_model")) {
      if (model_seen) model->fail("\"collective_model\" is defined twice");
      model_seen = true;
      model->expect_only({"description", "launch_latency", "ll_wire_factor", "nvls_base_latency",
                          "nvls_step_latency", "nvls_channels", "nvls_max_chunk"});
      if (auto d = model->find("description")) d->as_string();
      p.launch_latency = sourced_value(model->at("launch_latency"), &facts).as_duration();
      p.ll_wire_factor = ll_wire_factor_of(sourced_value(model->at("ll_wire_factor"), &facts));
      p.nvls_base_latency = sourced_value(model->at("nvls_base_latency"), &facts).as_duration();
      p.nvls_step_latency = sourced_value(model->at("nvls_step_latency"), &facts).as_duration();
      p.nvls_channels = nvls_channels_of(sourced_value(model->at("nvls_channels"), &facts));
      p.nvls_max_chunk = positive_bytes_of(sourced_value(model->at("nvls_max_chunk"), &facts));
    }
  }
  for (SourcedFact& f : facts) p.facts.emplace(f.path, std::move(f));
  for (int i = 0; i < hw::kLinkClassCount; ++i) {
    if (!class_seen[i]) {
      throw ConfigError(name_and_text.empty() ? "" : name_and_text.front().first, "/link_classes",
                        std::string("no parameters for the link class \"") + hw::to_string(static_cast<hw::LinkClass>(i)) + "\"");
    }
  }
  return p;
}

const ProtocolParams& ProtocolParams::builtin() {
  static const ProtocolParams params = from_documents(builtin_protocol_documents());
  return params;
}

ProtocolParams parse_protocol_overrides(const ConfigNode& cluster_root, ProtocolParams base) {
  // A value the cluster file sets is the user's: its path in the file is the defaults' path.
  auto set_by_file = [&](const ConfigNode& v) {
    base.replaced(v.path(), v.is_string() ? v.as_string() : v.json().dump(), "user", "user: set by " + v.file() + " at " + v.path(),
                  v.file());
  };
  if (auto classes = cluster_root.find("link_classes")) {
    classes->expect_only(enum_names(hw::kLinkClassNames));
    for (const auto& [name, node] : classes->members()) {
      node.expect_only({"efficiency", "step_latency", "ll_step_latency", "latency"});
      LinkClassProtocol& c = base.of(*parse_enum(hw::kLinkClassNames, name));
      if (auto e = node.find("efficiency")) {
        c.efficiency = efficiency_of(*e);
        set_by_file(*e);
      }
      if (auto s = node.find("step_latency")) {
        c.step_latency = s->as_duration();
        set_by_file(*s);
      }
      if (auto s = node.find("ll_step_latency")) {
        c.ll_step_latency = s->as_duration();
        set_by_file(*s);
      }
      if (auto l = node.find("latency")) set_by_file(*l);  // the topology's: recorded, not used here
    }
  }
  if (auto model = cluster_root.find("collective_model")) {
    model->expect_only({"launch_latency", "ll_wire_factor", "nvls_base_latency", "nvls_step_latency",
                        "nvls_channels", "nvls_max_chunk"});
    if (auto l = model->find("launch_latency")) {
      base.launch_latency = l->as_duration();
      set_by_file(*l);
    }
    if (auto f = model->find("ll_wire_factor")) {
      base.ll_wire_factor = ll_wire_factor_of(*f);
      set_by_file(*f);
    }
    if (auto l = model->find("nvls_base_latency")) {
      base.nvls_base_latency = l->as_duration();
      set_by_file(*l);
    }
    if (auto l = model->find("nvls_step_latency")) {
      base.nvls_step_latency = l->as_duration();
      set_by_file(*l);
    }
    if (auto c = model->find("nvls_channels")) {
      base.nvls_channels = nvls_channels_of(*c);
      set_by_file(*c);
    }
    if (auto c = model->find("nvls_max_chunk")) {
      base.nvls_max_chunk = positive_bytes_of(*c);
      set_by_file(*c);
    }
  }
  return base;
}

}  // namespace cs::coll
