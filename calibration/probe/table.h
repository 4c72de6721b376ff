// The terminal tables a calibration run prints as it goes. Collectives use nccl-tests' layout
// (size, count, type, redop, root, time, algbw, busbw, #wrong; GB = 1e9 bytes; only the
// out-of-place columns, and "#wrong" is N/A because the probe does not check results) followed by
// NCCL's choice. Pure C++: each function returns one line without its newline.
#pragma once

#include <string>

#include "calibration/profile.h"

namespace cs::probe {

std::string gemm_table_header();
std::string gemm_table_row(const cal::GemmPoint& p);

std::string memory_table_header();
std::string memory_table_row(const cal::MemoryPoint& p);

std::string launch_table_row(const cal::LaunchPoint& p);

std::string link_table_header();
std::string link_table_row(const cal::LinkPoint& p);

// Two lines: the title of one (op, ranks, algorithm) block and nccl-tests' column heads.
std::string collective_table_header(const std::string& op, int ranks, int nodes, const std::string& algorithm);
// `elements` is nccl-tests' count column (the point's bytes / 2 for bf16).
std::string collective_table_row(const cal::CollectivePoint& p, long long elements);

std::string overlap_table_row(const cal::OverlapPoint& p);

// "1.50 us", "12.3 ms": a time for progress lines.
std::string seconds_text(double s);

}  // namespace cs::probe
