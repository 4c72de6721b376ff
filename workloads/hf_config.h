// Importing a Hugging Face transformers config.json as a Model.
//
// Supported model_type values and the keys read (every other key is ignored: config.json files
// carry many training and tokenizer settings that do not change the cost model):
//   llama, mistral  hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads
//                   (default: num_attention_heads), intermediate_size, vocab_size,
//                   max_position_embeddings, tie_word_embeddings (default false), head_dim (must
//                   equal hidden_size / num_attention_heads when present), attention_bias and
//                   mlp_bias (default false), attention_dropout (default 0).
//                   Architecture: RMSNorm, rotary positions, SwiGLU MLP.
//   mixtral         as mistral, plus num_local_experts and num_experts_per_tok; intermediate_size
//                   is each expert's width.
//   gpt2            n_embd, n_layer, n_head, n_positions, n_inner (null: 4 n_embd), vocab_size,
//                   tie_word_embeddings (default true), resid_pdrop/attn_pdrop/embd_pdrop (default
//                   0.1). Architecture: LayerNorm, learned positions, GELU MLP, biases.
//   deepseek_v2,    hidden_size, num_hidden_layers, num_attention_heads, intermediate_size (the
//   deepseek_v3     dense blocks' MLP), vocab_size, max_position_embeddings, tie_word_embeddings
//                   (default false), attention_dropout (default 0); multi-head latent attention
//                   from q_lora_rank (null or 0: no query compression), kv_lora_rank,
//                   qk_nope_head_dim, qk_rope_head_dim, v_head_dim; the mixture from
//                   n_routed_experts (null: all dense), num_experts_per_tok,
//                   moe_intermediate_size (each routed and shared expert's width),
//                   n_shared_experts (default 0), first_k_dense_replace (default 0) and
//                   moe_layer_freq (only 1 is accepted). Architecture: RMSNorm, rotary, SwiGLU,
//                   no biases (attention_bias true is an error). Not read: the routing details
//                   (n_group, topk_group, scoring_func, routed_scaling_factor: no cost), the
//                   router's e_score_correction_bias (E values per block, not counted) and
//                   num_nextn_predict_layers: the multi-token-prediction module is left out
//                   (DeepSeek-V3's 14B of MTP weights are not in its 671B).
// An unknown model_type is a ConfigError at /model_type listing the supported ones. The model is
// named after "_name_or_path" when set, else after the file's folder when the file is called
// config.json, else after the file.
#pragma once

#include <string>

#include "workloads/model.h"

namespace cs::wl {

Model model_from_hf_config(const std::string& path);
// The same, from an already loaded document (tests, in-memory configs).
Model model_from_hf_config(const ConfigNode& root);

}  // namespace cs::wl
