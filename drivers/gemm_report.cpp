#include "drivers/gemm_report.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "core/errors.h"
#include "drivers/training_run.h"
#include "sim/collectives/machine.h"
#include "sim/compute/compute_model.h"
#include "workloads/layer_cost.h"
#include "workloads/training_graph.h"

namespace cs::drv {
namespace {

GemmRow row_for(const hw::GpuSpec& gpu, const compute::ComputeModel& cm, const tg::GemmShape& s) {
  GemmRow r;
  r.shape = s;
  r.tiling = compute::gemm_tiling(gpu.gemm, s.m, s.n);
  const Flops f{2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k)};
  // Its operands and result as the training graph counts them (wl::gemm_traffic): 16-bit
  // operands, or 1-byte ones with fp8; a 16-bit result.
  const Bytes b = wl::gemm_traffic({s}, cm.dtype() == "fp8" ? 1 : 2, 2);
  r.time = cm.time(gpu, tg::ComputeClass::kGemm, f, b, {&s, 1});
  r.rate = FlopRate{f.value() / to_seconds(r.time)};
  const Duration compute_only = cm.time(gpu, tg::ComputeClass::kGemm, f, Bytes{0}, {&s, 1});
  r.memory_bound = r.time > compute_only;
  return r;
}

GemmReport header(const hw::GpuSpec& gpu, const std::string& dtype) {
  GemmReport out;
  out.gpu = gpu.name;
  out.dtype = dtype;
  auto peak = gpu.peak.find(dtype);
  if (peak == gpu.peak.end()) throw ConfigError("", "--dtype", "GPU " + gpu.name + " has no " + dtype + " peak in the catalog");
  out.peak = peak->second;
  out.full_rate = compute::full_wave_rate(gpu, dtype);
  out.sustained = gpu.roofline.gemm;
  return out;
}

}  // namespace

GemmReport gemm_report(const hw::GpuSpec& gpu, const std::string& dtype, const std::vector<tg::GemmShape>& shapes) {
  GemmReport out = header(gpu, dtype);
  const compute::ComputeModel cm(dtype);
  for (const tg::GemmShape& s : shapes) out.rows.push_back(row_for(gpu, cm, s));
  return out;
}

GemmReport experiment_gemm_report(const Experiment& e) {
  const hw::Catalog catalog = experiment_catalog(e);
  const coll::Machine machine = coll::load_machine(e.cluster, e.cluster_overrides, catalog);
  const hw::GpuSpec& gpu = machine.cluster.gpu_spec(machine.cluster.gpus()[0]);
  const std::string dtype = enum_name(wl::kPrecisionNames, e.plan.precision);
  GemmReport out = header(gpu, dtype);
  const wl::Model model = load_model(e);
  check_plan_fits(e, machine.cluster, model);  // the checks `run` makes
  const wl::TrainingGraph g = wl::build_training_graph(model, e.plan, e.file, e.at("plan"), e.symmetry);
  const compute::ComputeModel cm(dtype);
  std::map<std::array<std::int64_t, 3>, std::int64_t> ops;  // shape -> ops running it
  double flops = 0, weighted = 0;
  for (const tg::Op& op : g.graph.ops()) {
    const auto mix = g.graph.gemm_mix_of(op);
    if (mix.empty()) continue;
    for (const tg::GemmShape& s : mix) ++ops[{s.m, s.n, s.k}];
    flops += op.flops.value();
    weighted += op.flops.value() / compute::mix_efficiency(gpu.gemm, mix);
  }
  out.iteration_efficiency = weighted > 0 ? flops / weighted : 1.0;
  for (const auto& [k, n] : ops) {
    GemmRow r = row_for(gpu, cm, tg::GemmShape{k[0], k[1], k[2]});
    r.ops = n;
    out.rows.push_back(r);
  }
  return out;
}

std::string to_table(const GemmReport& r) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%s, %s: peak %.1f TFLOP/s; full waves %.1f TFLOP/s (MAMF over its shape's eta); sustained x%.3g\n",
                r.gpu.c_str(), r.dtype.c_str(), r.peak.value() / 1e12, r.full_rate.value() / 1e12, r.sustained);
  o << line;
  const bool counts = !r.rows.empty() && r.rows.front().ops > 0;
  o << "      m       n       k  tile     tiles  waves    eta   TFLOP/s  of peak   time (us)  bound" << (counts ? "   ops" : "") << "\n";
  for (const GemmRow& g : r.rows) {
    std::snprintf(line, sizeof line, "%7lld %7lld %7lld  %3dx%-3d %7lld %6lld  %5.3f  %8.1f  %6.1f%%  %10.2f  %-6s",
                  static_cast<long long>(g.shape.m), static_cast<long long>(g.shape.n), static_cast<long long>(g.shape.k),
                  g.tiling.tile.m, g.tiling.tile.n, static_cast<long long>(g.tiling.tiles), static_cast<long long>(g.tiling.waves),
                  g.tiling.efficiency, g.rate.value() / 1e12, 100 * g.rate.value() / r.peak.value(), to_seconds(g.time) * 1e6,
                  g.memory_bound ? "memory" : "math");
    o << line;
    if (counts) o << " " << g.ops;
    o << "\n";
  }
  if (counts) {
    std::snprintf(line, sizeof line, "eta over the iteration's GEMM FLOPs: %.3f\n", r.iteration_efficiency);
    o << line;
  }
  return o.str();
}

nlohmann::json to_json(const GemmReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const GemmRow& g : r.rows) {
    nlohmann::json j = {{"m", g.shape.m}, {"n", g.shape.n}, {"k", g.shape.k},
                        {"tile", std::to_string(g.tiling.tile.m) + "x" + std::to_string(g.tiling.tile.n)},
                        {"tiles", g.tiling.tiles}, {"waves", g.tiling.waves}, {"eta", g.tiling.efficiency},
                        {"time_us", to_seconds(g.time) * 1e6}, {"tflops", g.rate.value() / 1e12},
                        {"fraction_of_peak", g.rate.value() / r.peak.value()}, {"bound", g.memory_bound ? "memory" : "math"}};
    if (g.ops > 0) j["ops"] = g.ops;
    rows.push_back(std::move(j));
  }
  nlohmann::json out = {{"schema", "clustersim.gemm/1"}, {"gpu", r.gpu}, {"dtype", r.dtype},
                        {"peak_tflops", r.peak.value() / 1e12}, {"full_wave_tflops", r.full_rate.value() / 1e12},
                        {"sustained", r.sustained}, {"gemms", rows}};
  if (!r.rows.empty() && r.rows.front().ops > 0) out["iteration_eta"] = r.iteration_efficiency;
  return out;
}

}  // namespace cs::drv
