#include "workloads/hf_config.h"

#include <filesystem>

#include "core/enum_names.h"

namespace cs::wl {
namespace {

constexpr std::int64_t kMax = std::int64_t{1} << 26;

// The supported model_type values (hf_config.h), in the order errors list them.
enum class ModelType { kLlama, kMistral, kMixtral, kGpt2, kDeepseekV2, kDeepseekV3 };
constexpr EnumName<ModelType> kModelTypeNames[] = {{ModelType::kLlama, "llama"},
                                                   {ModelType::kMistral, "mistral"},
                                                   {ModelType::kMixtral, "mixtral"},
                                                   {ModelType::kGpt2, "gpt2"},
                                                   {ModelType::kDeepseekV2, "deepseek_v2"},
                                                   {ModelType::kDeepseekV3, "deepseek_v3"}};

ConfigNode required(const ConfigNode& node, std::string_view key) {
  if (auto n = node.find(key)) return *n;
  throw ConfigError(node.file(), json_pointer_append(node.path(), key),
                    "missing required key \"" + std::string(key) + "\"");
}

// An optional value that may also be JSON null (HF writes "n_inner": null).
std::optional<ConfigNode> maybe(const ConfigNode& node, std::string_view key) {
  auto n = node.find(key);
  if (n && n->json().is_null()) return std::nullopt;
  return n;
}

bool flag(const ConfigNode& node, std::string_view key, bool fallback) {
  auto n = maybe(node, key);
  return n ? n->as_bool() : fallback;
}

bool positive_rate(const ConfigNode& node, std::string_view key, double fallback) {
  auto n = maybe(node, key);
  return (n ? n->as_number() : fallback) > 0;
}

std::string model_name(const ConfigNode& root) {
  if (auto n = maybe(root, "_name_or_path")) {
    std::string s = n->as_string();
    if (!s.empty()) return s;
  }
  const std::filesystem::path p(root.file());
  if (p.filename() == "config.json" && p.has_parent_path() && !p.parent_path().filename().empty()) {
    return p.parent_path().filename().string();
  }
  return p.stem().string();
}

void check_heads(const TransformerConfig& t, const ConfigNode& root, std::string_view heads_key,
                 std::string_view kv_key) {
  if (t.hidden % t.heads != 0) {
    required(root, heads_key)
        .fail(std::string(heads_key) + " (" + std::to_string(t.heads) +
              ") must divide the hidden size (" + std::to_string(t.hidden) + ")");
  }
  if (t.heads % t.kv_heads != 0) {
    required(root, kv_key)
        .fail(std::string(kv_key) + " (" + std::to_string(t.kv_heads) +
              ") must divide the number of attention heads (" + std::to_string(t.heads) + ")");
  }
}

TransformerConfig llama_like(const ConfigNode& root, bool moe) {
  TransformerConfig t;
  t.hidden = required(root, "hidden_size").as_int(1, kMax);
  t.layers = static_cast<int>(required(root, "num_hidden_layers").as_int(1, kMaxLayers));
  t.heads = static_cast<int>(required(root, "num_attention_heads").as_int(1, kMax));
  t.kv_heads = t.heads;
  if (auto n = maybe(root, "num_key_value_heads"))
    t.kv_heads = static_cast<int>(n->as_int(1, kMax));
  t.ffn_hidden = required(root, "intermediate_size").as_int(1, kMax);
  t.vocab = required(root, "vocab_size").as_int(1, kMax);
  t.max_sequence = required(root, "max_position_embeddings").as_int(1, kMax);
  t.tied_embeddings = flag(root, "tie_word_embeddings", false);
  t.bias = flag(root, "attention_bias", false) || flag(root, "mlp_bias", false);
  t.dropout = positive_rate(root, "attention_dropout", 0.0);
  t.gated_mlp = true;
  t.norm = NormKind::kRmsNorm;
  t.position = PositionEmbedding::kRotary;
  check_heads(t, root, "num_attention_heads", "num_key_value_heads");
  if (auto n = maybe(root, "head_dim")) {
    if (n->as_int(1, kMax) != t.hidden / t.heads) {
      n->fail("head_dim must equal hidden_size / num_attention_heads (" +
              std::to_string(t.hidden / t.heads) + "); other head widths are not modelled");
    }
  }
  if (moe) {
    t.experts = static_cast<int>(required(root, "num_local_experts").as_int(2, 1 << 20));
    t.top_k = static_cast<int>(required(root, "num_experts_per_tok").as_int(1, t.experts));
    t.expert_ffn_hidden = t.ffn_hidden;
  }
  return t;
}

TransformerConfig gpt2(const ConfigNode& root) {
  TransformerConfig t;
  t.hidden = required(root, "n_embd").as_int(1, kMax);
  t.layers = static_cast<int>(required(root, "n_layer").as_int(1, kMaxLayers));
  t.heads = static_cast<int>(required(root, "n_head").as_int(1, kMax));
  t.kv_heads = t.heads;
  t.max_sequence = required(root, "n_positions").as_int(1, kMax);
  t.vocab = required(root, "vocab_size").as_int(1, kMax);
  t.ffn_hidden = 4 * t.hidden;
  if (auto n = maybe(root, "n_inner")) t.ffn_hidden = n->as_int(1, kMax);
  t.tied_embeddings = flag(root, "tie_word_embeddings", true);
  t.dropout = positive_rate(root, "resid_pdrop", 0.1) || positive_rate(root, "attn_pdrop", 0.1) ||
              positive_rate(root, "embd_pdrop", 0.1);
  t.bias = true;
  t.gated_mlp = false;
  t.norm = NormKind::kLayerNorm;
  t.position = PositionEmbedding::kLearned;
  check_heads(t, root, "n_head", "n_head");
  return t;
}

// DeepSeek-V2/V3 (hf_config.h): multi-head latent attention, and past the first
// first_k_dense_replace blocks a mixture of n_routed_experts plus n_shared_experts.
TransformerConfig deepseek(const ConfigNode& root) {
  TransformerConfig t;
  t.hidden = required(root, "hidden_size").as_int(1, kMax);
  t.layers = static_cast<int>(required(root, "num_hidden_layers").as_int(1, kMaxLayers));
  t.heads = static_cast<int>(required(root, "num_attention_heads").as_int(1, kMax));
  t.kv_heads = t.heads;  // MLA: every head its own keys and values (num_key_value_heads unused)
  t.ffn_hidden = required(root, "intermediate_size").as_int(1, kMax);
  t.vocab = required(root, "vocab_size").as_int(1, kMax);
  t.max_sequence = required(root, "max_position_embeddings").as_int(1, kMax);
  t.tied_embeddings = flag(root, "tie_word_embeddings", false);
  if (flag(root, "attention_bias", false)) {
    required(root, "attention_bias").fail("attention biases are not modelled with latent attention");
  }
  t.bias = false;
  t.dropout = positive_rate(root, "attention_dropout", 0.0);
  t.gated_mlp = true;
  t.norm = NormKind::kRmsNorm;
  t.position = PositionEmbedding::kRotary;
  if (auto n = maybe(root, "q_lora_rank")) t.mla.q_lora_rank = n->as_int(0, kMax);
  t.mla.kv_lora_rank = required(root, "kv_lora_rank").as_int(1, kMax);
  t.mla.qk_nope_head_dim = required(root, "qk_nope_head_dim").as_int(1, kMax);
  t.mla.qk_rope_head_dim = required(root, "qk_rope_head_dim").as_int(0, kMax);
  t.mla.v_head_dim = required(root, "v_head_dim").as_int(1, kMax);
  // n_routed_experts null: every MLP dense (transformers' DeepseekV2Config allows it).
  if (auto n = maybe(root, "n_routed_experts")) {
    t.experts = static_cast<int>(n->as_int(2, 1 << 20));
    t.top_k = static_cast<int>(required(root, "num_experts_per_tok").as_int(1, t.experts));
    t.expert_ffn_hidden = required(root, "moe_intermediate_size").as_int(1, kMax);
    if (auto s = maybe(root, "n_shared_experts"))
      t.shared_experts = static_cast<int>(s->as_int(0, 1 << 20));
    if (auto d = maybe(root, "first_k_dense_replace")) {
      t.dense_layers = static_cast<int>(d->as_int(0, t.layers - 1));
    }
    if (auto f = maybe(root, "moe_layer_freq"); f && f->as_int(1, kMax) != 1) {
      f->fail("only moe_layer_freq 1 is modelled (every block past first_k_dense_replace has "
              "experts)");
    }
  }
  return t;
}

}  // namespace

Model model_from_hf_config(const ConfigNode& root) {
  const ModelType type = required(root, "model_type").as_enum(kModelTypeNames);
  Model m;
  m.family = ModelFamily::kTransformer;
  m.name = model_name(root);
  m.source = "Hugging Face config.json (" + root.file() + ")";
  switch (type) {
    case ModelType::kLlama:
    case ModelType::kMistral:
      m.transformer = llama_like(root, false);
      break;
    case ModelType::kMixtral:
      m.transformer = llama_like(root, true);
      break;
    case ModelType::kGpt2:
      m.transformer = gpt2(root);
      break;
    case ModelType::kDeepseekV2:
    case ModelType::kDeepseekV3:
      m.transformer = deepseek(root);
      break;
  }
  m.description = std::string(enum_name(kModelTypeNames, type)) +
                  " architecture imported from a Hugging Face config";
  validate_model(m, root.file());
  return m;
}

Model model_from_hf_config(const std::string& path) {
  const ConfigDocument doc = ConfigDocument::load(path);
  return model_from_hf_config(doc.root());
}

}  // namespace cs::wl
