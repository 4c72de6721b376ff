#include "calibration/probe/gemm.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "calibration/probe/host_types.h"

namespace cs::probe {

void throw_cublas_error(cublasStatus_t s, const char* expr, const char* file, int line) {
  throw ProbeError(std::string(expr) + " failed: " + cublasLtGetStatusString(s) + " (" + cublasLtGetStatusName(s) +
                       ") " + where(file, line),
                   false, s == CUBLAS_STATUS_ALLOC_FAILED);
}

GemmTypes gemm_types(const std::string& dtype) {
  if (dtype == "bf16") return {ElementType::kBF16, ElementType::kBF16};
  if (dtype == "fp16") return {ElementType::kF16, ElementType::kF16};
  if (dtype == "tf32") return {ElementType::kF32, ElementType::kF32};
  if (dtype == "fp8") return {ElementType::kFP8E4M3, ElementType::kBF16};
  throw ProbeError("unknown GEMM dtype \"" + dtype + "\"");
}

namespace {

cudaDataType_t cuda_type(ElementType t) {
  switch (t) {
    case ElementType::kF32: return CUDA_R_32F;
    case ElementType::kBF16: return CUDA_R_16BF;
    case ElementType::kF16: return CUDA_R_16F;
    case ElementType::kFP8E4M3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  CS_CUBLAS(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof value));
}

// One configuration attribute of a cuBLASLt algorithm, whatever its integer width; nothing when
// this cuBLASLt does not know it.
std::optional<std::uint64_t> algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  std::size_t need = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, nullptr, 0, &need) != CUBLAS_STATUS_SUCCESS || need == 0 ||
      need > sizeof(std::uint64_t)) {
    return std::nullopt;
  }
  unsigned char buf[sizeof(std::uint64_t)] = {};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, buf, need, &written) != CUBLAS_STATUS_SUCCESS) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  std::memcpy(&v, buf, sizeof v);  // little-endian: the low `need` bytes hold the value
  return v;
}

}  // namespace

// ---- GemmEngine ------------------------------------------------------------------------------

GemmEngine::GemmEngine(int device)
    : device_(device), workspace_(device, kGemmWorkspaceBytes), unit_scale_(device, sizeof(float)) {
  ScopedDevice on(device);
  CS_CUBLAS(cublasLtCreate(&handle_));
  fill_f32(unit_scale_.as<float>(), 1.0f, 1, nullptr);
  CS_CUDA(cudaDeviceSynchronize());
}

GemmEngine::~GemmEngine() {
  if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
}

// ---- GemmOperands ----------------------------------------------------------------------------

GemmOperands::GemmOperands(int device, const std::string& dtype_, std::size_t a_elements, std::size_t b_elements,
                           std::size_t d_elements, cudaStream_t stream)
    : dtype(dtype_) {
  const GemmTypes t = gemm_types(dtype);
  a = DeviceBuffer(device, a_elements * element_size(t.ab));
  b = DeviceBuffer(device, b_elements * element_size(t.ab));
  d = DeviceBuffer(device, d_elements * element_size(t.cd));
  ScopedDevice on(device);
  fill_random(a.get(), t.ab, a_elements, 0x5eed0001, stream);
  fill_random(b.get(), t.ab, b_elements, 0x5eed0002, stream);
  fill_random(d.get(), t.cd, d_elements, 0x5eed0003, stream);
  CS_CUDA(cudaStreamSynchronize(stream));
}

// ---- GemmRunner ------------------------------------------------------------------------------

struct GemmRunner::Impl {
  const GemmEngine& engine;
  cudaStream_t stream;
  const void* a;
  const void* b;
  void* d;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a_desc = nullptr, b_desc = nullptr, d_desc = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  float alpha = 1.0f, beta = 0.0f;

  Impl(const GemmEngine& e, cudaStream_t s, const void* a_, const void* b_, void* d_)
      : engine(e), stream(s), a(a_), b(b_), d(d_) {}
  ~Impl() {
    if (d_desc != nullptr) (void)cublasLtMatrixLayoutDestroy(d_desc);
    if (b_desc != nullptr) (void)cublasLtMatrixLayoutDestroy(b_desc);
    if (a_desc != nullptr) (void)cublasLtMatrixLayoutDestroy(a_desc);
    if (op != nullptr) (void)cublasLtMatmulDescDestroy(op);
  }
};

GemmRunner::GemmRunner(const GemmEngine& engine, const cal::GemmShape& s, const GemmOperands& ops, cudaStream_t stream) {
  const GemmTypes t = gemm_types(s.dtype);
  if (ops.dtype != s.dtype) throw ProbeError("GEMM operands of " + ops.dtype + " used for " + s.dtype);
  const auto m = static_cast<std::uint64_t>(s.m), n = static_cast<std::uint64_t>(s.n), k = static_cast<std::uint64_t>(s.k);
  if (ops.a.bytes() < m * k * element_size(t.ab) || ops.b.bytes() < n * k * element_size(t.ab) ||
      ops.d.bytes() < m * n * element_size(t.cd)) {
    throw ProbeError("GEMM operands too small for the shape");
  }
  impl_ = std::make_unique<Impl>(engine, stream, ops.a.get(), ops.b.get(), ops.d.get());
  Impl& r = *impl_;
  ScopedDevice on(engine.device());

  const cublasComputeType_t compute = s.dtype == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CS_CUBLAS(cublasLtMatmulDescCreate(&r.op, compute, CUDA_R_32F));
  set_desc(r.op, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_desc(r.op, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (s.dtype == "fp8") {
    const void* scale = engine.unit_scale();
    set_desc(r.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale);
    set_desc(r.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale);
  }
  // Column-major: A is k x m (op T), B is k x n (op N), C = D is m x n.
  CS_CUBLAS(cublasLtMatrixLayoutCreate(&r.a_desc, cuda_type(t.ab), k, m, static_cast<std::int64_t>(k)));
  CS_CUBLAS(cublasLtMatrixLayoutCreate(&r.b_desc, cuda_type(t.ab), k, n, static_cast<std::int64_t>(k)));
  CS_CUBLAS(cublasLtMatrixLayoutCreate(&r.d_desc, cuda_type(t.cd), m, n, static_cast<std::int64_t>(m)));

  cublasLtMatmulPreference_t pref = nullptr;
  CS_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = kGemmWorkspaceBytes;
  int returned = 0;
  const cublasStatus_t st = [&] {
    const cublasStatus_t a = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (a != CUBLAS_STATUS_SUCCESS) return a;
    return cublasLtMatmulAlgoGetHeuristic(engine.handle(), r.op, r.a_desc, r.b_desc, r.d_desc, r.d_desc, pref, 1,
                                          &r.heuristic, &returned);
  }();
  (void)cublasLtMatmulPreferenceDestroy(pref);
  CS_CUBLAS(st);
  if (returned == 0) throw ProbeError("cuBLASLt has no algorithm for this " + s.dtype + " shape");
}

GemmRunner::~GemmRunner() = default;

void GemmRunner::enqueue() {
  Impl& r = *impl_;
  CS_CUBLAS(cublasLtMatmul(r.engine.handle(), r.op, &r.alpha, r.a, r.a_desc, r.b, r.b_desc, &r.beta, r.d, r.d_desc,
                           r.d, r.d_desc, &r.heuristic.algo, r.engine.workspace(), kGemmWorkspaceBytes, r.stream));
}

nlohmann::json GemmRunner::algo_info() const {
  const Impl& r = *impl_;
  nlohmann::json j = nlohmann::json::object();
  j["heuristic_index"] = 0;
  const std::pair<const char*, cublasLtMatmulAlgoConfigAttributes_t> attrs[] = {
      {"algo_id", CUBLASLT_ALGO_CONFIG_ID},
      {"tile_id", CUBLASLT_ALGO_CONFIG_TILE_ID},
      {"stages_id", CUBLASLT_ALGO_CONFIG_STAGES_ID},
      {"splitk", CUBLASLT_ALGO_CONFIG_SPLITK_NUM},
      {"reduction_scheme", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME},
      {"swizzle", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING},
      {"custom_option", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION},
      {"inner_shape_id", CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID},
      {"cluster_shape_id", CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID},
  };
  for (const auto& [name, attr] : attrs) {
    if (const auto v = algo_attribute(r.heuristic.algo, attr)) j[name] = *v;
  }
  j["waves"] = static_cast<double>(r.heuristic.wavesCount);
  j["workspace_bytes"] = static_cast<std::uint64_t>(r.heuristic.workspaceSize);
  j["workspace_limit_bytes"] = static_cast<std::uint64_t>(kGemmWorkspaceBytes);
  return j;
}

// ---- self-check ------------------------------------------------------------------------------

namespace {

std::vector<float> to_host_floats(const void* device_ptr, ElementType t, std::size_t n) {
  std::vector<unsigned char> raw(n * element_size(t));
  CS_CUDA(cudaMemcpy(raw.data(), device_ptr, raw.size(), cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
      case ElementType::kF32: std::memcpy(&out[i], &raw[4 * i], 4); break;
      case ElementType::kBF16: {
        std::uint16_t b = 0;
        std::memcpy(&b, &raw[2 * i], 2);
        out[i] = bf16_bits_to_float(b);
        break;
      }
      case ElementType::kF16: {
        std::uint16_t b = 0;
        std::memcpy(&b, &raw[2 * i], 2);
        out[i] = fp16_bits_to_float(b);
        break;
      }
      case ElementType::kFP8E4M3: out[i] = fp8_e4m3_bits_to_float(raw[i]); break;
    }
  }
  return out;
}

}  // namespace

std::string gemm_self_check(const GemmEngine& engine, const std::string& dtype, cudaStream_t stream) {
  constexpr std::int64_t kDim = 256;
  const GemmTypes t = gemm_types(dtype);
  const auto elems = static_cast<std::size_t>(kDim * kDim);
  GemmOperands ops(engine.device(), dtype, elems, elems, elems, stream);
  cal::GemmShape s;
  s.dtype = dtype;
  s.m = s.n = s.k = kDim;
  GemmRunner runner(engine, s, ops, stream);
  {
    ScopedDevice on(engine.device());
    runner.enqueue();
    CS_CUDA(cudaStreamSynchronize(stream));
  }
  const std::vector<float> a = to_host_floats(ops.a.get(), t.ab, elems);
  const std::vector<float> b = to_host_floats(ops.b.get(), t.ab, elems);
  const std::vector<float> d = to_host_floats(ops.d.get(), t.cd, elems);
  double err2 = 0, ref2 = 0;
  for (int sample = 0; sample < 64; ++sample) {
    const std::int64_t i = (sample * 37 + 5) % kDim;   // row of D
    const std::int64_t j = (sample * 101 + 11) % kDim;  // column of D
    double ref = 0;
    for (std::int64_t l = 0; l < kDim; ++l) {
      ref += static_cast<double>(a[static_cast<std::size_t>(l + i * kDim)]) * b[static_cast<std::size_t>(l + j * kDim)];
    }
    const double got = d[static_cast<std::size_t>(i + j * kDim)];
    if (!std::isfinite(got)) return dtype + " GEMM self-check: D(" + std::to_string(i) + "," + std::to_string(j) + ") is not finite";
    err2 += (got - ref) * (got - ref);
    ref2 += ref * ref;
  }
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double tolerance = (dtype == "bf16" || dtype == "fp8") ? 1e-2 : 5e-3;
  if (!(rel <= tolerance)) {
    return dtype + " GEMM self-check: relative error " + std::to_string(rel) + " above " + std::to_string(tolerance) +
           " against a double-precision product";
  }
  return "";
}

}  // namespace cs::probe
