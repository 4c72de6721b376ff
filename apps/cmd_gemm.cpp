#include "apps/cmd_gemm.h"

#include <cstdlib>
#include <iostream>

#include "core/enum_names.h"
#include "core/errors.h"
#include "drivers/gemm_report.h"
#include "workloads/parallel_plan.h"

namespace cs::cli {
namespace {

// "4096x12288x4096" -> {4096, 12288, 4096}; a ConfigError otherwise.
tg::GemmShape parse_shape(const std::string& text) {
  std::int64_t d[3] = {0, 0, 0};
  const char* p = text.c_str();
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    const char want = i < 2 ? 'x' : '\0';
    if (end == p || *end != want || v < 1 || v > (1LL << 24)) {
      throw ConfigError("", "shapes", "shape \"" + text + "\": expected MxNxK, each from 1 to 16777216");
    }
    d[i] = v;
    p = end + (i < 2 ? 1 : 0);
  }
  return {d[0], d[1], d[2]};
}

}  // namespace

CLI::App* add_gemm_command(CLI::App& app, GemmOptions& o) {
  auto* cmd = app.add_subcommand("gemm", "The GEMM shape model: tiles, waves, efficiency and time of GEMM shapes on a GPU, or of an experiment's GEMMs");
  cmd->add_option("shapes", o.shapes, "Shapes MxNxK (C[m x n] = A[m x k] B[k x n])");
  cmd->add_option("--gpu", o.gpu, "A GPU of the hardware catalog (with shapes)");
  cmd->add_option("--dtype", o.dtype, "Precision of the shapes: bf16, fp16, fp8 (default bf16)");
  cmd->add_option("--experiment", o.experiment, "Report every GEMM of this experiment's training iteration instead");
  cmd->add_option("--set", o.overrides, "Override an experiment value: /json/pointer=value (repeatable)");
  cmd->add_flag("--json", o.json, "Print JSON (schema clustersim.gemm/1)");
  return cmd;
}

int run_gemm_command(const GemmOptions& o) {
  drv::GemmReport r;
  if (!o.experiment.empty()) {
    if (!o.shapes.empty() || !o.gpu.empty()) throw ConfigError("", "--experiment", "--experiment takes no shapes and no --gpu (the experiment's cluster and plan give them)");
    r = drv::experiment_gemm_report(drv::load_experiment(o.experiment, o.overrides));
  } else {
    if (o.gpu.empty() || o.shapes.empty()) throw ConfigError("", "--gpu", "give --gpu and at least one shape MxNxK, or --experiment FILE");
    if (!parse_enum(wl::kPrecisionNames, o.dtype)) {
      throw ConfigError("", "--dtype", "expected " + enum_name_list(wl::kPrecisionNames) + ", got \"" + o.dtype + "\"");
    }
    std::vector<tg::GemmShape> shapes;
    for (const std::string& s : o.shapes) shapes.push_back(parse_shape(s));
    r = drv::gemm_report(hw::Catalog::builtin().gpu(o.gpu, "", "--gpu"), o.dtype, shapes);
  }
  if (o.json) {
    std::cout << drv::to_json(r).dump(2) << "\n";
  } else {
    std::cout << drv::to_table(r);
  }
  return 0;
}

}  // namespace cs::cli
