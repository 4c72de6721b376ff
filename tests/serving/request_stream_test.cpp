// Request streams: the arrival processes' moments, the length distributions, determinism, and the
// Azure LLM inference trace read as is.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "drivers/request_stream.h"
#include "tests/support/temp_dir.h"

namespace cs::drv {
namespace {

struct Moments {
  double mean = 0, cv = 0;
};

Moments gaps(const std::vector<ServingRequest>& r) {
  std::vector<double> g;
  for (std::size_t i = 1; i < r.size(); ++i) g.push_back(to_seconds(r[i].arrival - r[i - 1].arrival));
  double s = 0, s2 = 0;
  for (double x : g) s += x;
  const double mean = s / static_cast<double>(g.size());
  for (double x : g) s2 += (x - mean) * (x - mean);
  return {mean, std::sqrt(s2 / static_cast<double>(g.size() - 1)) / mean};
}

RequestStreamSpec spec(ArrivalProcess a, double rate, double cv, std::int64_t n) {
  RequestStreamSpec s;
  s.arrival = a;
  s.rate = rate;
  s.cv = cv;
  s.count = n;
  s.prompt.constant = 100;
  s.output.constant = 10;
  return s;
}

TEST(RequestStream, PoissonMoments) {
  const auto r = make_requests(spec(ArrivalProcess::kPoisson, 8, 1, 200000));
  const Moments m = gaps(r);
  EXPECT_NEAR(m.mean * 8, 1.0, 0.01);
  EXPECT_NEAR(m.cv, 1.0, 0.01);
}

TEST(RequestStream, GammaMoments) {
  for (double cv : {0.5, 2.0, 4.0}) {
    const auto r = make_requests(spec(ArrivalProcess::kGamma, 5, cv, 200000));
    const Moments m = gaps(r);
    EXPECT_NEAR(m.mean * 5, 1.0, 0.03) << "cv " << cv;
    EXPECT_NEAR(m.cv / cv, 1.0, 0.03) << "cv " << cv;
  }
}

TEST(RequestStream, Lengths) {
  RequestStreamSpec s = spec(ArrivalProcess::kPoisson, 1, 1, 100000);
  s.prompt.kind = LengthDistribution::Kind::kUniform;
  s.prompt.lo = 10;
  s.prompt.hi = 20;
  s.output.kind = LengthDistribution::Kind::kLognormal;
  s.output.median = 200;
  s.output.sigma = 1;
  s.output.max = 100000;
  const auto r = make_requests(s);
  std::vector<std::int64_t> out;
  std::int64_t lo = 1 << 30, hi = 0;
  for (const auto& q : r) {
    lo = std::min(lo, q.prompt);
    hi = std::max(hi, q.prompt);
    out.push_back(q.output);
  }
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 20);
  std::nth_element(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(out.size() / 2), out.end());
  EXPECT_NEAR(static_cast<double>(out[out.size() / 2]) / 200.0, 1.0, 0.02);
}

TEST(RequestStream, DeterministicBySeed) {
  RequestStreamSpec s = spec(ArrivalProcess::kGamma, 3, 2, 1000);
  const auto a = make_requests(s), b = make_requests(s);
  s.seed = 2;
  const auto c = make_requests(s);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival, b[i].arrival);
  EXPECT_NE(a.back().arrival, c.back().arrival);
}

TEST(AzureTrace, ReadsTheBundledTraceAsIs) {
  const std::string path = std::string(CS_SOURCE_DIR) + "/configs/traces/azure-llm-2023-conv.csv";
  const auto r = read_azure_trace(path, 1.0, 0);
  ASSERT_EQ(r.size(), 19366u);
  EXPECT_EQ(r[0].arrival, kTimeZero);
  EXPECT_EQ(r[0].prompt, 374);
  EXPECT_EQ(r[0].output, 44);
  // 18:15:50.9951690 - 18:15:46.6805900 = 4.3145790 s.
  EXPECT_EQ(r[1].arrival - kTimeZero, Duration{4314579000000});
  const auto half = read_azure_trace(path, 0.5, 10);
  ASSERT_EQ(half.size(), 10u);
  EXPECT_EQ(half[1].arrival - kTimeZero, Duration{2157289500000});
  // The whole hour: 18:15:46.68 to 19:14:08.40.
  EXPECT_NEAR(to_seconds(r.back().arrival), 3501.722, 0.001);
}

TEST(AzureTrace, MalformedLinesNameTheLine) {
  test::TempDir dir("trace");
  const auto check = [&](const std::string& text, const std::string& line) {
    const auto p = dir.path() / "t.csv";
    test::write_text(p, text);
    try {
      read_azure_trace(p.string(), 1.0, 0);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.json_path(), line) << e.what();
    }
  };
  check("TIME,Context,Generated\n", "line 1");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10\n", "line 2");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,5\n2023-11-16 18:15:45.00,10,5\n", "line 3");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46.68,10,5\n", "line 2");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,0,5\n", "line 2");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,-1\n", "line 2");
  check("TIMESTAMP,ContextTokens,GeneratedTokens\n", "");
}

}  // namespace
}  // namespace cs::drv
