// The config reader (core/config.h): every error names the file and the RFC 6901 path, and reads
// "expected ...; got ..." as STYLE.md shows.
#include "core/config.h"

#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "tests/support/config_error.h"

namespace cs {
namespace {

using test::config_error;

ConfigDocument doc(const char* text) { return ConfigDocument::parse(text, "cluster.json"); }

TEST(CoreConfig, StyleGuideMessageExactly) {
  const auto d = doc(R"({"topology": {"links": [{}, {}, {}, {"bandwidth": 400}]}})");
  EXPECT_EQ(config_error([&] { d.root().at("topology").at("links").at(3).at("bandwidth").as_bandwidth(); }),
            "config error in cluster.json at /topology/links/3/bandwidth: expected a bandwidth such "
            "as \"400Gbps\"; got the number 400");
}

TEST(CoreConfig, ErrorCarriesFileAndPath) {
  const auto d = doc(R"({"gpu": {"memory": true}})");
  try {
    d.root().at("gpu").at("memory").as_bytes();
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "cluster.json");
    EXPECT_EQ(e.json_path(), "/gpu/memory");
    EXPECT_EQ(e.message(), "expected a size such as \"80GiB\"; got the boolean true");
  }
}

TEST(CoreConfig, ReadsTypedValues) {
  const auto d = doc(R"({"name": "dgx", "n": 8, "big": 9007199254740993, "x": 0.5, "on": false,
                         "mem": "80GiB", "bw": "400Gbps", "lat": "1.5us", "peak": "989TFLOP/s",
                         "work": "3.2PFLOP", "list": [1, 2, 3]})");
  const ConfigNode r = d.root();
  EXPECT_EQ(r.path(), "");
  EXPECT_EQ(r.file(), "cluster.json");
  EXPECT_EQ(r.at("name").as_string(), "dgx");
  EXPECT_EQ(r.at("n").as_int(), 8);
  EXPECT_EQ(r.at("big").as_int(), 9007199254740993);  // 2^53 + 1: integers are not doubles
  EXPECT_DOUBLE_EQ(r.at("x").as_number(), 0.5);
  EXPECT_DOUBLE_EQ(r.at("n").as_number(), 8.0);
  EXPECT_FALSE(r.at("on").as_bool());
  EXPECT_EQ(r.at("mem").as_bytes().value(), 85899345920);
  EXPECT_DOUBLE_EQ(r.at("bw").as_bandwidth().value(), 5e10);
  EXPECT_EQ(r.at("lat").as_duration().count(), 1500000);
  EXPECT_DOUBLE_EQ(r.at("peak").as_flop_rate().value(), 9.89e14);
  EXPECT_DOUBLE_EQ(r.at("work").as_flops().value(), 3.2e15);
  EXPECT_EQ(r.at("list").size(), 3u);
  EXPECT_EQ(r.at("list").at(2).as_int(), 3);
  EXPECT_EQ(r.at("list").at(2).path(), "/list/2");
  const auto elements = r.at("list").elements();
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_EQ(elements[1].path(), "/list/1");
  const auto members = r.members();
  ASSERT_EQ(members.size(), 11u);
  EXPECT_EQ(members[0].first, "big");  // nlohmann objects iterate in key order
  EXPECT_EQ(members[0].second.path(), "/big");
}

TEST(CoreConfig, PathEscapesSlashAndTilde) {
  // RFC 6901: '~' is written "~0" and '/' is written "~1" (and "~/" becomes "~0~1").
  EXPECT_EQ(json_pointer_append("", "a/b"), "/a~1b");
  EXPECT_EQ(json_pointer_append("/x", "m~n"), "/x/m~0n");
  EXPECT_EQ(json_pointer_append("", "~/"), "/~0~1");
  EXPECT_EQ(json_pointer_append("", ""), "/");
  const auto d = doc(R"({"links": {"gpu0/nic1": {"rate~max": 3}}})");
  const ConfigNode n = d.root().at("links").at("gpu0/nic1").at("rate~max");
  EXPECT_EQ(n.path(), "/links/gpu0~1nic1/rate~0max");
  EXPECT_EQ(config_error([&] { n.as_bandwidth(); }),
            "config error in cluster.json at /links/gpu0~1nic1/rate~0max: expected a bandwidth "
            "such as \"400Gbps\"; got the number 3");
  // The escaped path is a valid pointer back into the document.
  EXPECT_EQ(d.json().at(nlohmann::json::json_pointer(n.path())), 3);
}

TEST(CoreConfig, MissingKey) {
  const auto d = doc(R"({"cluster": {"name": "a"}})");
  EXPECT_EQ(config_error([&] { d.root().at("cluster").at("links"); }),
            "config error in cluster.json at /cluster: missing required key \"links\"");
  // At the root the path is "/".
  EXPECT_EQ(config_error([&] { d.root().at("nodes"); }),
            "config error in cluster.json at /: missing required key \"nodes\"");
  EXPECT_FALSE(d.root().find("nodes").has_value());
  EXPECT_FALSE(d.root().has("nodes"));
  ASSERT_TRUE(d.root().find("cluster").has_value());
  EXPECT_EQ(d.root().find("cluster")->path(), "/cluster");
}

TEST(CoreConfig, WrongTypes) {
  const auto d = doc(R"({"a": [1], "s": "x", "n": 1.5, "o": {}, "z": null,
                         "long": "0123456789012345678901234567890123456789012345678901234567890123456789"})");
  const ConfigNode r = d.root();
  EXPECT_EQ(config_error([&] { r.at("a").at("k"); }),
            "config error in cluster.json at /a: expected an object; got an array");
  EXPECT_EQ(config_error([&] { r.at("a").find("k"); }),
            "config error in cluster.json at /a: expected an object; got an array");
  EXPECT_EQ(config_error([&] { r.at("o").at(0); }),
            "config error in cluster.json at /o: expected an array; got an object");
  EXPECT_EQ(config_error([&] { r.at("s").size(); }),
            "config error in cluster.json at /s: expected an array; got the string \"x\"");
  EXPECT_EQ(config_error([&] { r.at("n").as_string(); }),
            "config error in cluster.json at /n: expected a string; got the number 1.5");
  EXPECT_EQ(config_error([&] { r.at("n").as_int(); }),
            "config error in cluster.json at /n: expected an integer; got the number 1.5");
  EXPECT_EQ(config_error([&] { r.at("z").as_bool(); }),
            "config error in cluster.json at /z: expected true or false; got null");
  EXPECT_EQ(config_error([&] { r.at("s").as_number(); }),
            "config error in cluster.json at /s: expected a number; got the string \"x\"");
  EXPECT_EQ(config_error([&] { r.at("o").as_duration(); }),
            "config error in cluster.json at /o: expected a duration such as \"1.5us\"; got an object");
  // Long strings are cut to 60 characters (quotes and "..." included) in the message.
  EXPECT_EQ(config_error([&] { r.at("long").as_int(); }),
            "config error in cluster.json at /long: expected an integer; got the string "
            "\"01234567890123456789012345678901234567890123456789012345...\"");
  EXPECT_EQ(config_error([&] { r.at("a").at(3); }),
            "config error in cluster.json at /a: index 3 is out of range");
}

TEST(CoreConfig, UnitStringErrorsGainFileAndPath) {
  const auto d = doc(R"({"bw": "400", "mem": "1.5B", "lat": "-1us"})");
  EXPECT_EQ(config_error([&] { d.root().at("bw").as_bandwidth(); }),
            "config error in cluster.json at /bw: expected a bandwidth such as \"400Gbps\"; got "
            "\"400\" (a number needs a unit)");
  EXPECT_EQ(config_error([&] { d.root().at("mem").as_bytes(); }),
            "config error in cluster.json at /mem: expected a whole number of bytes; got \"1.5B\"");
  EXPECT_NE(config_error([&] { d.root().at("lat").as_duration(); }).find("negative"), std::string::npos);
}

TEST(CoreConfig, ExpectOnlyNamesTheUnknownKeyAndListsAllowedOnes) {
  const auto d = doc(R"({"topo": {"name": "a", "links": [], "colour": "red"}})");
  const ConfigNode t = d.root().at("topo");
  EXPECT_NO_THROW(t.expect_only({"name", "links", "colour"}));
  try {
    t.expect_only({"name", "links"});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/topo/colour");
    EXPECT_STREQ(e.what(),
                 "config error in cluster.json at /topo/colour: unknown key \"colour\" (allowed: "
                 "name, links)");
  }
  EXPECT_EQ(config_error([&] { d.root().at("topo").at("links").expect_only({"a"}); }),
            "config error in cluster.json at /topo/links: expected an object; got an array");
}

TEST(CoreConfig, AsIntRange) {
  const auto d = doc(R"({"lo": -1, "ok": 3, "hi": 5, "huge": 18446744073709551615})");
  const ConfigNode r = d.root();
  EXPECT_EQ(r.at("ok").as_int(0, 3), 3);
  EXPECT_EQ(r.at("lo").as_int(-1, 3), -1);
  EXPECT_EQ(config_error([&] { r.at("hi").as_int(0, 3); }),
            "config error in cluster.json at /hi: expected an integer from 0 to 3; got the number 5");
  EXPECT_EQ(config_error([&] { r.at("lo").as_int(0, 3); }),
            "config error in cluster.json at /lo: expected an integer from 0 to 3; got the number -1");
  // 2^64 - 1 does not fit an int64: not silently wrapped to -1.
  EXPECT_EQ(config_error([&] { r.at("huge").as_int(); }),
            "config error in cluster.json at /huge: expected an integer; got the number "
            "18446744073709551615");
}

TEST(CoreConfig, AsChoiceListsChoices) {
  const auto d = doc(R"({"algo": "tree", "bad": "mesh", "num": 2})");
  EXPECT_EQ(d.root().at("algo").as_choice({"ring", "tree", "direct"}), 1u);
  EXPECT_EQ(config_error([&] { d.root().at("bad").as_choice({"ring", "tree"}); }),
            "config error in cluster.json at /bad: expected one of \"ring\", \"tree\"; got the "
            "string \"mesh\"");
  EXPECT_EQ(config_error([&] { d.root().at("num").as_choice({"ring", "tree"}); }),
            "config error in cluster.json at /num: expected one of \"ring\", \"tree\"; got the "
            "number 2");
}

TEST(CoreConfig, BrokenJsonGivesLineAndColumn) {
  // The '}' on line 3 is the 8th character of that line: `  "b": }`.
  EXPECT_EQ(config_error([] { doc("{\n  \"a\": 1,\n  \"b\": }"); }),
            "config error in cluster.json at /: invalid JSON at line 3, column 8");
  // Input that ends too early is reported just past its last character.
  EXPECT_EQ(config_error([] { doc("[1, 2"); }),
            "config error in cluster.json at /: invalid JSON at line 1, column 6");
  EXPECT_EQ(config_error([] { doc(""); }),
            "config error in cluster.json at /: invalid JSON at line 1, column 1");
  // Comments are not JSON.
  EXPECT_NE(config_error([] { doc("{} // note"); }).find("invalid JSON at line 1"), std::string::npos);
}

TEST(CoreConfig, NumberOutsideDoubleRangeIsAConfigError) {
  // nlohmann reports this as out_of_range, not parse_error; it must still be a ConfigError.
  EXPECT_EQ(config_error([] { doc(R"({"x": 1e400})"); }),
            "config error in cluster.json at /: invalid JSON: a number is out of range");
}

TEST(CoreConfig, LoadNamesTheFile) {
  EXPECT_EQ(config_error([] { ConfigDocument::load("/nonexistent/dir/cluster.json"); }),
            "config error in /nonexistent/dir/cluster.json: cannot open the file");
}

TEST(CoreConfig, FromJsonKeepsTheName) {
  const auto d = ConfigDocument::from_json(nlohmann::json{{"k", 1}}, "generated");
  EXPECT_EQ(d.name(), "generated");
  EXPECT_EQ(config_error([&] { d.root().at("k").as_string(); }),
            "config error in generated at /k: expected a string; got the number 1");
}

// ---- --set overrides ---------------------------------------------------------------------------

nlohmann::json base() {
  return nlohmann::json::parse(R"({"topology": {"links": {"bandwidth": "400Gbps"}, "n": 4}})");
}

TEST(CoreConfig, OverrideSetsNestedNumber) {
  auto j = base();
  apply_override(j, "cluster.json", "/topology/n=16");
  EXPECT_EQ(j["topology"]["n"], 16);
  EXPECT_TRUE(j["topology"]["n"].is_number_integer());
}

TEST(CoreConfig, OverrideSetsNestedString) {
  auto j = base();
  // Not valid JSON, so taken as a string.
  apply_override(j, "cluster.json", "/topology/links/bandwidth=200Gbps");
  EXPECT_EQ(j["topology"]["links"]["bandwidth"], "200Gbps");
  // Valid JSON strings are also strings; a JSON number in quotes stays a string.
  apply_override(j, "cluster.json", "/topology/links/bandwidth=\"7\"");
  EXPECT_EQ(j["topology"]["links"]["bandwidth"], "7");
  // An '=' in the value belongs to the value.
  apply_override(j, "cluster.json", "/topology/name=a=b");
  EXPECT_EQ(j["topology"]["name"], "a=b");
}

TEST(CoreConfig, OverrideWithANumberOutsideDoubleRangeIsTakenAsAString) {
  // "1e999" is not a representable JSON number, so it stays text; reading it as a number later
  // gives the usual "expected ...; got the string" error.
  auto j = base();
  apply_override(j, "cluster.json", "/topology/n=1e999");
  EXPECT_EQ(j["topology"]["n"], "1e999");
}

TEST(CoreConfig, OverrideSetsStructuredValueAndNewKeyUnderExistingParent) {
  auto j = base();
  apply_override(j, "cluster.json", "/topology/extra={\"k\": [1, 2]}");
  EXPECT_EQ(j["topology"]["extra"]["k"][1], 2);
}

TEST(CoreConfig, OverrideWithMissingParentFails) {
  auto j = base();
  const auto before = j;
  try {
    apply_override(j, "cluster.json", "/topology/nodes/count=3");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/topology/nodes/count");
    EXPECT_STREQ(e.what(), "config error in cluster.json at /topology/nodes/count: cannot override: "
                           "the parent of this path does not exist");
  }
  EXPECT_EQ(j, before);
}

TEST(CoreConfig, OverrideOfArrayElements) {
  auto j = nlohmann::json::parse(R"({"links": [1, 2]})");
  apply_override(j, "cluster.json", "/links/1=5");  // an element
  apply_override(j, "cluster.json", "/links/2=6");  // the end: appends
  apply_override(j, "cluster.json", "/links/-=7");  // RFC 6901 "-": appends
  EXPECT_EQ(j["links"], nlohmann::json::parse("[1, 5, 6, 7]"));
  // Past the end is an error, not an array padded with nulls (or gigabytes of them).
  EXPECT_EQ(config_error([&] { apply_override(j, "cluster.json", "/links/5=1"); }),
            "config error in cluster.json at /links/5: cannot override: index 5 is past the end "
            "of the array");
  EXPECT_NE(config_error([&] { apply_override(j, "cluster.json", "/links/1000000000=1"); }).find("past the end"),
            std::string::npos);
  EXPECT_NE(config_error([&] { apply_override(j, "cluster.json", "/links/99999999999999999999=1"); }).find("past the end"),
            std::string::npos);
  EXPECT_EQ(config_error([&] { apply_override(j, "cluster.json", "/links/x=1"); }),
            "config error in cluster.json at /links/x: cannot override this path");
  EXPECT_EQ(j["links"], nlohmann::json::parse("[1, 5, 6, 7]"));
}

TEST(CoreConfig, OverrideSyntaxErrors) {
  auto j = base();
  EXPECT_EQ(config_error([&] { apply_override(j, "cluster.json", "topology/n=3"); }),
            "config error in cluster.json at --set: an override must read /json/pointer=value; "
            "got \"topology/n=3\"");
  EXPECT_NE(config_error([&] { apply_override(j, "cluster.json", "/topology/n"); }).find("/json/pointer=value"),
            std::string::npos);
  // "~2" is not a valid RFC 6901 escape.
  EXPECT_EQ(config_error([&] { apply_override(j, "cluster.json", "/topology/~2=1"); }),
            "config error in cluster.json at /topology/~2: cannot override this path");
  // A scalar cannot have children.
  EXPECT_EQ(config_error([&] { apply_override(j, "cluster.json", "/topology/n/x=1"); }),
            "config error in cluster.json at /topology/n/x: cannot override this path");
}

}  // namespace
}  // namespace cs
