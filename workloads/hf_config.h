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
//   is
//                   each expert's width.
//   gpt2            n_embd, n_layer, n_head, n_positions, n_inner (null: 4 n_embd), vocab_size,
//                   tie_word_embeddings (default true), resid_pdrop/attn_pdrop/embd_pdrop (default
//                   0.1). Architecture: LayerNorm, learned positions, GELU MLP, biases.
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
