// Golden outputs: every case of tests/golden/cases.json runs the clustersim binary and compares
// its standard output and the files it writes, byte for byte, with tests/golden/expected/<case>/.
// These pin the numbers and formats that users' scripts read; a refactoring must leave them
// unchanged, and an intended change of output regenerates them (CS_UPDATE_GOLDEN=1) in the same
// commit. A mismatch reports the first differing line of each file.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace cs::test {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(CS_SOURCE_DIR) / "tests" / "golden";

struct GoldenCase {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> files;
  bool slow = false;
};

std::vector<GoldenCase> load_cases(bool slow) {
  const nlohmann::json doc = nlohmann::json::parse(read_text(kGoldenDir / "cases.json"));
  std::vector<GoldenCase> out;
  for (const auto& c : doc.at("cases")) {
    GoldenCase g;
    g.name = c.at("name").get<std::string>();
    g.args = c.at("args").get<std::vector<std::string>>();
    if (c.contains("files")) g.files = c.at("files").get<std::vector<std::string>>();
    g.slow = c.value("slow", false);
    if (g.slow == slow) out.push_back(std::move(g));
  }
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// "line N: expected ... / got ..." for the first line that differs, or "" when equal.
std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    const bool he = static_cast<bool>(std::getline(e, le));
    const bool ha = static_cast<bool>(std::getline(a, la));
    if (!he && !ha) return "the files differ only in their final newline";
    if (!he || !ha || le != la) {
      return "line " + std::to_string(line) + ":\n  expected: " + (he ? le : "<end of file>") +
             "\n  actual:   " + (ha ? la : "<end of file>");
    }
  }
}

// gtest prints a case by its name, not its bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class GoldenOutput : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenOutput, Matches) {
  const GoldenCase& c = GetParam();
  TempDir out("golden_" + c.name);
  const std::string source = CS_SOURCE_DIR;
  std::vector<std::string> args;
  for (const std::string& a : c.args) {
    args.push_back(replace_all(replace_all(replace_all(a, "{CONFIGS}", source + "/configs"), "{SOURCE}", source),
                               "{OUT}", out.str()));
  }
  const RunResult r = run_binary(CS_CLUSTERSIM_BIN, args);
  ASSERT_EQ(r.exit_code, 0) << describe(CS_CLUSTERSIM_BIN, args, r);
  // Machine-independent text: the scratch folder first (it may lie under the source folder).
  auto normalise = [&](const std::string& text) {
    return replace_all(replace_all(text, out.str(), "{OUT}"), source, "{SOURCE}");
  };
  std::vector<std::pair<std::string, std::string>> outputs{{"stdout", normalise(r.out)}};
  for (const std::string& f : c.files) {
    const fs::path written = out.path() / f;
    ASSERT_TRUE(fs::exists(written)) << c.name << " wrote no " << f;
    outputs.emplace_back(f, normalise(read_text(written)));
  }
  const fs::path expected_dir = kGoldenDir / "expected" / c.name;
  const char* update = std::getenv("CS_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    for (const auto& [name, text] : outputs) {
      const fs::path target = expected_dir / name;
      fs::create_directories(target.parent_path());
      std::ofstream(target, std::ios::binary) << text;
    }
    GTEST_SKIP() << "rewrote " << expected_dir;
  }
  for (const auto& [name, text] : outputs) {
    const fs::path golden = expected_dir / name;
    ASSERT_TRUE(fs::exists(golden)) << "no golden file " << golden << " (CS_UPDATE_GOLDEN=1 writes it)";
    const std::string diff = first_difference(read_text(golden), text);
    EXPECT_TRUE(diff.empty()) << c.name << ": " << name << " differs from " << golden << " at " << diff;
  }
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Golden, GoldenOutput, ::testing::ValuesIn(load_cases(false)), case_name);
INSTANTIATE_TEST_SUITE_P(SlowGolden, GoldenOutput, ::testing::ValuesIn(load_cases(true)), case_name);

}  // namespace
}  // namespace cs::test
