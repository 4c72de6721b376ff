#include "apps/cmd_validate.h"

#include <iostream>

#include "apps/cli_common.h"

namespace cs::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  auto* v = app.add_subcommand("validate", "Compare predictions with published measurements (fit and check records apart)");
  v->require_subcommand(1);
  auto* m = v->add_subcommand("megatron", "Megatron-LM SC21 Table 1: GPT 1.7B to 1T on 32 to 3,072 A100s");
  m->add_option("--rows", o.rows, "Only these rows (1-based, comma-separated)");
  m->add_option("--table", o.table, "Another table of training records (e.g. configs/validation/megatron-core-h100.json)");
  m->add_flag("--json", o.json, "Print JSON");
  m->add_flag("--refit", o.refit, "Refit the constant the rows were fitted on (the A100 GEMM efficiency) and print it");
  m->add_flag("--leave-one-out", o.leave_one_out,
              "Predict each row with the constant fitted on the other rows: the table's out-of-sample error");
  m->add_option("--grid", o.grid, "Factors of the fitted value simulated for --refit and --leave-one-out (default 0.85,...,1.15)")
      ->each([&o](const std::string&) { o.grid_given = true; });
  m->add_flag("--sensitivity", o.sensitivity, "Each row's error change when each assumed or fitted value moves by -10% and +10%");
  auto* n = v->add_subcommand("nccl", "NCCL all-reduce bus bandwidth on one 8-GPU A100 and H100 node (--table: multi-node records)");
  n->add_option("--table", o.table, "Another file of NCCL records (configs/validation/nccl-multi-node.json: DGX A100 and H100 across servers)");
  n->add_flag("--json", o.json, "Print JSON");
  n->add_flag("--refit", o.refit, "Refit each constant from the records it was fitted on and print it");
  n->add_flag("--sensitivity", o.sensitivity, "Each point's error change when each assumed or fitted value moves by -10% and +10%");
  auto* pr = v->add_subcommand("profile", "A calibration profile: every measured collective, GEMM and memory-bound point, simulated");
  pr->add_option("profile", o.profile, "The profile (docs/calibration-profile.md)")->required();
  pr->add_option("--nic", o.nic, "NIC of the rebuilt cluster for multi-node points (default NDR-400G)");
  pr->add_flag("--json", o.json, "Print JSON: groups and every point");
  return v;
}

void progress_line(const std::string& what) {
  if (!stderr_is_terminal()) return;
  std::string line = "\r  simulating " + what;
  if (line.size() < 72) line.resize(72, ' ');
  std::cerr << line << std::flush;
}

void clear_progress() {
  if (stderr_is_terminal()) std::cerr << "\r" << std::string(72, ' ') << "\r" << std::flush;
}

}  // namespace cs::cli
