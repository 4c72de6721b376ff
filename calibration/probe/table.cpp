#include "calibration/probe/table.h"

#include <cstdarg>
#include <cstdio>

namespace cs::probe {

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

double us(Duration d) { return to_seconds(d) * 1e6; }

std::string failed(const cal::PointBase& p) { return "failed: " + p.error; }

std::string algo_text(const nlohmann::json& a) {
  if (!a.is_object() || a.empty()) return "";
  auto num = [&](const char* key) -> std::string {
    const auto it = a.find(key);
    if (it == a.end() || !it->is_number()) return "?";
    if (it->is_number_float()) return format("%.2f", it->get<double>());
    return std::to_string(it->get<long long>());
  };
  return "tile " + num("tile_id") + " stages " + num("stages_id") + " splitK " + num("splitk") + " waves " +
         num("waves");
}

}  // namespace

std::string seconds_text(double s) {
  if (s < 1e-3) return format("%.2f us", s * 1e6);
  if (s < 1) return format("%.2f ms", s * 1e3);
  return format("%.2f s", s);
}

std::string gemm_table_header() {
  return format("#%6s %8s %8s %8s  %-11s %11s %9s %7s %7s  %s", "dtype", "m", "n", "k", "source", "time(us)",
                "TFLOP/s", "spread", "samples", "cuBLASLt algorithm");
}

std::string gemm_table_row(const cal::GemmPoint& p) {
  const std::string head = format(" %6s %8lld %8lld %8lld  %-11s", p.shape.dtype.c_str(), static_cast<long long>(p.shape.m),
                                  static_cast<long long>(p.shape.n), static_cast<long long>(p.shape.k),
                                  p.source.c_str());
  if (p.status != cal::PointStatus::kOk || !p.timing) return head + " " + failed(p);
  const cal::Timing& t = *p.timing;
  return head + format(" %11.2f %9.1f %6.2f%% %7d  %s", us(t.median), p.rate().value() / 1e12, t.spread() * 100,
                       t.samples, algo_text(p.algo).c_str());
}

std::string memory_table_header() {
  return format("#%-12s %14s %11s %9s %7s %7s", "kernel", "bytes", "time(us)", "GB/s", "spread", "samples");
}

std::string memory_table_row(const cal::MemoryPoint& p) {
  const std::string head = format(" %-12s %14lld", p.kernel.c_str(), static_cast<long long>(p.bytes.value()));
  if (p.status != cal::PointStatus::kOk || !p.timing) return head + " " + failed(p);
  const cal::Timing& t = *p.timing;
  return head + format(" %11.2f %9.1f %6.2f%% %7d", us(t.median), p.bandwidth().value() / 1e9, t.spread() * 100,
                       t.samples);
}

std::string launch_table_row(const cal::LaunchPoint& p) {
  if (p.status != cal::PointStatus::kOk || !p.timing) return " launch " + p.kernel + ": " + failed(p);
  return format(" launch %s kernel: %.2f us per launch (p10 %.2f, p90 %.2f, %d samples)", p.kernel.c_str(),
                us(p.timing->median), us(p.timing->p10), us(p.timing->p90), p.timing->samples);
}

std::string link_table_header() {
  return format("#%4s %4s %4s %14s %11s %9s %7s %7s  %s", "kind", "src", "dst", "bytes", "time(us)", "GB/s", "spread",
                "samples", "class");
}

std::string link_table_row(const cal::LinkPoint& p) {
  const std::string head = format(" %4s %4d %4d %14lld", p.kind.c_str(), p.src, p.dst, static_cast<long long>(p.bytes.value()));
  if (p.status != cal::PointStatus::kOk || !p.timing) return head + " " + failed(p);
  const cal::Timing& t = *p.timing;
  return head + format(" %11.2f %9.2f %6.2f%% %7d  %s", us(t.median), p.bandwidth().value() / 1e9, t.spread() * 100,
                       t.samples, p.link_class.c_str());
}

std::string collective_table_header(const std::string& op, int ranks, int nodes, const std::string& algorithm) {
  return format("# %s: %d ranks, %d node%s, algorithm %s, bfloat16, out-of-place (nccl-tests conventions, GB = 1e9 B)\n",
                op.c_str(), ranks, nodes, nodes == 1 ? "" : "s", algorithm.c_str()) +
         format("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "#wrong", "nccl choice") +
         format("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                "(GB/s)", "");
}

std::string collective_table_row(const cal::CollectivePoint& p, long long elements) {
  const bool reduces = p.op == "all_reduce" || p.op == "reduce_scatter" || p.op == "reduce";
  const int root = (p.op == "broadcast" || p.op == "reduce") ? 0 : -1;
  const std::string head = format(" %11lld  %12lld  %8s  %6s  %6d", static_cast<long long>(p.bytes.value()), elements,
                                  "bfloat16", reduces ? "sum" : "none", root);
  if (p.status != cal::PointStatus::kOk || !p.timing) return head + "  " + failed(p);
  std::string choice = "-";
  if (!p.nccl_choice.algorithm.empty()) {
    choice = p.nccl_choice.algorithm + "/" + p.nccl_choice.protocol;
    if (p.nccl_choice.channels > 0) choice += format(" %dch", p.nccl_choice.channels);
  }
  const double t_us = us(p.timing->median);
  return head + format("  %7.*f  %6.2f  %6.2f  %6s  %s", t_us < 10000 ? 2 : 1, t_us, p.algbw().value() / 1e9,
                       p.busbw().value() / 1e9, "N/A", choice.c_str());
}

std::string overlap_table_row(const cal::OverlapPoint& p) {
  return format(" %s %lldx%lldx%lld beside %s of %lld B on %d ranks: alone %.2f us, beside %.2f us, slowdown %.3f",
                p.gemm.dtype.c_str(), static_cast<long long>(p.gemm.m), static_cast<long long>(p.gemm.n),
                static_cast<long long>(p.gemm.k), p.collective_op.c_str(),
                static_cast<long long>(p.collective_bytes.value()), p.collective_ranks, us(p.alone), us(p.beside),
                p.slowdown());
}

}  // namespace cs::probe
