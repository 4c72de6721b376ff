#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "cost/price_catalog.h"

namespace cs::cost {
namespace {

TEST(PriceCatalog, BuiltinReadsEveryValueWithItsSource) {
  const PriceCatalog& c = PriceCatalog::builtin();
  ASSERT_NE(c.find_server("H100-SXM"), nullptr);
  EXPECT_DOUBLE_EQ(c.find_server("H100-SXM")->price.value(), 310000);
  EXPECT_EQ(c.find_server("H100-SXM")->gpus, 8);
  ASSERT_NE(c.find_switch(NetworkFamily::kInfiniband, gigabits_per_second(400)), nullptr);
  ASSERT_NE(c.find_link(gigabits_per_second(400)), nullptr);
  EXPECT_DOUBLE_EQ(c.facility().pue, 1.3);
  const SourcedFact* f = c.fact("/switches/Quantum-2-QM9700/power_w");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->is_judgement());
}

TEST(PriceCatalog, SetPriceReplacesAValueAndMarksItTheUsers) {
  const PriceCatalog c = PriceCatalog::load("", {"/facility/pue=1.1", "/servers/H100-SXM/price_usd/value=280000"});
  EXPECT_DOUBLE_EQ(c.facility().pue, 1.1);
  EXPECT_DOUBLE_EQ(c.find_server("H100-SXM")->price.value(), 280000);
  EXPECT_EQ(c.fact("/facility/pue")->kind, "user");
  EXPECT_EQ(c.fact("/servers/H100-SXM/price_usd")->kind, "user");
}

void expect_error(const std::vector<std::string>& overrides, const std::string& where) {
  try {
    PriceCatalog::load("", overrides);
    FAIL() << "no error for " << overrides.front();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

TEST(PriceCatalog, NegativePriceIsAnErrorAtItsPath) {
  expect_error({"/servers/H100-SXM/price_usd=-5"}, "/servers/H100-SXM/price_usd/value");
  expect_error({"/facility/pue=0.9"}, "/facility/pue/value");
  expect_error({"/nothing/here=1"}, "no price catalog value");
}

TEST(PriceCatalog, UnknownGpuNamesWhatIsPriced) {
  const PriceCatalog& c = PriceCatalog::builtin();
  try {
    c.server("MI300X", "cluster.json", "/servers/0/gpu");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("H100-SXM"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cs::cost
