#include "topology/export_dot.h"

#include <sstream>

namespace cs::topo {
namespace {

// A double-quoted Graphviz ID.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

const char* shape(NodeKind k) {
  switch (k) {
    case NodeKind::kGpu:
      return "box";
    case NodeKind::kNic:
      return "diamond";
    case NodeKind::kHost:
      return "box3d";
    case NodeKind::kStorage:
      return "cylinder";
    default:
      return "ellipse";  // every switch kind
  }
}

}  // namespace

std::string export_dot(const Cluster& c) {
  std::ostringstream out;
  out << "digraph " << quoted(c.name()) << " {\n";
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const NodeInfo& n = c.node(NodeId{static_cast<std::uint32_t>(i)});
    out << "  " << quoted(n.name) << " [shape=" << shape(n.kind) << "];\n";
  }
  for (std::size_t i = 0; i < c.link_count(); ++i) {
    const LinkId id{static_cast<std::uint32_t>(i)};
    const LinkInfo& l = c.link(id);
    bool cable = false;
    if (l.reverse.valid()) {
      const LinkInfo& r = c.link(l.reverse);
      cable = r.reverse == id && r.bandwidth == l.bandwidth && r.link_class == l.link_class;
    }
    if (cable && l.reverse.value < id.value) continue;  // drawn with its partner
    out << "  " << quoted(c.node(l.src).name) << " -> " << quoted(c.node(l.dst).name)
        << " [label=" << quoted(format_bandwidth(l.bandwidth) + " " + to_string(l.link_class))
        << (cable ? ", dir=both" : "") << "];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace cs::topo
