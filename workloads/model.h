// Model descriptions: what a network is, independent of how it is split over GPUs.
//
// Two families:
//   transformer  decoder LLMs (GPT, Llama, Mixtral, DeepSeek), encoders (BERT) and vision
//                transformers (ViT), described by their hyper-parameters: l layers of width h with
//                a heads (kv_heads of them for keys and values: GQA; or multi-head latent
//                attention, MLA), an MLP of width f (gated: SwiGLU, 3 matrices), optionally a
//                mixture of E experts of width f_e of which each token uses top_k, plus shared
//                experts every token uses, after a first few dense blocks (DeepSeek).
//   cnn          an explicit list of layers (or groups of layers) with their per-sample forward
//                FLOPs, parameter counts and activation sizes (ResNet-50: 18 groups).
//
// Files: configs/models/<name>.json, format in docs/models.md. load_model("gpt-175b") finds the
// bundled file; a path to a Hugging Face config.json (it has "model_type") is imported through
// model_from_hf_config (workloads/hf_config.h). Errors are ConfigErrors naming file and JSON path.
//
// Parameter counts here are for the whole model (no parallelism); per-GPU costs are in
// workloads/layer_cost.h and memory in workloads/memory.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/enum_names.h"
#include "core/units.h"

namespace cs::wl {

// The most transformer blocks a model file or a Hugging Face config may declare (the largest
// published models have about 200): a model of 10^6 blocks asked for minutes of simulation
// (docs/cli.md, "Limits").
inline constexpr std::int64_t kMaxLayers = 10000;

enum class ModelFamily { kTransformer, kCnn };
enum class NormKind {
  kLayerNorm,
  kRmsNorm
};  // LayerNorm: 2h parameters (scale, shift); RMSNorm: h
enum class PositionEmbedding { kLearned, kRotary, kNone };  // learned: a max_sequence x h table
enum class InputKind { kTokens, kPatches };  // token ids (vocab table) or image patches (ViT)
// What follows the last block:
//   lm          logits over the vocabulary (V x h, shared with the input table when tied)
//   mlm         BERT's masked-LM head: dense h x h + norm, then the (usually tied) vocab projection
//   classifier  a linear classifier on one token (ViT's class token): h x classes
enum class HeadKind { kLm, kMlm, kClassifier };

// The names of the model JSON format (docs/models.md), in the order errors list them.
inline constexpr EnumName<ModelFamily> kModelFamilyNames[] = {
    {ModelFamily::kTransformer, "transformer"}, {ModelFamily::kCnn, "cnn"}};
inline constexpr EnumName<NormKind> kNormKindNames[] = {{NormKind::kLayerNorm, "layernorm"},
                                                        {NormKind::kRmsNorm, "rmsnorm"}};
inline constexpr EnumName<PositionEmbedding> kPositionEmbeddingNames[] = {
    {PositionEmbedding::kLearned, "learned"},
    {PositionEmbedding::kRotary, "rotary"},
    {PositionEmbedding::kNone, "none"}};
inline constexpr EnumName<InputKind> kInputKindNames[] = {{InputKind::kTokens, "tokens"},
                                                          {InputKind::kPatches, "patches"}};
inline constexpr EnumName<HeadKind> kHeadKindNames[] = {
    {HeadKind::kLm, "lm"}, {HeadKind::kMlm, "mlm"}, {HeadKind::kClassifier, "classifier"}};

inline const char* to_string(ModelFamily f) { return enum_name(kModelFamilyNames, f); }
inline const char* to_string(NormKind n) { return enum_name(kNormKindNames, n); }

struct TransformerConfig {
  int layers = 0;                 // l
  std::int64_t hidden = 0;        // h
  int heads = 0;                  // a; must divide h
  int kv_heads = 0;               // key/value heads (GQA); must divide heads; = heads for MHA
  std::int64_t ffn_hidden = 0;    // f, the MLP's inner width (4h in GPT)
  std::int64_t vocab = 0;         // V (token input and lm/mlm heads)
  std::int64_t max_sequence = 0;  // longest sequence (learned position table size)
  bool gated_mlp = false;         // SwiGLU: gate and up projections h->f, down f->h
  bool bias = true;               // linear layers have biases (GPT, BERT, ViT: yes; Llama: no)
  bool dropout = false;           // dropout after attention softmax and each residual branch
  NormKind norm = NormKind::kLayerNorm;
  PositionEmbedding position = PositionEmbedding::kLearned;
  int type_vocab = 0;           // BERT's token-type (segment) table rows; 0 = none
  bool tied_embeddings = true;  // the output projection shares the input table
  // Mixture of experts: every block's MLP but the first dense_layers is `experts` routed MLPs of
  // width expert_ffn_hidden and a router (h x experts, no bias); each token goes through top_k of
  // them and through all shared_experts, MLPs of the same width that every token uses (DeepSeek's
  // n_shared_experts, run as one MLP shared_experts x expert_ffn_hidden wide, as Hugging Face and
  // Megatron-Core's --moe-shared-expert-intermediate-size do). The first dense_layers blocks have
  // a dense MLP of width ffn_hidden (DeepSeek's first_k_dense_replace). experts == 0: dense.
  int experts = 0;
  int top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
  int shared_experts = 0;
  int dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank == 0: standard attention). Queries
  // come from a down-projection h -> q_lora_rank, an RMSNorm and an up-projection to a heads of
  // qk_nope_head_dim + qk_rope_head_dim (q_lora_rank == 0: one projection h -> that width); keys
  // and values from a down-projection h -> kv_lora_rank + qk_rope_head_dim (the rotary part of
  // the key, shared by all heads), an RMSNorm over the kv_lora_rank latent and an up-projection to
  // a heads of qk_nope_head_dim (keys) + v_head_dim (values). The output projection maps a
  // v_head_dim-wide heads back to h. No biases.
  struct Mla {
    std::int64_t q_lora_rank = 0;
    std::int64_t kv_lora_rank = 0;
    std::int64_t qk_nope_head_dim = 0;
    std::int64_t qk_rope_head_dim = 0;
    std::int64_t v_head_dim = 0;
  };
  Mla mla{};
  InputKind input = InputKind::kTokens;
  int image_size = 0;  // patches: square images of image_size^2 pixels,
  int patch_size = 0;  //          cut into (image_size/patch_size)^2 patches,
  int channels = 0;    //          plus one class token
  HeadKind head = HeadKind::kLm;
  int classes = 0;  // classifier head only

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_hidden() const { return head_dim() * kv_heads; }  // width of K (and of V)
  bool is_moe() const { return experts > 0; }
  // A decoder (language-model head) masks attention causally: token i attends to tokens <= i.
  // Encoders (BERT's mlm head) and vision transformers (classifier) attend both ways.
  bool causal() const { return head == HeadKind::kLm; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  // Width of one head's query and key (MLA: nope + rope) and of its value and context.
  std::int64_t qk_head_dim() const {
    return is_mla() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim();
  }
  std::int64_t v_head_dim() const { return is_mla() ? mla.v_head_dim : head_dim(); }
  // Whether block `layer` (0-based) has experts: a mixture past the first dense_layers blocks.
  bool is_moe_layer(int layer) const { return is_moe() && layer >= dense_layers; }
  int moe_layers() const { return is_moe() ? layers - dense_layers : 0; }
  // Tokens per sample for vision inputs (patches + class token); 0 for token inputs, whose
  // sequence length comes from the parallel plan.
  std::int64_t patch_tokens() const;
};

struct CnnLayer {
  std::string name;
  Flops forward_per_sample{0};  // forward FLOPs for one sample (2 x multiply-adds)
  std::int64_t parameters = 0;
  std::int64_t activation_elements = 0;  // per sample: elements kept from forward for backward
  std::int64_t output_elements = 0;  // per sample: the layer's output (sent across a pipeline cut)
};

struct CnnConfig {
  int image_size = 0;  // informational: the input the FLOPs were computed for
  std::vector<CnnLayer> layers;
};

struct Model {
  std::string name;
  std::string description;
  std::string source;  // paper or model card the numbers come from
  ModelFamily family = ModelFamily::kTransformer;
  TransformerConfig transformer;  // family == kTransformer
  CnnConfig cnn;                  // family == kCnn
};

// ---- loading -------------------------------------------------------------------------------
// A file path, or a bare name ("gpt-175b", "llama3-70b") found as configs/models/<name>.json.
// Files with a top-level "model_type" are read as Hugging Face config.json files.
Model load_model(const std::string& path_or_name);
// Parses and validates a model document (the root of a configs/models file).
Model parse_model(const ConfigNode& root);
// Checks the cross-field rules (heads divide hidden, kv_heads divide heads, top_k <= experts,
// ...). `file` names the file in errors; paths are those of the model JSON format.
void validate_model(const Model& m, const std::string& file);
// Names of the bundled models (configs/models/*.json without ".json"), sorted.
std::vector<std::string> bundled_model_names();

// ---- sizes (whole model, no parallelism) ---------------------------------------------------
// Layers a pipeline can be cut between: transformer blocks, or CNN layer entries.
int pipeline_layers(const Model& m);
// Parameters of one norm of width h: LayerNorm 2h (scale and shift), RMSNorm h (scale).
std::int64_t norm_parameters(NormKind n, std::int64_t h);
// Parameters of one MLP of inner width `width` in t's blocks: 2 h width (gated: 3 h width), plus
// with biases width + h (gated: 2 width + h).
std::int64_t mlp_parameters(const TransformerConfig& t, std::int64_t width);
// Parameters of one block's attention. Standard: Q and output 2 h^2, K and V 2 h k_v (k_v =
// kv_heads d), biases 2 h + 2 k_v. MLA (no biases), with d_qk = nope + rope:
//   h r_q + r_q + r_q a d_qk        query down-projection, its RMSNorm, up-projection
//                                   (r_q = 0: h a d_qk)
//   h (r_kv + rope) + r_kv          key/value down-projection, the latent's RMSNorm
//   r_kv a (nope + d_v)             key/value up-projection
//   a d_v h                         output projection
std::int64_t attention_parameters(const TransformerConfig& t);
// The block as block `layer` (0-based) runs it: t itself for a MoE block, t without experts for
// one of the first dense_layers blocks (a dense MLP of width ffn_hidden).
TransformerConfig block_config(const TransformerConfig& t, int layer);
// Parameters of transformer block `layer` (all experts for MoE; shared experts included).
std::int64_t block_parameters(const TransformerConfig& t, int layer);
// Parameters of block `layer` a token actually uses (top_k routed experts plus the shared ones;
// = block_parameters when dense).
std::int64_t block_active_parameters(const TransformerConfig& t, int layer);
// The input side: token, position and type tables, or ViT's patch projection, class token and
// position table.
std::int64_t embedding_parameters(const TransformerConfig& t);
// The output side: final norm plus the head (an untied lm projection counts V x h; a tied one
// only its bias, if any).
std::int64_t head_parameters(const TransformerConfig& t);
// All trainable parameters.
std::int64_t parameter_count(const Model& m);
// Parameters used per token (MoE: top_k routed experts and the shared ones; the embedding table
// counted whole, as parameter_count does); = parameter_count for dense models and CNNs.
std::int64_t active_parameter_count(const Model& m);

}  // namespace cs::wl
