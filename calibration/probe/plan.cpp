#include "calibration/probe/plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/errors.h"

namespace cs::probe {

// ---- sections ----------------------------------------------------------------------------------

const std::vector<std::string>& all_sections() {
  static const std::vector<std::string> s = {"gemm", "memory", "launch", "overlap", "links", "collectives"};
  return s;
}

std::vector<std::string> parse_sections(std::string_view list) {
  std::set<std::string> wanted;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string name(list.substr(start, end - start));
    const auto& all = all_sections();
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      throw InputError("", "--sections",
                       "unknown section \"" + name + "\" (gemm, memory, launch, overlap, links, collectives)");
    }
    wanted.insert(name);
    start = end + 1;
  }
  std::vector<std::string> out;
  for (const auto& s : all_sections()) {
    if (wanted.count(s) != 0) out.push_back(s);
  }
  return out;
}

// ---- GEMM ----------------------------------------------------------------------------------------

std::vector<GemmPlanEntry> gemm_plan(bool quick, bool fp8) {
  std::vector<GemmPlanEntry> plan;
  std::set<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> seen;
  auto add = [&](const std::string& dtype, std::int64_t m, std::int64_t n, std::int64_t k, const char* source) {
    if (!seen.insert({dtype, m, n, k}).second) return;
    cal::GemmShape s;
    s.dtype = dtype;
    s.m = m;
    s.n = n;
    s.k = k;
    plan.push_back({s, source});
  };

  add("bf16", 8192, 8192, 8192, "mamf");

  const std::vector<std::int64_t> tokens = quick ? std::vector<std::int64_t>{4096}
                                                 : std::vector<std::int64_t>{2048, 4096, 8192, 16384};
  const std::vector<std::int64_t> hidden = quick ? std::vector<std::int64_t>{4096, 8192}
                                                 : std::vector<std::int64_t>{2304, 4096, 8192, 12288};
  for (const std::int64_t T : tokens) {
    for (const std::int64_t h : hidden) {
      for (const std::int64_t t : {1, 8}) {
        add("bf16", T, 3 * h / t, h, "model-shape");  // QKV
        add("bf16", T, h, h / t, "model-shape");      // attention output projection
        add("bf16", T, 4 * h / t, h, "model-shape");  // MLP fc1
        add("bf16", T, h, 4 * h / t, "model-shape");  // MLP fc2
      }
    }
  }

  const std::vector<std::int64_t> bf16_axis = {256, 512, 1024, 2048, 4096, 8192, 16384};
  if (quick) {
    for (const std::int64_t d : bf16_axis) add("bf16", d, d, d, "grid");
  } else {
    for (const std::int64_t m : bf16_axis) {
      for (const std::int64_t n : bf16_axis) {
        for (const std::int64_t k : bf16_axis) add("bf16", m, n, k, "grid");
      }
    }
  }
  std::vector<std::string> other = {"fp16", "tf32"};
  if (fp8) other.push_back("fp8");
  const std::vector<std::int64_t> coarse_axis = {256, 1024, 4096, 16384};
  for (const auto& dtype : other) {
    if (quick) {
      for (const std::int64_t d : {4096, 8192}) add(dtype, d, d, d, "grid");
    } else {
      for (const std::int64_t m : coarse_axis) {
        for (const std::int64_t n : coarse_axis) {
          for (const std::int64_t k : coarse_axis) add(dtype, m, n, k, "grid");
        }
      }
    }
  }

  const std::int64_t step = quick ? 256 : 128;
  for (std::int64_t n = 8192 - 256; n <= 8192 + 1024; n += step) add("bf16", 8192, n, 8192, "wave-sweep");
  return plan;
}

// ---- byte sizes ------------------------------------------------------------------------------------

std::vector<std::int64_t> geometric_sizes(std::int64_t first, std::int64_t last, std::int64_t factor,
                                          bool include_last) {
  std::vector<std::int64_t> out;
  if (first <= 0 || factor < 2 || last < first) return out;
  for (std::int64_t s = first; s <= last; s *= factor) {
    out.push_back(s);
    if (s > last / factor) break;  // the next step would overflow or pass `last`
  }
  if (include_last && out.back() != last) out.push_back(last);
  return out;
}

namespace {
constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kGiB = 1024 * 1024 * 1024;
}  // namespace

std::vector<std::int64_t> memory_sizes(bool quick, std::int64_t max_bytes) {
  return geometric_sizes(4 * kKiB, std::min(max_bytes, quick ? kGiB : 4 * kGiB), quick ? 8 : 4, false);
}

const std::vector<std::string>& memory_kernels() {
  static const std::vector<std::string> k = {"copy", "elementwise", "reduction", "norm"};
  return k;
}

std::vector<std::int64_t> link_sizes(bool quick, std::int64_t max_bytes) {
  return geometric_sizes(8, std::min(max_bytes, kGiB), quick ? 8 : 2, false);
}

std::vector<std::pair<int, int>> link_pairs(int gpus, bool quick) {
  std::vector<std::pair<int, int>> out;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      if (quick && i != 0 && j != 0) continue;
      out.emplace_back(i, j);
    }
  }
  return out;
}

std::vector<std::int64_t> collective_sizes(bool quick, std::int64_t max_bytes) {
  if (quick) return geometric_sizes(8, std::min(max_bytes, kGiB), 4, true);
  return geometric_sizes(8, std::min(max_bytes, 8 * kGiB), 2, false);
}

// ---- collectives ---------------------------------------------------------------------------------

const std::vector<std::string>& collective_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "all_to_all", "broadcast",  "send_recv"};
  return ops;
}

std::vector<int> rank_counts(int gpus) {
  std::vector<int> out;
  for (int n = 2; n <= gpus; n *= 2) out.push_back(n);
  return out;
}

const std::vector<std::string>& forced_algorithms() {
  static const std::vector<std::string> a = {"ring", "tree", "nvls"};
  return a;
}

bool algorithm_supports(std::string_view algorithm, std::string_view op) {
  if (algorithm == "auto") return true;
  if (op == "all_to_all" || op == "send_recv") return false;  // point-to-point: no algorithm
  if (algorithm == "ring") return true;
  if (algorithm == "tree") return op == "all_reduce";
  if (algorithm == "nvls") return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter";
  return false;
}

std::optional<CollectiveCounts> collective_counts(std::string_view op, std::int64_t size_bytes, int ranks,
                                                  int element_size) {
  if (size_bytes <= 0 || ranks < 1 || element_size < 1) return std::nullopt;
  const std::int64_t n = ranks;
  const std::int64_t elt = element_size;
  const std::int64_t align = std::max<std::int64_t>(1, 16 / elt);  // elements per 16 bytes
  CollectiveCounts c;
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") {
    const std::int64_t per_rank = (size_bytes / elt / n) / align * align;
    if (per_rank == 0) return std::nullopt;
    c.count = per_rank;
    c.bytes = per_rank * n * elt;
    if (op == "all_gather") {
      c.send_bytes = per_rank * elt;
      c.recv_bytes = c.bytes;
    } else if (op == "reduce_scatter") {
      c.send_bytes = c.bytes;
      c.recv_bytes = per_rank * elt;
    } else {
      c.send_bytes = c.bytes;
      c.recv_bytes = c.bytes;
    }
  } else {
    c.count = size_bytes / elt;
    if (c.count == 0) return std::nullopt;
    c.bytes = c.count * elt;
    c.send_bytes = c.bytes;
    c.recv_bytes = c.bytes;
  }
  c.elements = c.bytes / elt;
  return c;
}

}  // namespace cs::probe
