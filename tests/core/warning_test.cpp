// Warnings (core/warning.h): the one-line form the front ends print, each listed once, the JSON list.
#include "core/warning.h"

#include <gtest/gtest.h>

namespace cs {
namespace {

TEST(Warning, OneLineNamesFileAndPath) {
  EXPECT_EQ(to_string(Warning{"c.json", "/links/0/bandwidth", "too fast"}), "c.json at /links/0/bandwidth: too fast");
  EXPECT_EQ(to_string(Warning{"", "--gpus", "odd"}), "at --gpus: odd");
  EXPECT_EQ(to_string(Warning{"c.json", "", "odd"}), "c.json: odd");
}

TEST(Warning, EachIsListedOnceAndInOrder) {
  std::vector<Warning> list;
  const Warning a{"c.json", "/a", "x"}, b{"c.json", "/b", "x"};
  add_warnings(list, {a, b});
  add_warnings(list, {b, a});  // the same file loaded again
  add_warning(list, Warning{"d.json", "/a", "x"});
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0], a);
  EXPECT_EQ(list[1], b);
  EXPECT_EQ(warnings_json(list)[2], (nlohmann::json{{"file", "d.json"}, {"path", "/a"}, {"message", "x"}}));
  EXPECT_EQ(warnings_json({}), nlohmann::json::array());
}

TEST(Warning, AnOutputAlwaysListsItsWarningsEmptyWhenNone) {
  nlohmann::json out = {{"gpus", 16}};
  list_warnings_in(out, {});
  EXPECT_EQ(out, (nlohmann::json{{"gpus", 16}, {"warnings", nlohmann::json::array()}}));
  list_warnings_in(out, {Warning{"c.json", "/fabric", "big"}});
  EXPECT_EQ(out.at("warnings"), (nlohmann::json::array({{{"file", "c.json"}, {"path", "/fabric"}, {"message", "big"}}})));
}

}  // namespace
}  // namespace cs
