#include "drivers/sweep.h"

#include <filesystem>
#include <algorithm>
#include <map>
#include <optional>
#include <new>
#include <set>

#include "core/checked.h"
#include "core/errors.h"
#include "drivers/config_paths.h"
#include "drivers/training_run.h"
#include "hardware/catalog.h"
#include "sim/collectives/machine.h"

namespace cs::drv {

namespace fs = std::filesystem;

namespace {

// Where each value of each parameter first appears in the sweep file, for errors.
using ValuePaths = std::vector<std::vector<std::pair<nlohmann::json, std::string>>>;

// "cluster:/fabric/spines" -> (kCluster, "/fabric/spines").
SweepParameter parse_parameter(const ConfigNode& n) {
  const std::string text = n.as_string();
  SweepParameter p;
  p.name = text;
  std::string pointer = text;
  for (const auto& [prefix, target] : {std::pair<std::string, SweepTarget>{"cluster:", SweepTarget::kCluster},
                                       std::pair<std::string, SweepTarget>{"hardware:", SweepTarget::kHardware}}) {
    if (text.rfind(prefix, 0) == 0) {
      p.target = target;
      pointer = text.substr(prefix.size());
    }
  }
  if (pointer.empty() || pointer[0] != '/') {
    n.fail_expected("a JSON pointer into the experiment (\"/plan/tp\"), its cluster (\"cluster:/fabric/spines\") or the hardware catalog (\"hardware:/gpus/...\")");
  }
  try {
    (void)nlohmann::json::json_pointer(pointer);
  } catch (const nlohmann::json::exception&) {
    n.fail("\"" + pointer + "\" is not a JSON pointer (RFC 6901: \"/key/key\", \"~1\" for '/', \"~0\" for '~')");
  }
  p.pointer = pointer;
  return p;
}

bool same_kind(const nlohmann::json& base, const nlohmann::json& v) {
  if (base.is_number_integer() || base.is_number_unsigned()) return v.is_number_integer() || v.is_number_unsigned();
  if (base.is_number()) return v.is_number();
  return base.type() == v.type();
}

const char* kind_name(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "true or false";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// Whether `path` is `pointer` or inside it.
bool within(const std::string& path, const std::string& pointer) {
  return path == pointer || path.rfind(pointer + "/", 0) == 0;
}

// The experiment document of a point: the base with the point's experiment values.
nlohmann::json point_document(const Sweep& s, const std::vector<nlohmann::json>& values) {
  nlohmann::json doc = s.base;
  for (std::size_t p = 0; p < s.parameters.size(); ++p) {
    if (s.parameters[p].target == SweepTarget::kExperiment) doc[nlohmann::json::json_pointer(s.parameters[p].pointer)] = values[p];
  }
  return doc;
}

Experiment parse_point(const Sweep& s, const nlohmann::json& doc) {
  if (s.base_path.empty()) return parse_experiment(ConfigDocument::from_json(doc, s.base_file).root(), s.base_dir);
  const ConfigDocument wrapped = ConfigDocument::from_json(nlohmann::json{{s.base_path.substr(1), doc}}, s.base_file);
  return parse_experiment(wrapped.root().at(s.base_path.substr(1)), s.base_dir);
}

std::string assignment(const SweepParameter& p, const nlohmann::json& v) { return p.pointer + "=" + v.dump(); }

// Expands "axes" into points: a cartesian product of axes, each a parameter or a zip of several.
void expand_axes(const ConfigNode& axes, Sweep& s, ValuePaths& paths) {
  if (axes.size() == 0) axes.fail_expected("at least one axis");
  struct Group {
    std::vector<std::size_t> parameters;
    std::vector<ConfigNode> values;  // per parameter, its "values" array
    std::size_t length = 0;
  };
  std::vector<Group> groups;
  for (const ConfigNode& a : axes.elements()) {
    Group g;
    std::vector<ConfigNode> members;
    if (a.has("zip")) {
      a.expect_only({"zip"});
      if (a.at("zip").size() < 2) a.at("zip").fail_expected("two or more axes to zip");
      members = a.at("zip").elements();
    } else {
      members = {a};
    }
    for (const ConfigNode& m : members) {
      m.expect_only({"set", "name", "values"});
      SweepParameter p = parse_parameter(m.at("set"));
      if (auto name = m.find("name")) {
        p.name = name->as_string();
        if (p.name.empty()) name->fail_expected("a column name");
      }
      const ConfigNode values = m.at("values");
      if (!values.is_array() || values.size() == 0) values.fail_expected("a non-empty array of values");
      if (g.length != 0 && values.size() != g.length) {
        values.fail("zipped axes must have as many values each; the first has " + std::to_string(g.length) + ", this one " + std::to_string(values.size()));
      }
      g.length = values.size();
      g.parameters.push_back(s.parameters.size());
      g.values.push_back(values);
      s.parameters.push_back(p);
      paths.emplace_back();
      for (const ConfigNode& v : values.elements()) paths.back().emplace_back(v.json(), v.path());
    }
    groups.push_back(std::move(g));
  }
  std::size_t total = 1;
  for (const Group& g : groups) {
    total = static_cast<std::size_t>(saturating_product({static_cast<std::int64_t>(total), static_cast<std::int64_t>(g.length)}));
    if (total > kMaxSweepPoints) {
      axes.fail("the axes make more than " + std::to_string(kMaxSweepPoints) + " points; split the sweep into several files");
    }
  }
  s.points.assign(total, std::vector<nlohmann::json>(s.parameters.size()));
  std::size_t stride = total;
  for (const Group& g : groups) {
    stride /= g.length;  // the first axis varies slowest
    for (std::size_t i = 0; i < total; ++i) {
      const std::size_t j = (i / stride) % g.length;
      for (std::size_t m = 0; m < g.parameters.size(); ++m) s.points[i][g.parameters[m]] = g.values[m].at(j).json();
    }
  }
}

// Reads "points": a list of objects naming the same parameters.
void read_points(const ConfigNode& list, Sweep& s, ValuePaths& paths) {
  if (!list.is_array() || list.size() == 0) list.fail_expected("a non-empty array of points, each an object of parameter: value");
  if (list.size() > kMaxSweepPoints) list.fail("more than " + std::to_string(kMaxSweepPoints) + " points; split the sweep into several files");
  const ConfigNode first = list.at(std::size_t{0});
  if (!first.is_object() || first.members().empty()) first.fail_expected("an object of parameter: value, such as {\"/plan/tp\": 2}");
  std::vector<std::string> keys;
  for (const auto& [key, node] : first.members()) {
    (void)node;
    keys.push_back(key);
    // The key is the parameter; checked as a value would be, so an error names it.
    const ConfigDocument doc = ConfigDocument::from_json(nlohmann::json(key), list.file());
    s.parameters.push_back(parse_parameter(ConfigNode(&doc.json(), std::make_shared<const std::string>(list.file()), first.path())));
    paths.emplace_back();
  }
  for (const ConfigNode& p : list.elements()) {
    if (!p.is_object()) p.fail_expected("an object of parameter: value");
    std::vector<nlohmann::json> values;
    const auto members = p.members();
    if (members.size() != keys.size()) p.fail("every point names the same parameters as the first (" + std::to_string(keys.size()) + ")");
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto v = p.find(keys[k]);
      if (!v) p.fail("every point names the same parameters as the first; this one has no \"" + keys[k] + "\"");
      values.push_back(v->json());
      paths[k].emplace_back(v->json(), v->path());
    }
    s.points.push_back(std::move(values));
  }
}

// The sweep error for value `v` of parameter `p`: at the value's place in the sweep file.
[[noreturn]] void fail_value(const Sweep& s, const ValuePaths& paths, std::size_t p, const nlohmann::json& v, const std::string& message) {
  std::string where;
  for (const auto& [value, path] : paths[p]) {
    if (value == v) {
      where = path;
      break;
    }
  }
  throw ConfigError(s.file, where, s.parameters[p].name + " = " + v.dump() + ": " + message);
}

// Tries every distinct value of every parameter on the base (one change at a time): a value its
// target refuses at the parameter's own place is the sweep file's error.
void check_values(const Sweep& s, const ValuePaths& paths) {
  std::set<std::string> clusters;  // every cluster the points use
  std::optional<std::size_t> cluster_parameter;
  for (std::size_t p = 0; p < s.parameters.size(); ++p) {
    const SweepParameter& par = s.parameters[p];
    if (par.target == SweepTarget::kExperiment && par.pointer == "/cluster") cluster_parameter = p;
  }
  const auto resolve_cluster = [&](const nlohmann::json& ref) {
    return ref.is_string() ? resolve_config(ref.get<std::string>(), s.base_dir, "clusters") : std::string();
  };
  if (cluster_parameter) {
    for (const auto& point : s.points) clusters.insert(resolve_cluster(point[*cluster_parameter]));
  } else if (s.base.contains("cluster")) {
    clusters.insert(resolve_cluster(s.base["cluster"]));
  }
  for (std::size_t p = 0; p < s.parameters.size(); ++p) {
    const SweepParameter& par = s.parameters[p];
    std::vector<nlohmann::json> distinct;
    for (const auto& point : s.points) {
      if (std::find(distinct.begin(), distinct.end(), point[p]) == distinct.end()) distinct.push_back(point[p]);
    }
    for (const nlohmann::json& v : distinct) {
      if (par.target == SweepTarget::kExperiment) {
        const nlohmann::json::json_pointer ptr(par.pointer);
        // What the value creates: the pointer itself, or the first of its parents the base lacks
        // ("/options/profile" creates "/options" when the base has no options); it must hang off
        // an object.
        nlohmann::json::json_pointer created = ptr;
        while (!created.parent_pointer().empty() && !s.base.contains(created.parent_pointer())) created = created.parent_pointer();
        if (s.base.contains(ptr)) {
          if (!same_kind(s.base.at(ptr), v)) {
            fail_value(s, paths, p, v, std::string("expected ") + kind_name(s.base.at(ptr)) + " as the experiment has at " + par.pointer);
          }
        } else if (!s.base.at(created.parent_pointer()).is_object()) {
          fail_value(s, paths, p, v, "the experiment has no object at " + created.parent_pointer().to_string() + " to hold " + par.pointer);
        }
        nlohmann::json doc = s.base;
        doc[ptr] = v;
        try {
          (void)parse_point(s, doc);
        } catch (const ConfigError& err) {
          // Refused at the value, or at a key it created (an unknown "/parallelism").
          if (err.file() == s.base_file && within(err.json_path(), s.base_path + created.to_string())) fail_value(s, paths, p, v, err.message());
        }
      } else if (par.target == SweepTarget::kCluster) {
        for (const std::string& cluster : clusters) {
          if (cluster.empty()) continue;
          try {
            (void)coll::load_machine(cluster, {assignment(par, v)});
          } catch (const InputError& err) {
            if (within(err.json_path(), par.pointer)) {
              fail_value(s, paths, p, v, "in " + cluster + ": " + err.message());
            }
          }
        }
      } else {
        try {
          (void)hw::Catalog::builtin_with({assignment(par, v)}, s.file, "hardware");
        } catch (const InputError& err) {
          fail_value(s, paths, p, v, err.message());
        }
      }
    }
  }
}

}  // namespace

std::vector<std::string> Sweep::columns() const {
  std::vector<std::string> out;
  for (const SweepParameter& p : parameters) out.push_back(p.name);
  return out;
}

Sweep load_sweep(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  const ConfigNode root = doc.root();
  root.expect_only({"name", "description", "experiment", "axes", "points"});
  Sweep s;
  s.file = path;
  s.name = root.has("name") ? root.at("name").as_string() : fs::path(path).stem().string();
  if (auto d = root.find("description")) d->as_string();
  const std::string dir = fs::path(path).parent_path().string();
  const ConfigNode experiment = root.at("experiment");
  if (experiment.is_object()) {
    s.base = experiment.json();
    s.base_file = path;
    s.base_path = "/experiment";
    s.base_dir = dir;
  } else {
    const std::string ref = experiment.as_string();
    if (ref.empty()) experiment.fail_expected("an experiment file or an experiment object");
    s.base_file = resolve_config(ref, dir, "examples");
    std::error_code ec;
    if (!fs::is_regular_file(s.base_file, ec)) experiment.fail("no experiment file \"" + s.base_file + "\"");
    const ConfigDocument base = ConfigDocument::load(s.base_file);
    if (!base.json().is_object()) ConfigNode(&base.json(), std::make_shared<const std::string>(s.base_file), "").fail_expected("an experiment object");
    s.base = base.json();
    s.base_dir = fs::path(s.base_file).parent_path().string();
  }
  ValuePaths paths;
  const bool axes = root.has("axes"), points = root.has("points");
  if (axes == points) root.fail("a sweep has either \"axes\" (a product of value lists) or \"points\" (a list of points)");
  if (axes) expand_axes(root.at("axes"), s, paths);
  else read_points(root.at("points"), s, paths);
  std::set<std::string> names = {"point"};
  for (const std::string& c : results::sweep_result_columns()) names.insert(c);
  std::set<std::string> pointers;
  for (std::size_t p = 0; p < s.parameters.size(); ++p) {
    const SweepParameter& par = s.parameters[p];
    if (!names.insert(par.name).second) {
      throw ConfigError(s.file, paths[p].front().second, "the column \"" + par.name + "\" is taken (by another parameter or a result column); give the axis another \"name\"");
    }
    const std::string key = std::to_string(static_cast<int>(par.target)) + par.pointer;
    if (!pointers.insert(key).second) throw ConfigError(s.file, paths[p].front().second, par.pointer + " is set by two axes");
  }
  check_values(s, paths);
  return s;
}

Experiment sweep_point_experiment(const Sweep& s, std::size_t i) {
  const std::vector<nlohmann::json>& values = s.points.at(i);
  Experiment e = parse_point(s, point_document(s, values));
  e.prices = s.prices;
  e.price_overrides = s.price_overrides;
  for (std::size_t p = 0; p < s.parameters.size(); ++p) {
    const SweepParameter& par = s.parameters[p];
    if (par.target == SweepTarget::kCluster) e.cluster_overrides.push_back(assignment(par, values[p]));
    if (par.target == SweepTarget::kHardware) {
      e.hardware_overrides.push_back(assignment(par, values[p]));
      if (e.hardware_overrides_where.empty()) e.hardware_overrides_where = "--set-hardware";
    }
  }
  return e;
}

std::string sweep_point_key(const Sweep& s, std::size_t i, results::RowFormat format) {
  return results::sweep_row_key(format, i, s.columns(), s.points.at(i));
}

PointResult run_sweep_point(const Sweep& s, std::size_t i, results::RowFormat format) {
  using results::PointStatus;
  PointResult r;
  std::vector<nlohmann::json> cells;
  const auto fail = [&](PointStatus status, const std::string& reason) {
    r.status = status;
    cells = results::sweep_failure_cells(status, escape_control(reason));
  };
  try {
    const results::TrainingRun run = simulate_training(sweep_point_experiment(s, i));
    cells = results::sweep_result_cells(run);
  } catch (const MemoryFitError& e) {
    fail(PointStatus::kOutOfMemory, e.what());
  } catch (const RangeError& e) {
    fail(PointStatus::kInvalid, "out of range: " + e.message());
  } catch (const InputError& e) {
    fail(PointStatus::kInvalid, e.what());
  } catch (const fs::filesystem_error& e) {
    fail(PointStatus::kInvalid, std::string("cannot use a path: ") + e.code().message());
  } catch (const std::bad_alloc&) {
    fail(PointStatus::kError, "out of memory: the point needs more memory than this machine has");
  } catch (const std::exception& e) {
    fail(PointStatus::kError, std::string("internal error: ") + e.what());
  }
  r.row = sweep_point_key(s, i, format) + results::sweep_row_rest(format, cells);
  return r;
}

}  // namespace cs::drv
