#include "apps/cmd_schedule.h"

#include <iostream>
#include <optional>

#include "apps/cli_common.h"
#include "core/output_file.h"
#include "drivers/cluster_scheduler.h"
#include "results/schedule_report.h"

namespace cs::cli {

CLI::App* add_schedule_command(CLI::App& app, ScheduleOptions& o) {
  auto* c = app.add_subcommand("schedule", "Simulate a shared cluster: a job stream, a queueing policy, placement, network interference");
  c->add_option("scenario", o.scenario, "Scheduling scenario file (docs/scheduling.md)")->required();
  c->add_option("--set", o.overrides, "Override a scenario value: /json/pointer=value (repeatable)");
  c->add_option("--out", o.out, "Write summary.json, jobs.csv, timeline.csv, links.csv and trace.json to this folder (all or nothing)");
  c->add_flag("--force", o.force, "Replace the --out folder when it already holds files");
  c->add_flag("--json", o.json, "Print JSON (docs/scheduling.md) instead of the table");
  return c;
}

int run_schedule_command(const ScheduleOptions& o) {
  const drv::ScheduleScenario s = drv::load_schedule_scenario(o.scenario, o.overrides);
  std::optional<OutputFolder> folder;
  if (!o.out.empty()) {
    folder.emplace(o.out, "--out", o.force, std::vector<std::string>{"summary.json", "jobs.csv", "timeline.csv", "links.csv", "trace.json"});
  }
  const results::ScheduleRun run = drv::simulate_schedule(s);
  print_warnings(run.warnings);
  const results::ScheduleMetrics m = results::schedule_metrics(run);
  const nlohmann::json summary = results::schedule_summary_json(run, m);
  if (folder) {
    folder->write("summary.json", summary.dump(2) + "\n");
    folder->write("jobs.csv", results::schedule_jobs_csv(run));
    folder->write("timeline.csv", results::schedule_timeline_csv(run));
    folder->write("links.csv", results::schedule_links_csv(run, m));
    folder->write("trace.json", results::schedule_trace_json(run));
    folder->commit();
  }
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << results::schedule_table(run, m);
  }
  return 0;
}

}  // namespace cs::cli
