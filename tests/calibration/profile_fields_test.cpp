// The field-table machinery (calibration/profile_fields.h) on a small struct: one table drives
// both the writer and the reader, with each kind of presence, a spliced part and a pair of members.
#include "calibration/profile_fields.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/config_error.h"

namespace cs::cal::fields {
namespace {

struct Part {
  int a = 0;
  std::string b;
};

struct Sample {
  int count = 0;
  std::optional<Duration> wait;
  std::vector<int> list;
  std::string note;
  Part part;
  Duration lo{0}, hi{0};
  double twice() const { return 2.0 * count; }
};

constexpr std::array kPartFields = {required<&Part::a, Count<0>>("a"), required<&Part::b, Text>("b")};

constexpr auto kSampleFields = concat(
    std::array{required<&Sample::count, Count<1>>("count"),
               optional<&Sample::wait, Seconds>("wait_s"),
               defaulted<&Sample::list, ListOf<Count<0>>>("list"),
               optional<&Sample::note, Text>("note")},
    spliced<&Sample::part, kPartFields>(),
    std::array{required<both<&Sample::lo, &Sample::hi>, SecondsInterval>("range_s"),
               derived<&Sample::twice, NonNegative>("twice")});

Sample read(const Json& doc) {
  const ConfigNode root(&doc, std::make_shared<const std::string>("sample.json"), "");
  return Object<kSampleFields>::read(root);
}

std::string error_of(const Json& doc) {
  return cs::test::config_error([&] { read(doc); });
}

Sample full_sample() {
  Sample s;
  s.count = 3;
  s.wait = Duration{1234567};
  s.list = {4, 5};
  s.note = "a note";
  s.part = {7, "x"};
  s.lo = Duration{10};
  s.hi = Duration{20};
  return s;
}

TEST(ProfileFields, OneTableWritesEveryKeyAndReadsItBack) {
  const Json j = Object<kSampleFields>::write(full_sample());
  EXPECT_EQ(j, Json::parse(R"({"count": 3, "wait_s": 1.234567e-6, "list": [4, 5], "note": "a note", "a": 7, "b": "x",
                               "range_s": [1e-11, 2e-11], "twice": 6.0})"));
  const Sample back = read(j);
  EXPECT_EQ(back.count, 3);
  EXPECT_EQ(back.wait, Duration{1234567});
  EXPECT_EQ(back.list, (std::vector<int>{4, 5}));
  EXPECT_EQ(back.note, "a note");
  EXPECT_EQ(back.part.a, 7);
  EXPECT_EQ(back.part.b, "x");
  EXPECT_EQ(back.lo, Duration{10});
  EXPECT_EQ(back.hi, Duration{20});
  EXPECT_EQ(Object<kSampleFields>::write(back), j);
}

TEST(ProfileFields, OptionalKeysAreLeftOutWhenEmptyAndDefaultedOnesAlwaysWritten) {
  Sample s = full_sample();
  s.wait.reset();
  s.note.clear();
  s.list.clear();
  const Json j = Object<kSampleFields>::write(s);
  EXPECT_FALSE(j.contains("wait_s"));
  EXPECT_FALSE(j.contains("note"));
  EXPECT_EQ(j.at("list"), Json::array());
  Json doc = j;
  doc.erase("list");
  doc.erase("twice");  // derived: may be absent
  const Sample back = read(doc);
  EXPECT_FALSE(back.wait.has_value());
  EXPECT_TRUE(back.list.empty());
  EXPECT_EQ(Object<kSampleFields>::write(back), j);
}

TEST(ProfileFields, AKeyNotInTheTableIsAnErrorListingTheTablesKeys) {
  Json doc = Object<kSampleFields>::write(full_sample());
  doc["bogus"] = 1;
  EXPECT_EQ(error_of(doc), "config error in sample.json at /bogus: unknown key \"bogus\" "
                           "(allowed: count, wait_s, list, note, a, b, range_s, twice)");
  doc.erase("bogus");
  doc.erase("count");
  EXPECT_EQ(error_of(doc), "config error in sample.json at /: missing required key \"count\"");
}

TEST(ProfileFields, DerivedValuesAreCheckedLastAndRecomputed) {
  Json doc = Object<kSampleFields>::write(full_sample());
  doc["twice"] = 99.0;  // any number >= 0 is taken, then recomputed
  EXPECT_EQ(Object<kSampleFields>::write(read(doc)).at("twice"), 6.0);
  doc["twice"] = -1;
  EXPECT_NE(error_of(doc).find("at /twice: expected a number >= 0"), std::string::npos);
  doc["count"] = 0;  // a fault in a stored field is reported before one in a derived field
  EXPECT_NE(error_of(doc).find("at /count: expected an integer from 1 to"), std::string::npos);
}

}  // namespace
}  // namespace cs::cal::fields
