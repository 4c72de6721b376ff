// core/huge_pages.h: when the program executes itself again with glibc's huge-page tunable, and
// the value it sets. That outputs do not change with it is tests/cli/cli_test.cpp's
// HugePages.OutputsAreByteIdenticalWithAndWithout.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

namespace cs {
namespace {

constexpr const char* kMadvise = "always [madvise] never\n";

TEST(HugePages, RestartsOnlyInMadviseModeOnGlibcWithTheTunable) {
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "2.36", nullptr, nullptr, nullptr));
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "2.35", nullptr, nullptr, nullptr));
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "3.1", nullptr, nullptr, nullptr));
  // `always` already backs the heap with huge pages, `never` gives none; no THP file at all.
  EXPECT_FALSE(wants_huge_page_restart("[always] madvise never\n", "2.36", nullptr, nullptr, nullptr));
  EXPECT_FALSE(wants_huge_page_restart("always madvise [never]\n", "2.36", nullptr, nullptr, nullptr));
  EXPECT_FALSE(wants_huge_page_restart("", "2.36", nullptr, nullptr, nullptr));
  // glibc before 2.35 has no such tunable; not glibc at all.
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.34", nullptr, nullptr, nullptr));
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "", nullptr, nullptr, nullptr));
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "junk", nullptr, nullptr, nullptr));
}

TEST(HugePages, TheUsersChoiceAndTheSecondStartWin) {
  // Already named, whatever its value: the user chose, or this is the restarted process.
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.36", "glibc.malloc.hugetlb=0", nullptr, nullptr));
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.36", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", nullptr, nullptr));
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "2.36", "glibc.malloc.arena_max=2", nullptr, nullptr));
  // The opt-out, and only "0" is one.
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.36", nullptr, "0", nullptr));
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "2.36", nullptr, "1", nullptr));
  // Under valgrind the exec would leave the tool.
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.36", nullptr, nullptr,
                                       "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so"));
  EXPECT_TRUE(wants_huge_page_restart(kMadvise, "2.36", nullptr, nullptr, "/usr/lib/libfoo.so"));
}

TEST(HugePages, OnlyZeroOneOrUnsetIsASetting) {
  EXPECT_TRUE(valid_huge_page_setting(nullptr));
  EXPECT_TRUE(valid_huge_page_setting("0"));
  EXPECT_TRUE(valid_huge_page_setting("1"));
  for (const char* bad : {"", "off", "false", "no", "2", "01", "1 ", " 0"}) {
    EXPECT_FALSE(valid_huge_page_setting(bad)) << '"' << bad << '"';
  }
}

TEST(HugePages, TheTunableIsAddedToWhatIsThere) {
  EXPECT_EQ(with_huge_page_tunable(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(with_huge_page_tunable(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(with_huge_page_tunable("glibc.malloc.arena_max=2"), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  // What it sets stops the next start from restarting again.
  const std::string set = with_huge_page_tunable("glibc.malloc.arena_max=2");
  EXPECT_FALSE(wants_huge_page_restart(kMadvise, "2.36", set.c_str(), nullptr, nullptr));
}

}  // namespace
}  // namespace cs
