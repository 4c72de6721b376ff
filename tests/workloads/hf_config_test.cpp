// Hugging Face config.json import: each sample in tests/data/hf (written from the published
// architecture numbers) gives the same parameters as the corresponding bundled model.
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "workloads/hf_config.h"
#include "workloads/model.h"

namespace cs::wl {
namespace {

const std::string kDir = std::string(CS_TEST_DATA_DIR) + "/hf/";

TEST(HfConfig, SamplesMatchTheZoo) {
  for (const char* name : {"llama2-7b", "llama3-70b", "mixtral-8x7b", "gpt2-xl", "deepseek-v3", "deepseek-v2-lite"}) {
    SCOPED_TRACE(name);
    const Model hf = model_from_hf_config(kDir + name + "/config.json");
    const Model zoo = load_model(name);
    EXPECT_EQ(hf.name, name);  // from the folder
    EXPECT_EQ(parameter_count(hf), parameter_count(zoo));
    EXPECT_EQ(active_parameter_count(hf), active_parameter_count(zoo));
    EXPECT_EQ(hf.transformer.kv_heads, zoo.transformer.kv_heads);
    EXPECT_EQ(hf.transformer.gated_mlp, zoo.transformer.gated_mlp);
    EXPECT_EQ(hf.transformer.dropout, zoo.transformer.dropout);
  }
}

TEST(HfConfig, LoadModelRecognisesAConfigJson) {
  const Model m = load_model(kDir + "mixtral-8x7b/config.json");
  EXPECT_EQ(m.transformer.experts, 8);
  EXPECT_EQ(m.transformer.top_k, 2);
}

TEST(HfConfig, UnknownModelTypeListsTheSupportedOnes) {
  const ConfigDocument doc =
      ConfigDocument::parse(R"({"model_type": "bert", "hidden_size": 1024})", "config.json");
  try {
    model_from_hf_config(doc.root());
    FAIL() << "imported";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/model_type");
    EXPECT_NE(std::string(e.what()).find(R"("llama", "mistral", "mixtral", "gpt2")"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfig, ErrorsNameTheHfKey) {
  const ConfigDocument missing = ConfigDocument::parse(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008,
          "vocab_size": 32000, "max_position_embeddings": 4096})",
      "a.json");
  try {
    model_from_hf_config(missing.root());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/num_hidden_layers");
  }
  const ConfigDocument gqa = ConfigDocument::parse(
      R"({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
          "num_key_value_heads": 6, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 4096})",
      "b.json");
  try {
    model_from_hf_config(gqa.root());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/num_key_value_heads");
  }
}

TEST(HfConfig, Gpt2InnerWidthDefaultsTo4h) {
  const ConfigDocument doc = ConfigDocument::parse(
      R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
          "vocab_size": 50257, "_name_or_path": "gpt2"})",
      "config.json");
  const Model m = model_from_hf_config(doc.root());
  EXPECT_EQ(m.name, "gpt2");
  EXPECT_EQ(m.transformer.ffn_hidden, 3072);
  EXPECT_EQ(parameter_count(m), 124439808);  // GPT-2 small, as Hugging Face reports it
}

}  // namespace
}  // namespace cs::wl
