#include "workloads/model.h"

#include <algorithm>
#include <filesystem>

#include "workloads/hf_config.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::wl {
namespace {

constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;  // 16M: far above any real width
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 26;
constexpr std::int64_t kMaxSequence = std::int64_t{1} << 26;

ConfigNode required(const ConfigNode& node, std::string_view key);

TransformerConfig parse_transformer(const ConfigNode& root) {
  TransformerConfig t;
  t.layers = static_cast<int>(required(root, "layers").as_int(1, kMaxLayers));
  t.hidden = required(root, "hidden").as_int(1, kMaxWidth);
  t.heads = static_cast<int>(required(root, "heads").as_int(1, kMaxWidth));
  t.kv_heads = t.heads;
  if (auto n = root.find("kv_heads")) t.kv_heads = static_cast<int>(n->as_int(1, kMaxWidth));
  t.ffn_hidden = 4 * t.hidden;
  if (auto n = root.find("ffn_hidden")) t.ffn_hidden = n->as_int(1, kMaxWidth);
  t.max_sequence = required(root, "max_sequence").as_int(1, kMaxSequence);
  if (auto n = root.find("gated_mlp")) t.gated_mlp = n->as_bool();
  if (auto n = root.find("bias")) t.bias = n->as_bool();
  if (auto n = root.find("dropout")) t.dropout = n->as_bool();
  if (auto n = root.find("norm")) t.norm = n->as_enum(kNormKindNames);
  if (auto n = root.find("position")) t.position = n->as_enum(kPositionEmbeddingNames);
  if (auto n = root.find("type_vocab")) t.type_vocab = static_cast<int>(n->as_int(0, 1 << 20));
  if (auto n = root.find("tied_embeddings")) t.tied_embeddings = n->as_bool();
  if (auto moe = root.find("moe")) {
    moe->expect_only({"experts", "top_k", "ffn_hidden", "shared_experts", "dense_layers"});
    t.experts = static_cast<int>(required(*moe, "experts").as_int(1, 1 << 20));
    t.top_k = static_cast<int>(required(*moe, "top_k").as_int(1, 1 << 20));
    t.expert_ffn_hidden = t.ffn_hidden;
    if (auto n = moe->find("ffn_hidden")) t.expert_ffn_hidden = n->as_int(1, kMaxWidth);
    if (auto n = moe->find("shared_experts"))
      t.shared_experts = static_cast<int>(n->as_int(0, 1 << 20));
    if (auto n = moe->find("dense_layers"))
      t.dense_layers = static_cast<int>(n->as_int(0, kMaxLayers));
  }
  if (auto mla = root.find("mla")) {
    mla->expect_only(
        {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    if (auto n = mla->find("q_lora_rank")) t.mla.q_lora_rank = n->as_int(0, kMaxWidth);
    t.mla.kv_lora_rank = required(*mla, "kv_lora_rank").as_int(1, kMaxWidth);
    t.mla.qk_nope_head_dim = required(*mla, "qk_nope_head_dim").as_int(1, kMaxWidth);
    t.mla.qk_rope_head_dim = required(*mla, "qk_rope_head_dim").as_int(0, kMaxWidth);
    t.mla.v_head_dim = required(*mla, "v_head_dim").as_int(1, kMaxWidth);
  }
  if (auto in = root.find("input")) {
    const ConfigNode kind = required(*in, "kind");
    if (kind.as_enum(kInputKindNames) == InputKind::kTokens) {
      in->expect_only({"kind"});
    } else {
      in->expect_only({"kind", "image_size", "patch_size", "channels"});
      t.input = InputKind::kPatches;
      t.image_size = static_cast<int>(required(*in, "image_size").as_int(1, 1 << 20));
      t.patch_size = static_cast<int>(required(*in, "patch_size").as_int(1, 1 << 20));
      t.channels = static_cast<int>(required(*in, "channels").as_int(1, 1 << 16));
    }
  }
  if (auto hd = root.find("head")) {
    const ConfigNode kind = required(*hd, "kind");
    t.head = kind.as_enum(kHeadKindNames);
    if (t.head == HeadKind::kClassifier) {
      hd->expect_only({"kind", "classes"});
      t.classes = static_cast<int>(required(*hd, "classes").as_int(1, 1 << 24));
    } else {
      hd->expect_only({"kind"});
    }
  }
  // The vocabulary is needed by a token input or a vocabulary head, and means nothing otherwise.
  const bool needs_vocab = t.input == InputKind::kTokens || t.head != HeadKind::kClassifier;
  if (needs_vocab) {
    t.vocab = required(root, "vocab").as_int(1, kMaxVocab);
  } else if (auto n = root.find("vocab")) {
    n->fail("a model with patch input and a classifier head has no vocabulary");
  }
  return t;
}

CnnConfig parse_cnn(const ConfigNode& root) {
  CnnConfig c;
  if (auto n = root.find("image_size")) c.image_size = static_cast<int>(n->as_int(1, 1 << 20));
  const ConfigNode layers = required(root, "layers");
  if (!layers.is_array()) layers.fail_expected("an array of layers");
  if (layers.size() == 0) layers.fail("a CNN needs at least one layer");
  for (const ConfigNode& n : layers.elements()) {
    n.expect_only({"name", "forward", "parameters", "activation_elements", "output_elements"});
    CnnLayer l;
    l.name = required(n, "name").as_string();
    l.forward_per_sample = required(n, "forward").as_flops();
    l.parameters = required(n, "parameters").as_int(0, std::int64_t{1} << 40);
    l.activation_elements = required(n, "activation_elements").as_int(0, std::int64_t{1} << 40);
    l.output_elements = required(n, "output_elements").as_int(1, std::int64_t{1} << 40);
    c.layers.push_back(std::move(l));
  }
  return c;
}

// at() for a required key, failing at the path of the missing key itself.
ConfigNode required(const ConfigNode& node, std::string_view key) {
  if (auto n = node.find(key)) return *n;
  throw ConfigError(node.file(), json_pointer_append(node.path(), key),
                    "missing required key \"" + std::string(key) + "\"");
}

std::string stem_of(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

std::int64_t TransformerConfig::patch_tokens() const {
  if (input != InputKind::kPatches) return 0;
  const std::int64_t side = image_size / patch_size;
  return side * side + 1;
}

Model parse_model(const ConfigNode& root) {
  Model m;
  const ModelFamily family = required(root, "family").as_enum(kModelFamilyNames);
  if (family == ModelFamily::kTransformer) {
    root.expect_only(
        {"name",  "description", "source",     "family",   "layers",       "hidden",
         "heads", "kv_heads",    "ffn_hidden", "vocab",    "max_sequence", "gated_mlp",
         "bias",  "dropout",     "norm",       "position", "type_vocab",   "tied_embeddings",
         "moe",   "mla",         "input",      "head"});
  } else {
    root.expect_only({"name", "description", "source", "family", "image_size", "layers"});
  }
  m.name = root.has("name") ? root.at("name").as_string() : stem_of(root.file());
  if (auto n = root.find("description")) m.description = n->as_string();
  if (auto n = root.find("source")) m.source = n->as_string();
  m.family = family;
  if (family == ModelFamily::kTransformer) {
    m.transformer = parse_transformer(root);
  } else {
    m.cnn = parse_cnn(root);
  }
  validate_model(m, root.file());
  return m;
}

void validate_model(const Model& m, const std::string& file) {
  const auto fail = [&](const std::string& path, const std::string& msg) {
    throw ConfigError(file, path, msg);
  };
  if (m.family == ModelFamily::kCnn) {
    if (m.cnn.layers.empty()) fail("/layers", "a CNN needs at least one layer");
    for (std::size_t i = 0; i < m.cnn.layers.size(); ++i) {
      if (m.cnn.layers[i].forward_per_sample.value() < 0) {
        fail("/layers/" + std::to_string(i) + "/forward", "must not be negative");
      }
    }
    return;
  }
  const TransformerConfig& t = m.transformer;
  if (t.layers < 1) fail("/layers", "must be at least 1; got " + std::to_string(t.layers));
  if (t.hidden < 1) fail("/hidden", "must be at least 1; got " + std::to_string(t.hidden));
  if (t.heads < 1) fail("/heads", "must be at least 1; got " + std::to_string(t.heads));
  if (!t.is_mla() && t.hidden % t.heads != 0) {
    fail("/heads", "heads (" + std::to_string(t.heads) + ") must divide hidden (" +
                       std::to_string(t.hidden) + ")");
  }
  if (t.kv_heads < 1 || t.heads % t.kv_heads != 0) {
    fail("/kv_heads", "kv_heads (" + std::to_string(t.kv_heads) + ") must divide heads (" +
                          std::to_string(t.heads) + ")");
  }
  if (t.ffn_hidden < 1) fail("/ffn_hidden", "must be at least 1");
  if (t.max_sequence < 1) fail("/max_sequence", "must be at least 1");
  if (t.is_moe()) {
    if (t.experts < 2)
      fail("/moe/experts", "a mixture needs at least 2 experts; got " + std::to_string(t.experts));
    if (t.top_k < 1 || t.top_k > t.experts) {
      fail("/moe/top_k", "top_k (" + std::to_string(t.top_k) + ") must be from 1 to experts (" +
                             std::to_string(t.experts) + ")");
    }
    if (t.expert_ffn_hidden < 1) fail("/moe/ffn_hidden", "must be at least 1");
    if (t.shared_experts < 0) fail("/moe/shared_experts", "must not be negative");
    if (t.dense_layers < 0 || t.dense_layers >= t.layers) {
      fail("/moe/dense_layers", "dense_layers (" + std::to_string(t.dense_layers) +
                                    ") must leave at least one of the " +
                                    std::to_string(t.layers) + " layers with experts");
    }
  }
  if (t.is_mla()) {
    if (t.kv_heads != t.heads) {
      fail("/kv_heads", "multi-head latent attention gives every head its own keys and values: "
                        "kv_heads must equal heads (" + std::to_string(t.heads) + ")");
    }
    if (t.bias) fail("/bias", "multi-head latent attention is modelled without biases");
    if (t.mla.qk_nope_head_dim < 1 || t.mla.v_head_dim < 1 || t.mla.qk_rope_head_dim < 0 ||
        t.mla.q_lora_rank < 0) {
      fail("/mla", "head widths must be at least 1 (qk_rope_head_dim and q_lora_rank at least 0)");
    }
  }
  if (t.input == InputKind::kPatches) {
    if (t.patch_size < 1 || t.image_size % t.patch_size != 0) {
      fail("/input/patch_size", "patch_size (" + std::to_string(t.patch_size) +
                                    ") must divide image_size (" + std::to_string(t.image_size) +
                                    ")");
    }
    if (t.tied_embeddings && t.head != HeadKind::kClassifier) {
      fail("/tied_embeddings", "a patch input has no token table to tie the output to");
    }
  }
  if ((t.input == InputKind::kTokens || t.head != HeadKind::kClassifier) && t.vocab < 1) {
    fail("/vocab", "must be at least 1");
  }
  if (t.head == HeadKind::kClassifier && t.classes < 1) fail("/head/classes", "must be at least 1");
}

Model load_model(const std::string& path_or_name) {
  namespace fs = std::filesystem;
  std::string path = path_or_name;
  std::error_code ec;  // a name the file system cannot examine (too long) is not there
  if (!fs::exists(path, ec) && path_or_name.find('/') == std::string::npos) {
    const fs::path bundled = fs::path(CS_CONFIG_DIR) / "models" / (path_or_name + ".json");
    if (fs::exists(bundled, ec)) {
      path = bundled.string();
    } else {
      std::string known;
      for (const auto& n : bundled_model_names()) known += (known.empty() ? "" : ", ") + n;
      throw ConfigError(path_or_name, "",
                        "no such file, and no bundled model of that name (bundled: " + known + ")");
    }
  }
  const ConfigDocument doc = ConfigDocument::load(path);
  if (doc.json().is_object() && doc.json().contains("model_type"))
    return model_from_hf_config(doc.root());
  return parse_model(doc.root());
}

std::vector<std::string> bundled_model_names() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(CS_CONFIG_DIR) / "models", ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::int64_t norm_parameters(NormKind n, std::int64_t h) {
  return n == NormKind::kLayerNorm ? 2 * h : h;
}

std::int64_t mlp_parameters(const TransformerConfig& t, std::int64_t width) {
  const std::int64_t h = t.hidden;
  if (t.gated_mlp) return 3 * h * width + (t.bias ? 2 * width + h : 0);
  return 2 * h * width + (t.bias ? width + h : 0);
}

int pipeline_layers(const Model& m) {
  return m.family == ModelFamily::kTransformer ? m.transformer.layers
                                               : static_cast<int>(m.cnn.layers.size());
}

std::int64_t attention_parameters(const TransformerConfig& t) {
  const std::int64_t h = t.hidden;
  if (t.is_mla()) {
    const TransformerConfig::Mla& a = t.mla;
    const std::int64_t heads = t.heads, qk = t.qk_head_dim();
    const std::int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank +
                                                   norm_parameters(t.norm, a.q_lora_rank) +
                                                   a.q_lora_rank * heads * qk
                                             : h * heads * qk;
    const std::int64_t kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                            norm_parameters(t.norm, a.kv_lora_rank) +
                            a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
    return q + kv + heads * a.v_head_dim * h;
  }
  const std::int64_t kv = t.kv_hidden();
  return 2 * h * h + 2 * h * kv + (t.bias ? 2 * h + 2 * kv : 0);
}

TransformerConfig block_config(const TransformerConfig& t, int layer) {
  if (!t.is_moe() || t.is_moe_layer(layer)) return t;
  TransformerConfig dense = t;
  dense.experts = 0;
  dense.top_k = 0;
  dense.expert_ffn_hidden = 0;
  dense.shared_experts = 0;
  dense.dense_layers = 0;
  return dense;
}

std::int64_t block_parameters(const TransformerConfig& t, int layer) {
  const std::int64_t p = 2 * norm_parameters(t.norm, t.hidden) + attention_parameters(t);
  if (!t.is_moe_layer(layer)) return p + mlp_parameters(t, t.ffn_hidden);
  return p + t.hidden * t.experts + t.experts * mlp_parameters(t, t.expert_ffn_hidden) +
         (t.shared_experts > 0 ? mlp_parameters(t, t.shared_experts * t.expert_ffn_hidden) : 0);
}

std::int64_t block_active_parameters(const TransformerConfig& t, int layer) {
  if (!t.is_moe_layer(layer)) return block_parameters(t, layer);
  return block_parameters(t, layer) -
         (t.experts - t.top_k) * mlp_parameters(t, t.expert_ffn_hidden);
}

std::int64_t embedding_parameters(const TransformerConfig& t) {
  const std::int64_t h = t.hidden;
  if (t.input == InputKind::kPatches) {
    const std::int64_t patch = std::int64_t{t.channels} * t.patch_size * t.patch_size;
    const std::int64_t positions =
        t.position == PositionEmbedding::kLearned ? t.patch_tokens() * h : 0;
    return patch * h + (t.bias ? h : 0) + h /* class token */ + positions;
  }
  const std::int64_t positions = t.position == PositionEmbedding::kLearned ? t.max_sequence * h : 0;
  return t.vocab * h + positions + std::int64_t{t.type_vocab} * h;
}

std::int64_t head_parameters(const TransformerConfig& t) {
  const std::int64_t h = t.hidden;
  const std::int64_t norm = norm_parameters(t.norm, h);
  switch (t.head) {
    case HeadKind::kLm:
      return norm + (t.tied_embeddings ? 0 : t.vocab * h);
    case HeadKind::kMlm:
      return norm + h * h + (t.bias ? h : 0) + norm_parameters(t.norm, h) +
             (t.tied_embeddings ? 0 : t.vocab * h) + t.vocab /* decoder bias */;
    case HeadKind::kClassifier:
      return norm + h * t.classes + (t.bias ? t.classes : 0);
  }
  return norm;
}

std::int64_t parameter_count(const Model& m) {
  if (m.family == ModelFamily::kCnn) {
    std::int64_t p = 0;
    for (const auto& l : m.cnn.layers) p += l.parameters;
    return p;
  }
  const TransformerConfig& t = m.transformer;
  // The dense blocks (the first dense_layers of a mixture) and the rest, each kind costing the
  // same.
  const std::int64_t moe = t.moe_layers();
  return (t.layers - moe) * block_parameters(t, 0) +
         (moe > 0 ? moe * block_parameters(t, t.layers - 1) : 0) + embedding_parameters(t) +
         head_parameters(t);
}

std::int64_t active_parameter_count(const Model& m) {
  if (m.family == ModelFamily::kCnn || !m.transformer.is_moe()) return parameter_count(m);
  const TransformerConfig& t = m.transformer;
  const std::int64_t moe = t.moe_layers();
  return (t.layers - moe) * block_active_parameters(t, 0) +
         moe * block_active_parameters(t, t.layers - 1) + embedding_parameters(t) +
         head_parameters(t);
}

}  // namespace cs::wl
