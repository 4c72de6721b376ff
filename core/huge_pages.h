// Transparent huge pages for the heap, where the kernel only gives them to memory that asks.
//
// Why: a large simulation is bound by memory latency over a working set of hundreds of MiB to
// GiB (the flow network's per-link flow lists, the flows' hops, the router's arrays), scattered
// over many small heap blocks. A working set that size overflows the TLB with 4 KiB pages;
// with 2 MiB pages the same working set needs 512x fewer TLB entries. Measured on a 2-core
// machine whose kernel runs THP in `madvise` mode (docs/performance.md, "Huge pages"): user time
// of the 1 GiB tree all-reduce on 65,536 GPUs 5.2 -> 3.4 s, page faults 217,000 -> 9,500.
//
// How: glibc (2.35 and later) madvises its heap and its mapped blocks MADV_HUGEPAGE when the
// tunable glibc.malloc.hugetlb=1 is set, and it reads tunables only from the environment at
// start-up. So a program that wants them calls use_huge_pages(argv) first thing in main(): when
// all of the following hold it adds the tunable to GLIBC_TUNABLES and executes itself again
// (same arguments, same process id), otherwise it returns and nothing changes:
//  - the kernel's THP mode is `madvise` (in `always` the heap already gets them; in `never`
//    nothing would);
//  - the C library is glibc 2.35 or later;
//  - GLIBC_TUNABLES does not name glibc.malloc.hugetlb already (the user chose, or this is the
//    second start);
//  - CLUSTERSIM_HUGE_PAGES is not "0" (the opt-out; "1" or unset is on, any other value is
//    refused: one line naming the variable on stderr, exit code 2, before anything runs);
//  - no sanitizer and no valgrind (their allocators ignore the tunable, and valgrind would stop
//    following the program at the exec).
// Unless CLUSTERSIM_HUGE_PAGES is "0" (and without sanitizers), use_huge_pages also tells glibc's
// heap to keep freed memory for reuse (no separately mapped blocks, no trimming of the top):
// memory handed back and asked for again is faulted in and cleared again, 2 MiB at a time with
// huge pages. The 131,072-GPU tree (h100-rail-512 grown): page faults 14,000 -> 1,800, peak
// RSS 1-3% more (docs/performance.md, "The heap keeps what is freed"). And no fastbins
// (M_MXFAST 0): a freed small block is coalesced at once rather than swept with all the others
// when a large request comes; 3-7% less user time for the 405B iteration at 32,768-65,536 GPUs
// (docs/performance.md, "The iteration per doubling, and the heap without fastbins").
// Results do not depend on it: simulated outputs are byte-identical either way (the tests run
// both ways, tests/cli/cli_test.cpp, HugePages). If the exec fails, the program goes on as is.
#pragma once

#include <string>

namespace cs {

// Whether use_huge_pages would execute the program again, given the THP mode file's text, the
// glibc version ("2.36"; empty: not glibc) and the environment's GLIBC_TUNABLES,
// CLUSTERSIM_HUGE_PAGES and LD_PRELOAD (null: unset). Pure, for tests.
bool wants_huge_page_restart(const std::string& thp_mode, const std::string& glibc_version,
                             const char* glibc_tunables, const char* opt_out, const char* ld_preload);

// Whether CLUSTERSIM_HUGE_PAGES holds a value it accepts: unset (null), "0" or "1".
bool valid_huge_page_setting(const char* value);

// The GLIBC_TUNABLES value with the huge-page tunable added to `current` (null: unset).
std::string with_huge_page_tunable(const char* current);

// See above. Call before anything else in main(); returns only when it does not restart.
void use_huge_pages(char** argv);

}  // namespace cs
