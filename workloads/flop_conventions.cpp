#include "workloads/flop_conventions.h"

#include "workloads/layer_cost.h"

namespace cs::wl {
namespace {

Flops megatron_core_flops(const TransformerConfig& t, double B, double s) {
  const double l = t.layers, h = static_cast<double>(t.hidden), V = static_cast<double>(t.vocab);
  const double q = static_cast<double>(t.head_dim() * t.heads), k = static_cast<double>(t.kv_hidden());
  const double e = t.gated_mlp ? 3 : 2;
  const double mlp = t.is_moe() ? static_cast<double>(t.expert_ffn_hidden) * t.top_k : static_cast<double>(t.ffn_hidden);
  const double per_token = l * (h * mlp * e + h * (q + 2 * k) + q * h) + h * V;
  return Flops{6 * B * s * per_token + 6 * B * s * s * l * q};
}

Flops six_n_attention_flops(const Model& m, double B, double s) {
  const TransformerConfig& t = m.transformer;
  const double n = static_cast<double>(active_parameter_count(m) - embedding_parameters(t));
  const double per_token = 6 * n + 12.0 * t.layers * t.heads * static_cast<double>(t.head_dim()) * s;
  return Flops{B * s * per_token};
}

}  // namespace

std::vector<FlopCount> iteration_flops(const Model& m, const ParallelPlan& plan) {
  std::vector<FlopCount> out;
  out.push_back({"training", training_flops(m, plan.global_batch, plan.sequence_length, plan.recompute)});
  out.push_back({"model", model_flops(m, plan.global_batch, plan.sequence_length)});
  if (m.family != ModelFamily::kTransformer || m.transformer.input != InputKind::kTokens) return out;
  const double B = static_cast<double>(plan.global_batch), s = static_cast<double>(plan.sequence_length);
  out.push_back({"megatron-eq3", megatron_eq3_flops(m, plan.global_batch, plan.sequence_length)});
  out.push_back({"megatron-core", megatron_core_flops(m.transformer, B, s)});
  out.push_back({"6n-attention", six_n_attention_flops(m, B, s)});
  return out;
}

}  // namespace cs::wl
