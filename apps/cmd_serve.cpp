#include "apps/cmd_serve.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include "apps/cli_common.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "drivers/serving_capacity.h"
#include "drivers/serving_sim.h"
#include "results/serving_report.h"

namespace cs::cli {
namespace {

nlohmann::json capacity_json(const char* search, const drv::CapacityResult& c) {
  nlohmann::json probes = nlohmann::json::array();
  for (const drv::CapacityProbe& p : c.probes) {
    probes.push_back({{"load", p.load}, {"rate_per_s", p.rate}, {"meets_slo", p.meets}, {"ttft_p90_s", p.metrics.ttft.p90},
                      {"tpot_p99_s", p.metrics.tpot.p99}, {"completed", p.metrics.completed}});
  }
  nlohmann::json best = nullptr;
  if (c.best) best = {{"load", c.best->load}, {"rate_per_s", c.best->rate}, {"ttft_p90_s", c.best->metrics.ttft.p90},
                      {"tpot_p99_s", c.best->metrics.tpot.p99}, {"output_tokens_per_s", c.best->metrics.output_tokens_per_s}};
  return {{"schema", "clustersim-serving-capacity"}, {"version", 1}, {"search", search}, {"best", best}, {"probes", probes}};
}

int run_capacity(const ServeOptions& o, const drv::ServingScenario& s) {
  const bool rate = o.max_rate;
  const drv::CapacityResult c = rate ? drv::find_max_rate(s) : drv::find_min_replicas(s);
  if (o.json) {
    std::cout << capacity_json(rate ? "max_rate" : "min_replicas", c).dump(2) << "\n";
    return 0;
  }
  std::cout << (rate ? "Highest request rate within the SLO" : "Fewest replicas within the SLO") << " (TTFT p90 <= "
            << fixed(to_seconds(s.slo.ttft) * 1e3, 0) << " ms, TPOT p99 <= " << fixed(to_seconds(s.slo.tpot) * 1e3, 0)
            << " ms; 0 = no bound)\n";
  std::cout << (rate ? "      load" : "  replicas") << "    rate/s  TTFT p90 (ms)  TPOT p99 (ms)  meets\n";
  for (const drv::CapacityProbe& p : c.probes) {
    char line[160];
    std::snprintf(line, sizeof line, "%10.*f %9.2f %14.1f %14.1f  %s\n", rate ? 3 : 0, p.load, p.rate,
                  p.metrics.ttft.p90 * 1e3, p.metrics.tpot.p99 * 1e3, p.meets ? "yes" : "no");
    std::cout << line;
  }
  if (!c.best) {
    std::cout << "No " << (rate ? "request rate" : "replica count") << " tried meets the SLO.\n";
  } else if (rate) {
    std::cout << "Highest: " << fixed(c.best->rate, 2) << " requests/s (" << fixed(c.best->metrics.output_tokens_per_s, 0)
              << " output tokens/s) on " << s.replicas << " replicas x TP " << s.tp << "\n";
  } else {
    std::cout << "Fewest: " << fixed(c.best->load, 0) << " replicas x TP " << s.tp << " = "
              << static_cast<int>(c.best->load) * s.tp << " GPUs at " << fixed(c.best->rate, 2) << " requests/s\n";
  }
  return 0;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* c = app.add_subcommand("serve", "Simulate inference serving: replicas, router, continuous batching, KV cache, failures");
  c->add_option("scenario", o.scenario, "Serving scenario file (docs/serving.md)")->required();
  c->add_option("--set", o.overrides, "Override a scenario value: /json/pointer=value (repeatable)");
  c->add_option("--out", o.out, "Write summary.json, requests.csv, timeline.csv, links.csv and trace.json to this folder (all or nothing)");
  c->add_flag("--force", o.force, "Replace the --out folder when it already holds files");
  c->add_flag("--json", o.json, "Print JSON (docs/serving.md) instead of the table");
  auto* rate = c->add_flag("--find-max-rate", o.max_rate, "Find the highest request rate that meets the scenario's SLO");
  c->add_flag("--find-replicas", o.min_replicas, "Find the fewest replicas that meet the scenario's SLO at its request rate")
      ->excludes(rate);
  return c;
}

int run_serve_command(const ServeOptions& o) {
  const drv::ServingScenario s = drv::load_serving_scenario(o.scenario, o.overrides);
  if (o.max_rate || o.min_replicas) {
    if (!o.out.empty()) throw ConfigError("", "--out", "--out writes one simulation's files; capacity searches print their probes");
    return run_capacity(o, s);
  }
  std::optional<OutputFolder> folder;
  if (!o.out.empty()) folder.emplace(o.out, "--out", o.force, std::vector<std::string>{"summary.json", "requests.csv", "timeline.csv", "links.csv", "trace.json"});
  const results::ServingRun run = drv::simulate_serving(s);
  print_warnings(run.warnings);
  const results::ServingMetrics m = results::serving_metrics(run);
  const nlohmann::json summary = results::serving_summary_json(run, m);
  if (folder) {
    folder->write("summary.json", summary.dump(2) + "\n");
    folder->write("requests.csv", results::serving_requests_csv(run));
    folder->write("timeline.csv", results::serving_timeline_csv(run));
    folder->write("links.csv", results::serving_links_csv(run));
    folder->write("trace.json", results::serving_trace_json(run));
    folder->commit();
  }
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << results::serving_table(run, m);
  }
  return 0;
}

}  // namespace cs::cli
