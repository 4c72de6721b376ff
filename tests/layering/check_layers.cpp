// Checks that every #include of the source tree follows the allowed layer edges of
// cmake/layers.json (docs/architecture.md, "Layers"):
//
//   check_layers SOURCE_ROOT LAYERS_JSON [--docs FILE]   violations, one line each; exit 1 if any
//   check_layers SOURCE_ROOT LAYERS_JSON --print-table   the markdown table docs print
//
// A file belongs to the layer whose folder is the longest prefix of its path (relative to
// SOURCE_ROOT). For each `#include "x/y.h"` the header's layer is found the same way; it must be
// the file's own layer or one the file's layer `uses`. For each `#include <...>` that starts with
// an `external` prefix, the file's layer must be one that the entry names. Layers whose `uses` is
// "*" (tests, benchmarks) may include anything. The file itself is checked too: a layer may use
// only layers listed before it (the edges form a DAG in file order). With --docs, FILE must hold
// the table (--print-table) between the lines <!-- layers:begin --> and <!-- layers:end -->.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct Layer {
  std::string name;
  std::vector<std::string> folders;
  bool uses_all = false;
  std::set<std::string> uses;
  std::vector<std::string> uses_in_order;
  std::string holds;
};

struct External {
  std::string prefix;
  std::set<std::string> layers;
  std::string why;
};

struct Rules {
  std::vector<Layer> layers;
  std::vector<External> external;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Rules load_rules(const fs::path& file, std::vector<std::string>& problems) {
  const nlohmann::json j = nlohmann::json::parse(read(file));
  Rules r;
  std::set<std::string> seen;
  for (const auto& l : j.at("layers")) {
    Layer layer;
    layer.name = l.at("name").get<std::string>();
    layer.folders = l.at("folders").get<std::vector<std::string>>();
    layer.holds = l.value("holds", "");
    if (l.at("uses").is_string()) {
      layer.uses_all = l.at("uses").get<std::string>() == "*";
    } else {
      for (const auto& u : l.at("uses")) {
        const std::string name = u.get<std::string>();
        if (!seen.count(name)) {
          problems.push_back(file.string() + ": layer " + layer.name + " uses " + name +
                             ", which is not a layer listed before it (the edges must point down)");
        }
        layer.uses.insert(name);
        layer.uses_in_order.push_back(name);
      }
    }
    seen.insert(layer.name);
    r.layers.push_back(std::move(layer));
  }
  for (const auto& e : j.at("external")) {
    External x;
    x.prefix = e.at("include").get<std::string>();
    for (const auto& l : e.at("layers")) x.layers.insert(l.get<std::string>());
    x.why = e.value("why", "");
    r.external.push_back(std::move(x));
  }
  return r;
}

// The layer of a path relative to the source root: the longest folder prefix; nullptr if none.
const Layer* layer_of(const Rules& r, const std::string& path) {
  const Layer* best = nullptr;
  std::size_t best_len = 0;
  for (const Layer& l : r.layers) {
    for (const std::string& f : l.folders) {
      if (path.size() > f.size() && path.compare(0, f.size(), f) == 0 && path[f.size()] == '/' && f.size() > best_len) {
        best = &l;
        best_len = f.size();
      }
    }
  }
  return best;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "nothing else" : out;
}

void check_file(const Rules& r, const std::string& rel, const std::string& text, std::vector<std::string>& problems) {
  const Layer* own = layer_of(r, rel);
  if (own == nullptr || own->uses_all) return;
  static const std::regex quoted(R"re(^\s*#\s*include\s*"([^"]+)")re");
  static const std::regex angled(R"re(^\s*#\s*include\s*<([^>]+)>)re");
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch m;
    const std::string where = rel + ":" + std::to_string(number) + ": ";
    if (std::regex_search(line, m, quoted)) {
      const std::string header = m[1];
      const Layer* theirs = layer_of(r, header);
      if (theirs == nullptr) {
        problems.push_back(where + "\"" + header + "\" is in no layer of cmake/layers.json");
      } else if (theirs != own && !own->uses.count(theirs->name)) {
        problems.push_back(where + "layer " + own->name + " may not include \"" + header + "\" (layer " + theirs->name + "); " +
                           own->name + " may use " + join(own->uses_in_order));
      }
    } else if (std::regex_search(line, m, angled)) {
      const std::string header = m[1];
      for (const External& x : r.external) {
        if (header.compare(0, x.prefix.size(), x.prefix) == 0 && !x.layers.count(own->name)) {
          std::vector<std::string> allowed(x.layers.begin(), x.layers.end());
          problems.push_back(where + "layer " + own->name + " may not include <" + header + ">: " + x.prefix + " is for " + join(allowed) +
                             " only (" + x.why + ")");
        }
      }
    }
  }
}

std::string table(const Rules& r) {
  std::string out = "| layer | folders | may include | holds |\n| --- | --- | --- | --- |\n";
  for (const Layer& l : r.layers) {
    std::string folders;
    for (const auto& f : l.folders) folders += (folders.empty() ? "" : ", ") + f + "/";
    const std::string uses = l.uses_all ? "everything" : l.uses_in_order.empty() ? "-" : join(l.uses_in_order);
    out += "| " + l.name + " | " + folders + " | " + uses + " | " + l.holds + " |\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_layers SOURCE_ROOT LAYERS_JSON [--docs FILE | --print-table]\n";
    return 2;
  }
  const fs::path root = argv[1];
  std::vector<std::string> problems;
  const Rules rules = load_rules(argv[2], problems);
  if (argc == 4 && std::string(argv[3]) == "--print-table") {
    std::cout << table(rules);
    return 0;
  }
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name[0] == '.')) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (it->is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".cu")) {
      files.push_back(fs::relative(it->path(), root).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) check_file(rules, f, read(root / f), problems);
  if (argc == 5 && std::string(argv[3]) == "--docs") {
    const std::string doc = read(argv[4]);
    const std::string begin = "<!-- layers:begin -->\n", end = "<!-- layers:end -->";
    const auto b = doc.find(begin), e = doc.find(end);
    if (b == std::string::npos || e == std::string::npos || doc.substr(b + begin.size(), e - b - begin.size()) != table(rules)) {
      problems.push_back(std::string(argv[4]) + ": the layer table between " + begin.substr(0, begin.size() - 1) + " and " + end +
                         " is not the one cmake/layers.json gives (check_layers ... --print-table prints it)");
    }
  }
  for (const std::string& p : problems) std::cout << p << "\n";
  std::cout << files.size() << " files checked, " << problems.size() << " violation" << (problems.size() == 1 ? "" : "s") << "\n";
  return problems.empty() ? 0 : 1;
}
