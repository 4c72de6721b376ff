// Property tests of issue 12: random parallel degrees, batch sizes and message sizes up to 2^40
// never crash and never overflow. Every input is either accepted (then every check passes and
// what is computed is finite) or refused with the project's input error (exit 2 on the command
// line). Run under `make sanitize`, UBSan turns any signed overflow on the way into a failure;
// the checked arithmetic itself is asserted on its edges.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/config.h"
#include "core/errors.h"
#include "core/units.h"
#include "drivers/experiment.h"
#include "drivers/training_run.h"
#include "sim/collectives/collective_simulator.h"
#include "sim/collectives/machine.h"
#include "workloads/memory.h"

namespace {

using nlohmann::json;

TEST(CheckedArithmetic, SaturatingProductOnItsEdges) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(cs::saturating_product({}), 1);
  EXPECT_EQ(cs::saturating_product({1 << 20, 1 << 20}), std::int64_t{1} << 40);
  EXPECT_EQ(cs::saturating_product({1 << 20, 1 << 20, 1 << 20}), std::int64_t{1} << 60);
  EXPECT_EQ(cs::saturating_product({1 << 20, 1 << 20, 1 << 20, 1 << 20}), kMax);  // 2^80
  EXPECT_EQ(cs::saturating_product({kMax, 1}), kMax);
  EXPECT_EQ(cs::saturating_product({kMax, 2}), kMax);
  EXPECT_EQ(cs::saturating_product({3037000499, 3037000499}), 9223372030926249001);  // just below 2^63
  EXPECT_EQ(cs::saturating_product({3037000500, 3037000500}), kMax);                 // just above
}

TEST(CheckedArithmetic, TheClockRefusesToPassItsHorizon) {
  EXPECT_EQ(cs::checked_add(cs::kTimeZero, cs::kMaxDuration).time_since_epoch(), cs::kMaxDuration);
  EXPECT_EQ(cs::checked_add(cs::kTimeHorizon, cs::Duration{0}), cs::kTimeHorizon);
  EXPECT_THROW(cs::checked_add(cs::kTimeHorizon, cs::Duration{1}), cs::RangeError);
  EXPECT_THROW(cs::checked_add(cs::kTimeNever, cs::Duration{1}), cs::RangeError);  // would wrap
}

// A value from a spread that covers the edges: 1, small, powers of two and random up to 2^40.
std::int64_t draw(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return 1;
    case 1: return static_cast<std::int64_t>(1 + rng() % 64);
    case 2: return std::int64_t{1} << (rng() % 41);
    case 3: return static_cast<std::int64_t>(1 + rng() % (std::uint64_t{1} << 40));
    default: return static_cast<std::int64_t>(1 + rng() % 4096);
  }
}

// Runs every check `run` makes before simulating; false when an input error refused the plan.
bool accepted(const json& experiment) {
  const cs::ConfigDocument doc = cs::ConfigDocument::from_json(experiment, "random.json");
  try {
    const cs::drv::Experiment e = cs::drv::parse_experiment(doc.root(), "");
    const cs::coll::Machine machine = cs::coll::load_machine(e.cluster, e.cluster_overrides, cs::drv::experiment_catalog(e));
    const cs::wl::Model model = cs::drv::load_model(e);
    cs::drv::check_plan_fits(e, machine.cluster, model);
    const auto peak = cs::wl::peak_memory(cs::wl::estimate_memory(model, e.plan, machine.cluster.gpu_spec(machine.cluster.gpus()[0])));
    EXPECT_GE(peak.total.value(), 0);
    EXPECT_LE(e.plan.gpus(), static_cast<int>(machine.cluster.gpus().size()));
    return true;
  } catch (const cs::InputError&) {
    return false;
  }
}

TEST(HostileValues, RandomPlansUpTo2To40AreRefusedOrChecked) {
  std::mt19937_64 rng(12);
  int accepted_count = 0;
  for (int i = 0; i < 400; ++i) {
    json plan{{"dp", draw(rng)}, {"tp", draw(rng)}, {"pp", draw(rng)}, {"cp", draw(rng)},
              {"micro_batch", draw(rng)}, {"global_batch", draw(rng)}, {"sequence_length", draw(rng)}};
    if (i % 4 == 0) plan = {{"dp", 32}, {"micro_batch", 1 + i % 16}, {"global_batch", 512}, {"sequence_length", 2048}};  // some that fit
    const json experiment{{"cluster", "a100-superpod"}, {"cluster_overrides", {"/servers/0/count=4"}}, {"model", "gpt-1.7b"}, {"plan", plan}};
    SCOPED_TRACE(experiment.dump());
    accepted_count += accepted(experiment) ? 1 : 0;
  }
  EXPECT_GT(accepted_count, 0) << "every random plan refused: the property is not exercised";
}

TEST(HostileValues, RandomMessageSizesUpTo2To40SimulateOrAreRefused) {
  const cs::coll::Machine machine = cs::coll::load_machine(std::string(CS_SOURCE_DIR) + "/configs/clusters/dgx-h100.json");
  cs::coll::CollectiveSimulator sim(machine);
  std::mt19937_64 rng(40);
  const auto gpus = machine.cluster.gpus();
  for (int i = 0; i < 40; ++i) {
    cs::coll::CollectiveSpec spec;
    spec.op = i % 2 == 0 ? cs::CollectiveOp::kAllReduce : cs::CollectiveOp::kAllGather;
    spec.size = cs::Bytes{std::int64_t{8} << (rng() % 38)};  // 8 B to 2^40 B
    spec.ranks.assign(gpus.begin(), gpus.end());
    SCOPED_TRACE(spec.size.value());
    try {
      const cs::coll::CollectiveResult r = sim.run(spec);
      EXPECT_GT(r.time.count(), 0);
      EXPECT_LT(r.time, cs::kTimeHorizon.time_since_epoch());
    } catch (const cs::RangeError&) {
      ADD_FAILURE() << "a message up to 1 TiB on NVLink fits the clock and must simulate";
    }
  }
}

}  // namespace
