#include "apps/cmd_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/cli_common.h"
#include "apps/cmd_cost.h"
#include "cost/price_catalog.h"
#include "apps/sweep_mpi.h"
#include "core/errors.h"
#include "core/output_file.h"

namespace cs::cli {
namespace {

// "I/N" with 1 <= I <= N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  long long i = 0, n = 0;
  char tail = 0;
  if (slash == std::string::npos || std::sscanf(text.c_str(), "%lld/%lld%c", &i, &n, &tail) != 2 || n < 1 || i < 1 || i > n ||
      n > 1'000'000) {
    throw ConfigError("", "--shard", "expected I/N with 1 <= I <= N, such as 2/8 (the second of eight shards); got \"" + text + "\"");
  }
  return {static_cast<std::size_t>(i), static_cast<std::size_t>(n)};
}

std::string cell_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

int dry_run(const SweepOptions& o, const SweepSetup& setup) {
  const drv::Sweep& s = setup.sweep;
  if (o.json) {
    nlohmann::ordered_json out;
    out["sweep"] = s.name;
    out["schema"] = results::kSweepSchemaVersion;
    out["points"] = s.points.size();
    out["parameters"] = s.columns();
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (std::size_t i : setup.todo) {
      nlohmann::ordered_json p;
      p["point"] = i;
      for (std::size_t c = 0; c < s.parameters.size(); ++c) p[s.parameters[c].name] = s.points[i][c];
      list.push_back(p);
    }
    out["run"] = list;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::string> header = {"point"};
  for (const std::string& c : s.columns()) header.push_back(c);
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i : setup.todo) {
    std::vector<std::string> row = {std::to_string(i)};
    for (const nlohmann::json& v : s.points[i]) row.push_back(cell_text(v));
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    rows.push_back(std::move(row));
  }
  std::cout << "clustersim sweep: " << s.name << ": " << s.points.size() << " point" << (s.points.size() == 1 ? "" : "s");
  if (setup.todo.size() != s.points.size()) std::cout << ", " << setup.todo.size() << " in this shard";
  std::cout << " (dry run: nothing simulated)\n";
  const auto print = [&](const std::vector<std::string>& row) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) line += " " + row[c] + std::string(width[c] - row[c].size() + 1, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  };
  print(header);
  for (const auto& row : rows) print(row);
  return 0;
}

}  // namespace

SweepCommands add_sweep_commands(CLI::App& app, SweepOptions& o, SweepOptions& m) {
  SweepCommands c;
  c.sweep = app.add_subcommand("sweep", "Simulate every point of a sweep (a base experiment and parameters that vary it)");
  c.sweep->add_option("sweep", o.sweep, "Sweep file (docs/sweep-format.md)");  // checked in prepare_sweep: `sweep merge` has none
  c.sweep->add_option("--out", o.out, "Results file: .csv or .jsonl, one row per point, written as points finish");
  c.sweep->add_option("--jobs", o.jobs, "Points simulated at once (threads; default 1)")->check(CLI::Range(1, 1024));
  c.sweep->add_flag("--resume", o.resume, "Continue a results file: keep its rows, run the points not in it");
  c.sweep->add_flag("--force", o.force, "Start an existing results file over");
  c.sweep->add_option("--shard", o.shard, "Run shard I of N (every N-th point from the I-th), for job arrays; join with `sweep merge`");
  c.sweep->add_flag("--dry-run", o.dry_run, "List the points (of the shard) without simulating");
  c.sweep->add_flag("--json", o.json, "With --dry-run: the points as JSON");
  add_price_options(*c.sweep, o.prices, o.price_overrides);
  c.merge = c.sweep->add_subcommand("merge", "Join the results files of a sweep's shards into one, in point order");
  c.merge->add_option("sweep", m.sweep, "Sweep file the shards ran")->required();
  c.merge->add_option("parts", m.parts, "The shards' results files")->required();
  c.merge->add_option("--out", m.out, "Merged results file (.csv or .jsonl, as the parts)")->required();
  return c;
}

SweepSetup prepare_sweep(const SweepOptions& o) {
  SweepSetup setup;
  if (o.sweep.empty()) throw ConfigError("", "sweep", "expected a sweep file: clustersim sweep SWEEP.json --out results.csv");
  if (!o.dry_run) {
    if (o.out.empty()) throw ConfigError("", "--out", "expected a results file (.csv or .jsonl); --dry-run lists the points without one");
    setup.format = drv::sweep_format_of(o.out, "--out");
  }
  if (o.resume && o.force) throw ConfigError("", "--force", "--force starts the results file over and --resume continues it; give one");
  if (o.json && !o.dry_run) throw ConfigError("", "--json", "--json lists the points of --dry-run; the results file holds the rows");
  std::pair<std::size_t, std::size_t> shard{1, 1};
  if (!o.shard.empty()) shard = parse_shard(o.shard);
  setup.sweep = drv::load_sweep(o.sweep);
  // The price catalog is checked once, before any point runs: its errors are the command's.
  (void)cost::PriceCatalog::load(o.prices, o.price_overrides);
  setup.sweep.prices = o.prices;
  setup.sweep.price_overrides = o.price_overrides;
  setup.todo = drv::sweep_shard(setup.sweep.points.size(), shard.first, shard.second);
  return setup;
}

std::unique_ptr<drv::SweepResultsFile> open_results(const SweepOptions& o, const SweepSetup& setup) {
  std::vector<std::string> keys;
  keys.reserve(setup.todo.size());
  for (std::size_t i : setup.todo) keys.push_back(drv::sweep_point_key(setup.sweep, i, setup.format));
  using Mode = drv::SweepResultsFile::Mode;
  const Mode mode = o.resume ? Mode::kResume : o.force ? Mode::kForce : Mode::kFresh;
  return std::make_unique<drv::SweepResultsFile>(o.out, setup.format, results::sweep_header(setup.format, setup.sweep.columns()),
                                                 setup.sweep.parameters.size(), std::move(keys), mode, "--out");
}

std::function<void(const drv::SweepCounts&)> sweep_progress(bool enabled) {
  if (!enabled) return {};
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [last](const drv::SweepCounts& c) {
    const auto now = std::chrono::steady_clock::now();
    const std::size_t finished = c.already + c.done;
    if (finished < c.total && now - *last < std::chrono::milliseconds(200)) return;
    *last = now;
    const double rate = c.elapsed_s > 0 ? static_cast<double>(c.done) / c.elapsed_s : 0;
    const double left = rate > 0 ? static_cast<double>(c.total - finished) / rate : 0;
    char line[200];
    std::snprintf(line, sizeof line, "\r  sweep: %zu/%zu points, %.2f/s, %s left, %zu not ok   ", finished, c.total, rate,
                  left >= 60 ? (std::to_string(static_cast<long>(left / 60)) + " min").c_str() : (std::to_string(static_cast<long>(left)) + " s").c_str(),
                  c.invalid + c.out_of_memory + c.errors);
    std::cerr << line << std::flush;
  };
}

int finish_sweep(const SweepOptions& o, const SweepSetup& setup, const drv::SweepCounts& c, bool progress_shown) {
  if (progress_shown) std::cerr << "\r" << std::string(78, ' ') << "\r";
  std::cout << "clustersim sweep: " << setup.sweep.name << ": " << c.total << " point" << (c.total == 1 ? "" : "s");
  if (setup.todo.size() != setup.sweep.points.size()) std::cout << " (shard " << o.shard << " of " << setup.sweep.points.size() << ")";
  if (c.already > 0) std::cout << ", " << c.already << " already in " << o.out;
  std::cout << "; ran " << c.done << ": " << c.ok << " ok, " << c.invalid << " invalid, " << c.out_of_memory << " out of memory";
  if (c.errors > 0) std::cout << ", " << c.errors << " internal errors";
  if (c.done > 0) std::cout << " (" << fixed(static_cast<double>(c.done) / std::max(c.elapsed_s, 1e-9), 2) << " points/s)";
  std::cout << "\n  rows: " << o.out << "\n";
  return c.errors > 0 ? 1 : 0;
}

int run_sweep_command(const SweepOptions& o) {
  if (mpi_world_size() > 1) return run_sweep_mpi(o);
  const SweepSetup setup = prepare_sweep(o);
  if (o.dry_run) return dry_run(o, setup);
  const std::unique_ptr<drv::SweepResultsFile> out = open_results(o, setup);
  const bool progress = stderr_is_terminal();
  drv::SweepWork work(setup.sweep, setup.format, setup.todo, *out, sweep_progress(progress));
  work.run(o.jobs);
  return finish_sweep(o, setup, work.counts(), progress);
}

int run_sweep_merge(const SweepOptions& o) {
  const results::RowFormat format = drv::sweep_format_of(o.out, "--out");
  const drv::Sweep s = drv::load_sweep(o.sweep);
  const std::string text = drv::merge_sweep_parts(s, format, o.parts);
  write_output_file(o.out, text, "--out");
  std::cout << "clustersim sweep merge: " << s.name << ": " << s.points.size() << " points from " << o.parts.size() << " part"
            << (o.parts.size() == 1 ? "" : "s") << " -> " << o.out << "\n";
  return 0;
}

}  // namespace cs::cli
