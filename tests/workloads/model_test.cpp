// The model zoo and the model file format: every bundled model loads, parameter counts match
// the published totals, and malformed files fail naming the file and the JSON path.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

double rel(double got, double want) { return std::abs(got - want) / want; }

TEST(ModelZoo, EveryBundledModelLoads) {
  const auto names = bundled_model_names();
  // 10 GPT sizes of the SC21 table + GPT-3 175B + GPT-2 XL, 3 Llama 2, 3 Llama 3, Mixtral,
  // ResNet-50, ViT-L/16, BERT-Large; issue 10: ResNet-101, VGG-16, Inception-v3, 3 Llama 3.1,
  // 9 GPT sizes of Megatron-Core's scaling table, DeepSeek-V3 and DeepSeek-V2-Lite.
  EXPECT_EQ(names.size(), 39u);
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const Model m = load_model(n);
    EXPECT_EQ(m.name, n);
    EXPECT_FALSE(m.source.empty());
    EXPECT_GT(parameter_count(m), 0);
  }
}

TEST(ModelZoo, BareNameAndPathGiveTheSameModel) {
  const Model a = load_model("llama3-8b");
  const Model b = load_model(std::string(CS_SOURCE_DIR) + "/configs/models/llama3-8b.json");
  EXPECT_EQ(parameter_count(a), parameter_count(b));
}

TEST(ModelZoo, UnknownNameListsTheBundledOnes) {
  try {
    load_model("gpt-9000b");
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gpt-9000b"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llama3-70b"), std::string::npos) << e.what();
  }
}

// Megatron's count (Narayanan et al. SC21, Sec. 5.1): P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)):
// 12h^2 of weights and 13h of biases and LayerNorms per block, V h + s h of tables. Ours adds the
// final LayerNorm (2h), so it must equal the formula + 2h exactly.
std::int64_t megatron_params(std::int64_t l, std::int64_t h, std::int64_t V, std::int64_t s) {
  return 12 * l * h * h + 13 * l * h + (V + s) * h;
}

TEST(ModelZoo, GptSizesMatchMegatronsFormulaAndTheTable) {
  struct Row {
    const char* name;
    std::int64_t l, h;
    double published_billion;
    double tolerance;
  };
  // The 1.7B row is 1.652e9 by the paper's own formula: the table rounds up (2.8%).
  const Row rows[] = {
      {"gpt-1.7b", 24, 2304, 1.7, 0.03},       {"gpt-3.6b", 30, 3072, 3.6, 0.02},
      {"gpt-7.5b", 36, 4096, 7.5, 0.02},       {"gpt-18.4b", 40, 6144, 18.4, 0.02},
      {"gpt-39.1b", 48, 8192, 39.1, 0.02},     {"gpt-76.1b", 60, 10240, 76.1, 0.02},
      {"gpt-145.6b", 80, 12288, 145.6, 0.02},  {"gpt-310.1b", 96, 16384, 310.1, 0.02},
      {"gpt-529.6b", 105, 20480, 529.6, 0.02}, {"gpt-1t", 128, 25600, 1008.0, 0.02},
      {"gpt-175b", 96, 12288, 174.6, 0.001}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const Model m = load_model(r.name);
    EXPECT_EQ(m.transformer.layers, r.l);
    EXPECT_EQ(m.transformer.hidden, r.h);
    EXPECT_EQ(parameter_count(m), megatron_params(r.l, r.h, 51200, 2048) + 2 * r.h);
    EXPECT_LT(rel(static_cast<double>(parameter_count(m)), r.published_billion * 1e9), r.tolerance);
  }
}

TEST(ModelZoo, PublishedParameterCounts) {
  struct Case {
    const char* name;
    double published;
  };
  const Case cases[] = {
      {"llama2-7b", 6.74e9},  // Llama 2 paper; HF: 6,738,415,616
      {"llama2-13b", 13.0e9},   {"llama2-70b", 69.0e9},
      {"llama3-8b", 8.03e9},    {"llama3-70b", 70.6e9},
      {"llama3-405b", 405.8e9}, {"mixtral-8x7b", 46.7e9},  // Mixtral paper: 47B total
      {"resnet50", 25.6e6},                                // torchvision: 25,557,032
      {"bert-large", 340e6},  // Devlin et al.: "340M" (ours 335.2M: no pooler/NSP)
      {"vit-l16", 304e6},     // timm vit_large_patch16_224: 304.3M (the paper rounds to 307M)
      {"gpt2-xl", 1.558e9},   // HF gpt2-xl: 1,557,611,200
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_LT(rel(static_cast<double>(parameter_count(load_model(c.name))), c.published), 0.02);
  }
  // Exact counts that follow from the architecture numbers alone.
  EXPECT_EQ(parameter_count(load_model("llama2-7b")), 6738415616);
  EXPECT_EQ(parameter_count(load_model("resnet50")), 25557032);
  EXPECT_EQ(parameter_count(load_model("gpt2-xl")), 1557611200);
}

TEST(ModelZoo, MixtralActiveParameters) {
  // Per block: attention 2*4096^2 + 2*4096*1024 = 41,943,040; router 4096*8; 2 RMSNorms 8192;
  // each expert 3*4096*14336 = 176,160,768. Active = 2 experts; tables 2*32000*4096 + 4096.
  const Model m = load_model("mixtral-8x7b");
  const std::int64_t block_active = 41943040 + 32768 + 8192 + 2 * 176160768;
  EXPECT_EQ(active_parameter_count(m), 32 * block_active + 2 * 32000 * 4096 + 4096);
  EXPECT_LT(rel(static_cast<double>(active_parameter_count(m)), 12.9e9), 0.02);
  EXPECT_LT(rel(static_cast<double>(parameter_count(m)), 46.7e9), 0.02);
}

TEST(ModelZoo, ResNet50ForwardFlops) {
  // Convention: forward FLOPs = 2 x multiply-adds of convolutions and the classifier (BatchNorm,
  // ReLU, pooling and residual adds not counted). torchvision's 4.09 G multiply-adds: 8.18 GFLOP.
  const Model m = load_model("resnet50");
  double total = 0;
  for (const auto& l : m.cnn.layers) total += l.forward_per_sample.value();
  EXPECT_NEAR(total, 2 * 4.089184256e9, 1.0);
  EXPECT_EQ(m.cnn.layers.size(), 18u);
}

// Issue 10: the CNNs of the classic data-parallel scaling studies. Same convention as ResNet-50
// (forward = 2 x multiply-adds of convolutions and linear layers; BatchNorm scale and shift
// counted). Parameters: torchvision's model pages (pytorch.org/vision/stable/models), which list
// resnet101 44,549,160, vgg16 138,357,544 and inception_v3 27,161,264 with its auxiliary
// classifier (3,326,696 of them: 1x1 768->128 + BN, 5x5 128->768 + BN, fc 768->1000), i.e.
// 23,834,568 without. Multiply-adds: the same pages' "GFLOPS" column, which counts multiply-adds
// (it lists 4.09 for ResNet-50, the 4,089,184,256 our resnet50.json halves to): ResNet-101 7.80,
// VGG-16 15.47 (the commonly cited 15.5 G, 31 GFLOP at 224x224), Inception-v3 5.71 at 299x299.
// He et al. (arXiv:1512.03385, Table 1) give 7.6e9 for ResNet-101 v1 (stride in the first 1x1
// convolution); our v1.5 shapes, as torchvision's, give 7.80e9.
TEST(ModelZoo, ClassicCnnsMatchPublishedParametersAndFlops) {
  struct Case {
    const char* name;
    std::int64_t torchvision_params;
    double published_params;  // rounded figure users quote
    double published_gmac;
    std::size_t entries;
  };
  const Case cases[] = {
      {"resnet101", 44549160, 44.5e6, 7.80, 35},     // stem, 3 + 4 + 23 + 3 bottlenecks, fc
      {"vgg16", 138357544, 138.4e6, 15.47, 8},       // 5 convolution stages, fc6, fc7, fc8
      {"inception-v3", 23834568, 23.8e6, 5.71, 14},  // 2 stem halves, 11 modules, fc
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Model m = load_model(c.name);
    ASSERT_EQ(m.family, ModelFamily::kCnn);
    EXPECT_EQ(m.cnn.layers.size(), c.entries);
    EXPECT_EQ(parameter_count(m), c.torchvision_params);
    EXPECT_LT(rel(static_cast<double>(parameter_count(m)), c.published_params), 0.01);
    double forward = 0;
    for (const auto& l : m.cnn.layers) forward += l.forward_per_sample.value();
    EXPECT_LT(rel(forward, 2 * c.published_gmac * 1e9), 0.01);
  }
  // The exact multiply-adds of the layer shapes (ours; torchvision rounds them as above).
  const std::pair<const char*, double> exact[] = {
      {"resnet101", 7801405440.0}, {"vgg16", 15470264320.0}, {"inception-v3", 5713216096.0}};
  for (const auto& [name, macs] : exact) {
    double forward = 0;
    for (const auto& l : load_model(name).cnn.layers) forward += l.forward_per_sample.value();
    EXPECT_NEAR(forward, 2 * macs, 1.0) << name;
  }
  // VGG-16's fully connected layers hold 123.6M of its 138.4M parameters, its convolutions
  // nearly all the FLOPs: a data-parallel gradient exchange dominated by three layers.
  const Model vgg = load_model("vgg16");
  EXPECT_EQ(
      vgg.cnn.layers[5].parameters + vgg.cnn.layers[6].parameters + vgg.cnn.layers[7].parameters,
      102764544 + 16781312 + 4097000);
}

// Issue 10: Llama 3.1. Shapes: Meta's config.json files (huggingface.co/meta-llama/Llama-3.1-8B,
// -70B, -405B) and the Llama 3 paper (arXiv:2407.21783, Table 3); Llama 3.1 differs from Llama 3
// in the 128K context (rope scaling), not in the parameter count. Counts as Hugging Face lists
// Meta's checkpoints: 8.03B, 70.6B, 405.9B; the exact ones follow from the shapes (8B:
// 32 x 218,112,000 per block + 2 x 128256 x 4096 untied tables + the final RMSNorm).
TEST(ModelZoo, Llama31ParameterCounts) {
  struct Case {
    const char* name;
    const char* llama3;  // the Llama 3 file of the same shape
    std::int64_t exact;
    double published;
  };
  const Case cases[] = {{"llama3.1-8b", "llama3-8b", 8030261248, 8.03e9},
                        {"llama3.1-70b", "llama3-70b", 70553706496, 70.6e9},
                        {"llama3.1-405b", "llama3-405b", 405853388800, 405.9e9}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Model m = load_model(c.name);
    EXPECT_EQ(parameter_count(m), c.exact);
    EXPECT_EQ(parameter_count(m), parameter_count(load_model(c.llama3)));
    EXPECT_LT(rel(static_cast<double>(parameter_count(m)), c.published), 0.005);
    EXPECT_EQ(m.transformer.kv_heads, 8);
    EXPECT_EQ(m.transformer.vocab, 128256);
    EXPECT_EQ(m.transformer.max_sequence, 131072);
    EXPECT_FALSE(m.transformer.tied_embeddings);
  }
}

// Issue 10: the GPT sizes of Megatron-Core's H100 scaling table (NVIDIA/Megatron-LM README.md,
// images/model_table.png, added in commit f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4 and unchanged
// at d98e8a64ddf34856e74b24714e3bedb2f5a39553): vocabulary 131,072, sequence 4,096, heads of
// width 128. Unstated, taken as Megatron's GPT defaults: f = 4h, learned positions, biases,
// LayerNorm; untied output layer (with a tied one the small rows miss their labels by 4-13 %).
// So the count is Megatron's formula + a second V h table + the final LayerNorm; the table's
// labels round it (1.7B row: 1.754e9, 3.2 %; 32B: 31.51e9, 1.5 %; the rest within 1 %).
TEST(ModelZoo, MegatronCoreGptSizesMatchTheScalingTable) {
  struct Row {
    const char* name;
    std::int64_t a, h, l;
    double label_billion;
    double tolerance;
  };
  const Row rows[] = {{"megatron-core-gpt-1.7b", 16, 2048, 24, 1.7, 0.035},
                      {"megatron-core-gpt-7.1b", 32, 4096, 30, 7.1, 0.01},
                      {"megatron-core-gpt-16b", 48, 6144, 32, 16, 0.01},
                      {"megatron-core-gpt-32b", 56, 7168, 48, 32, 0.02},
                      {"megatron-core-gpt-70b", 64, 8192, 84, 70, 0.01},
                      {"megatron-core-gpt-119b", 80, 10240, 92, 119, 0.01},
                      {"megatron-core-gpt-177b", 96, 12288, 96, 177, 0.01},
                      {"megatron-core-gpt-314b", 128, 16384, 96, 314, 0.01},
                      {"megatron-core-gpt-462b", 144, 18432, 112, 462, 0.01}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const Model m = load_model(r.name);
    EXPECT_EQ(m.transformer.layers, r.l);
    EXPECT_EQ(m.transformer.hidden, r.h);
    EXPECT_EQ(m.transformer.heads, r.a);
    EXPECT_EQ(m.transformer.vocab, 131072);
    EXPECT_EQ(m.transformer.max_sequence, 4096);
    EXPECT_EQ(parameter_count(m), megatron_params(r.l, r.h, 131072, 4096) + 131072 * r.h + 2 * r.h);
    EXPECT_LT(rel(static_cast<double>(parameter_count(m)), r.label_billion * 1e9), r.tolerance);
  }
}

// ---- malformed files ----------------------------------------------------------------------

struct Bad {
  const char* name;
  std::string text;
  const char* path;      // the JSON path the error must name
  const char* contains;  // a piece of its message
};

const char* const kGood =
    R"("family": "transformer", "layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "max_sequence": 32)";

TEST(ModelFormat, MalformedModelsNameFileAndPath) {
  const std::string base = kGood;
  const Bad cases[] = {
      {"missing-hidden.json",
       R"({"family": "transformer", "layers": 2, "heads": 4, "vocab": 100, "max_sequence": 32})",
       "/hidden", "missing required key \"hidden\""},
      {"negative-layers.json",
       R"({"family": "transformer", "layers": -3, "hidden": 64, "heads": 4, "vocab": 100, "max_sequence": 32})",
       "/layers", "got the number -3"},
      {"heads-not-dividing.json",
       R"({"family": "transformer", "layers": 2, "hidden": 64, "heads": 5, "vocab": 100, "max_sequence": 32})",
       "/heads", "heads (5) must divide hidden (64)"},
      {"unknown-key.json", ("{" + base + R"(, "num_layers": 3})"), "/num_layers",
       "unknown key \"num_layers\""},
      {"kv-not-dividing.json", ("{" + base + R"(, "kv_heads": 3})"), "/kv_heads",
       "must divide heads (4)"},
      {"top-k-too-big.json", ("{" + base + R"(, "moe": {"experts": 4, "top_k": 5}})"), "/moe/top_k",
       "from 1 to experts (4)"},
      {"bad-family.json", R"({"family": "rnn"})", "/family", "\"transformer\", \"cnn\""},
      {"bad-norm.json", ("{" + base + R"(, "norm": "batchnorm"})"), "/norm",
       "\"layernorm\", \"rmsnorm\""},
      {"cnn-bare-flops.json",
       R"({"family": "cnn", "layers": [{"name": "c", "forward": 5, "parameters": 1, "activation_elements": 1, "output_elements": 1}]})",
       "/layers/0/forward", "got the number 5"},
      {"cnn-missing.json",
       R"({"family": "cnn", "layers": [{"name": "c", "forward": "5MFLOP", "activation_elements": 1, "output_elements": 1}]})",
       "/layers/0/parameters", "missing required key"},
      {"patch-not-dividing.json",
       R"({"family": "transformer", "layers": 1, "hidden": 64, "heads": 4, "max_sequence": 50, "tied_embeddings": false,
          "input": {"kind": "patches", "image_size": 224, "patch_size": 15, "channels": 3}, "head": {"kind": "classifier", "classes": 10}})",
       "/input/patch_size", "must divide image_size (224)"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string& text = c.text;
    try {
      const ConfigDocument doc = ConfigDocument::parse(text, c.name);
      parse_model(doc.root());
      ADD_FAILURE() << "parsed without an error";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("in ") + c.name), std::string::npos) << what;
      EXPECT_EQ(e.json_path(), c.path) << what;
      EXPECT_NE(what.find(c.contains), std::string::npos) << what;
    }
  }
}

TEST(ModelFormat, MissingFileIsAConfigError) {
  EXPECT_THROW(load_model(std::string(CS_TEST_DATA_DIR) + "/no/such/model.json"), ConfigError);
}

TEST(ModelFormat, DefaultsAreGptStyle) {
  // Only the required keys: kv_heads = heads, ffn_hidden = 4h, LayerNorm, learned positions,
  // biases, tied embeddings, lm head. Name from the file.
  const ConfigDocument doc = ConfigDocument::parse("{" + std::string(kGood) + "}", "tiny.json");
  const Model m = parse_model(doc.root());
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.transformer.kv_heads, 4);
  EXPECT_EQ(m.transformer.ffn_hidden, 256);
  // 2 blocks of 12h^2 + 13h, tables (100 + 32) h, final norm 2h.
  EXPECT_EQ(parameter_count(m), 2 * (12 * 64 * 64 + 13 * 64) + 132 * 64 + 128);
}

}  // namespace
}  // namespace cs::wl
