#include "core/huge_pages.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

#include "core/errors.h"

namespace cs {

namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_MEMORY__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// "2.36" -> 236; anything unreadable -> 0.
int version_number(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
}

// glibc's heap keeps what the program frees for its next allocations instead of handing it
// back to the kernel: no block is mapped apart (each large vector's growth was an mmap and its
// old buffer's free a munmap) and the heap's top is not trimmed. Memory handed back and asked
// for again is faulted in and cleared again by the kernel, 2 MiB at a time with huge pages.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

// No fastbins: glibc's heap coalesces a freed small block at once instead of parking it in a
// fastbin until a large request sweeps every fastbin (malloc_consolidate). A training
// iteration frees many small blocks between large ones; that sweep grew faster than the run
// (x3.4 its samples for x2 the GPUs, docs/performance.md). Small blocks still come from the
// per-thread cache (tcache) first.
void no_fast_bins() {
#if defined(__GLIBC__)
  mallopt(M_MXFAST, 0);
#endif
}

}  // namespace

bool wants_huge_page_restart(const std::string& thp_mode, const std::string& glibc_version,
                             const char* glibc_tunables, const char* opt_out, const char* ld_preload) {
  if (thp_mode.find("[madvise]") == std::string::npos) return false;
  if (version_number(glibc_version) < 235) return false;  // the tunable came with glibc 2.35
  if (glibc_tunables && std::strstr(glibc_tunables, kTunable)) return false;
  if (opt_out && std::strcmp(opt_out, "0") == 0) return false;
  if (ld_preload && std::strstr(ld_preload, "vgpreload")) return false;  // valgrind's preload
  return true;
}

bool valid_huge_page_setting(const char* value) {
  return !value || std::strcmp(value, "0") == 0 || std::strcmp(value, "1") == 0;
}

std::string with_huge_page_tunable(const char* current) {
  std::string value = std::string(kTunable) + "=1";
  if (current && *current) value = std::string(current) + ":" + value;
  return value;
}

void use_huge_pages(char** argv) {
  if (!argv || !argv[0]) return;
  const char* setting = std::getenv("CLUSTERSIM_HUGE_PAGES");
  if (!valid_huge_page_setting(setting)) {
    const std::string program = std::filesystem::path(argv[0]).filename().string();
    std::fprintf(stderr, "%s: CLUSTERSIM_HUGE_PAGES must be 0 (off) or 1 (on), not \"%s\" (docs/cli.md, \"Huge pages\")\n",
                 escape_control(program).c_str(), escape_control(setting).c_str());
    std::exit(2);
  }
  if (kSanitized) return;
  if (!(setting && std::strcmp(setting, "0") == 0)) {
    keep_freed_memory();
    no_fast_bins();
  }
  std::string glibc_version;
#if defined(__GLIBC__)
  glibc_version = gnu_get_libc_version();
#endif
  std::string mode;  // one line, "always [madvise] never"; empty if there is no such file
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::getline(mode_file, mode);
  if (!wants_huge_page_restart(mode, glibc_version, std::getenv("GLIBC_TUNABLES"),
                               setting, std::getenv("LD_PRELOAD"))) {
    return;
  }
  // The binary's own path, not /proc/self/exe: the process name (ps, top, perf) is the
  // executed file's name.
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || static_cast<std::size_t>(length) >= sizeof self - 1) return;
  self[length] = '\0';
  const std::string tunables = with_huge_page_tunable(std::getenv("GLIBC_TUNABLES"));
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv(self, argv);
  // Only on failure (no /proc, the binary replaced or deleted since it started): go on
  // without; the tunable now in the environment tells a second call not to try again.
}

}  // namespace cs
