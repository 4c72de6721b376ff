// A small GPT (8 layers, hidden 1024, 16 heads, a vocabulary of 8) for tests of the training
// graph: big enough for tensor, pipeline and data parallelism, cheap to build.
#pragma once

#include "workloads/model.h"

namespace cs::test {

inline wl::Model small_gpt() {
  wl::Model m;
  m.name = "test-gpt";
  m.family = wl::ModelFamily::kTransformer;
  auto& t = m.transformer;
  t.layers = 8;
  t.hidden = 1024;
  t.heads = 16;
  t.kv_heads = 16;
  t.ffn_hidden = 4096;
  t.vocab = 8;
  t.max_sequence = 1024;
  t.position = wl::PositionEmbedding::kRotary;
  return m;
}

}  // namespace cs::test
