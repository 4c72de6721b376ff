// Which layers each stage and each interleaved model chunk holds (workloads/pipeline_split.h).
#include "workloads/pipeline_split.h"

#include <gtest/gtest.h>

namespace cs::wl {
namespace {

TEST(PipelineSplit, ChunksFollowMegatronCoresOrderEvenOrUneven) {
  const Model m = load_model("llama2-7b");  // 32 blocks
  ParallelPlan p;
  p.pp = 4;
  // No interleaving: one chunk per stage, the stage's layers.
  EXPECT_EQ(chunk_layers(m, p), (std::vector<LayerRange>{{0, 8}, {8, 16}, {16, 24}, {24, 32}}));
  // Interleaved, even: chunk k of stage s is the (k p + s)-th of p v = 8 slices of 4 layers.
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 2;
  const auto even = chunk_layers(m, p);
  ASSERT_EQ(even.size(), 8u);
  EXPECT_EQ(even[0], (LayerRange{0, 4}));    // stage 0, chunk 0
  EXPECT_EQ(even[3], (LayerRange{12, 16}));  // stage 3, chunk 0
  EXPECT_EQ(even[4], (LayerRange{16, 20}));  // stage 0, chunk 1
  EXPECT_EQ(even[7], (LayerRange{28, 32}));  // stage 3, chunk 1
  // Interleaved, uneven (lighter first and last stages, as Llama 3 ran): 4 + 12 + 12 + 4 layers,
  // chunks of 2, 6, 6, 2 layers in the order s0 s1 s2 s3, s0 s1 s2 s3.
  p.layers_per_stage = {4, 12, 12, 4};
  EXPECT_EQ(chunk_layers(m, p), (std::vector<LayerRange>{{0, 2}, {2, 8}, {8, 14}, {14, 16},
                                                         {16, 18}, {18, 24}, {24, 30}, {30, 32}}));
}

}  // namespace
}  // namespace cs::wl
