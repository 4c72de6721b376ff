#include "workloads/flop_conventions.h"

#include "workloads/layer_cost.h"

namespace cs::wl {
namespace {

Flops megatron_core_flops(const TransformerConfig& t, double B, double s) {
  const double l = t.layers, h = static_cast<double>(t.hidden), V = static_cast<double>(t.vocab);
  const double a = t.heads, e = t.gated_mlp ? 3 : 2;
  // The MLPs: a mixture's dense_layers dense blocks and the rest with top_k routed experts plus
  // the shared ones (--moe-shared-expert-intermediate-size = S f_e).
  const double moe = t.moe_layers();
  double mlp = (l - moe) * static_cast<double>(t.ffn_hidden) * e;
  if (t.is_moe()) {
    mlp += moe * static_cast<double>(t.expert_ffn_hidden) * (t.top_k + t.shared_experts) * e;
  }
  double attention = 0, core = 0;
  if (t.is_mla()) {
    // The multi_latent_attention branch: the query and key/value latents (their norms as the +1
    // terms), the key's rotary part and the output projection; the core a (d_qk + d_v)/2 with
    // the causal mask.
    const TransformerConfig::Mla& m = t.mla;
    const double qk = static_cast<double>(t.qk_head_dim()), dv = static_cast<double>(m.v_head_dim);
    const double rq = static_cast<double>(m.q_lora_rank), rkv = static_cast<double>(m.kv_lora_rank);
    const double q = m.q_lora_rank > 0 ? rq * (h + a * qk + 1) : h * a * qk;
    attention = q + rkv * (h + a * (static_cast<double>(m.qk_nope_head_dim) + dv) + 1) +
                h * static_cast<double>(m.qk_rope_head_dim) + a * dv * h;
    core = a * (qk + dv) / 2;
  } else {
    const double q = static_cast<double>(t.head_dim() * t.heads), k = static_cast<double>(t.kv_hidden());
    attention = h * (q + 2 * k) + q * h;
    core = q;
  }
  const double per_token = h * mlp + l * attention + h * V;
  return Flops{6 * B * s * per_token + 6 * B * s * s * l * core};
}

Flops six_n_attention_flops(const Model& m, double B, double s) {
  const TransformerConfig& t = m.transformer;
  const double n = static_cast<double>(active_parameter_count(m) - embedding_parameters(t));
  // torchtitan's 6 l a (d_qk + d_v) s: 12 l a d s when both are d = h/a.
  const double per_token =
      6 * n + 6.0 * t.layers * t.heads * static_cast<double>(t.qk_head_dim() + t.v_head_dim()) * s;
  return Flops{B * s * per_token};
}

}  // namespace

std::vector<FlopCount> iteration_flops(const Model& m, const ParallelPlan& plan) {
  std::vector<FlopCount> out;
  out.push_back({std::string(kFlopConventionNames[0]), training_flops(m, plan.global_batch, plan.sequence_length, plan.recompute)});
  out.push_back({std::string(kFlopConventionNames[1]), model_flops(m, plan.global_batch, plan.sequence_length)});
  if (m.family != ModelFamily::kTransformer || m.transformer.input != InputKind::kTokens) return out;
  const double B = static_cast<double>(plan.global_batch), s = static_cast<double>(plan.sequence_length);
  out.push_back({std::string(kFlopConventionNames[2]), megatron_eq3_flops(m, plan.global_batch, plan.sequence_length)});
  out.push_back({std::string(kFlopConventionNames[3]), megatron_core_flops(m.transformer, B, s)});
  out.push_back({std::string(kFlopConventionNames[4]), six_n_attention_flops(m, B, s)});
  return out;
}

}  // namespace cs::wl
