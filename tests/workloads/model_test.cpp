// The model zoo and the model file format: every bundled model loads, parameter counts match
// the published totals, and malformed files fail naming the file and the JSON path.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

double rel(double got, double want) { return std::abs(got - want) / want; }

TEST(ModelZoo, EveryBundledModelLoads) {
  const auto names = bundled_model_names();
  // 10 GPT sizes of the SC21 table + GPT-3 175B + GPT-2 XL, 3 Llama 2, 3 Llama 3, Mixtral,
  // ResNet-50, ViT-L/16, BERT-Large.
  EXPECT_EQ(names.size(), 22u);
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
