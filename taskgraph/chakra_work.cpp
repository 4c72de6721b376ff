#include "taskgraph/chakra_work.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "core/errors.h"

namespace cs::tg {
namespace {

// The top-level tensor shapes of an IOInfo shapes text ("[[32, 2048], [2048, 1000], []]"): one
// entry per input, the dimensions of those that are lists of integers, empty otherwise.
std::vector<std::vector<std::int64_t>> top_level_shapes(std::string_view text) {
  std::vector<std::vector<std::int64_t>> out;
  std::size_t i = text.find('[');
  if (i == std::string_view::npos) return out;
  int depth = 0;
  std::vector<std::int64_t> dims;
  bool flat = true;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[') {
      ++depth;
      if (depth == 2) {
        dims.clear();
        flat = true;
      } else if (depth > 2) {
        flat = false;
      }
    } else if (c == ']') {
      if (depth == 2) out.push_back(flat ? dims : std::vector<std::int64_t>{});
      if (--depth == 0) break;
    } else if (depth == 2 && std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t v = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v < (INT64_C(1) << 40)) v = v * 10 + (text[i++] - '0');
      --i;
      dims.push_back(v);
    }
  }
  return out;
}

int element_bytes(std::string_view types) {
  if (types.find("double") != std::string_view::npos) return 8;
  if (types.find("Half") != std::string_view::npos || types.find("BFloat16") != std::string_view::npos) return 2;
  if (types.find("Float8") != std::string_view::npos || types.find("int8") != std::string_view::npos) return 1;
  return 4;
}

// A matrix multiply's FLOPs from the kernel's input shapes: mm [[m,k],[k,n]], addmm
// [[n] or [m,n], [m,k], [k,n]], bmm [[b,m,k],[b,k,n]]. Only kernels named as GEMMs.
std::optional<ChakraKernelWork> gemm_from_shapes(const ChakraNode& n) {
  auto has = [&](std::string_view word) {
    return std::search(n.name.begin(), n.name.end(), word.begin(), word.end(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           }) != n.name.end();
  };
  if (!has("gemm") && !has("matmul") && !has("cutlass")) return std::nullopt;
  const auto shapes = top_level_shapes(n.input_shapes);
  for (std::size_t i = 0; i + 1 < shapes.size(); ++i) {
    const auto& a = shapes[i];
    const auto& b = shapes[i + 1];
    std::int64_t batch = 1, m = 0, k = 0, nn = 0;
    if (a.size() == 2 && b.size() == 2 && a[1] == b[0]) {
      m = a[0], k = a[1], nn = b[1];
    } else if (a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1]) {
      batch = a[0], m = a[1], k = a[2], nn = b[2];
    } else {
      continue;
    }
    if (m <= 0 || k <= 0 || nn <= 0) continue;
    const double elem = element_bytes(n.input_types);
    ChakraKernelWork w;
    w.flops = Flops{2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(nn) * static_cast<double>(k)};
    w.bytes = Bytes{static_cast<std::int64_t>(elem * static_cast<double>(batch) * static_cast<double>(m * k + k * nn + m * nn))};
    w.cls = ComputeClass::kGemm;
    w.gemms = {GemmShape{batch * m, nn, k}};
    return w;
  }
  return std::nullopt;
}

// clustersim's "m,n,k;m,n,k" (chakra_export.h).
std::vector<GemmShape> parse_gemm_mix(const std::string& text, const ChakraNode& n) {
  std::vector<GemmShape> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = std::min(text.find(';', start), text.size());
    std::int64_t v[3] = {0, 0, 0};
    int field = 0;
    bool ok = end > start;
    for (std::size_t i = start; i < end && ok; ++i) {
      if (text[i] == ',') {
        ok = ++field < 3;
      } else if (text[i] >= '0' && text[i] <= '9' && v[field] < (INT64_C(1) << 40)) {
        v[field] = v[field] * 10 + (text[i] - '0');
      } else {
        ok = false;
      }
    }
    if (!ok || field != 2 || v[0] <= 0 || v[1] <= 0 || v[2] <= 0) {
      throw InputError("", "node " + std::to_string(n.id), "cs_gemm_mix \"" + text + "\" is not a list of GEMM shapes \"m,n,k;m,n,k\"");
    }
    out.push_back({v[0], v[1], v[2]});
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<ChakraKernelWork> chakra_kernel_work(const ChakraNode& n) {
  if (auto ops = n.count_attr("num_ops")) {
    ChakraKernelWork w;
    w.flops = Flops{static_cast<double>(*ops)};
    if (const ChakraAttribute* exact = n.attr("cs_flops"); exact && exact->kind == ChakraAttribute::Kind::kDouble && exact->double_value >= 0 &&
                                                         exact->double_value < 1e30) {
      w.flops = Flops{exact->double_value};
    }
    w.bytes = Bytes{static_cast<std::int64_t>(std::min<std::uint64_t>(n.count_attr("tensor_size").value_or(0), INT64_MAX))};
    w.cls = ComputeClass::kGemm;
    if (auto c = n.string_attr("cs_class")) {
      const auto parsed = parse_enum(kComputeClassNames, *c);
      if (!parsed) throw InputError("", "node " + std::to_string(n.id), "cs_class \"" + *c + "\" is not a compute class");
      w.cls = *parsed;
    } else if (auto g = gemm_from_shapes(n)) {
      w.gemms = g->gemms;
    }
    if (auto mix = n.string_attr("cs_gemm_mix")) w.gemms = parse_gemm_mix(*mix, n);
    return w;
  }
  return gemm_from_shapes(n);
}

}  // namespace cs::tg
