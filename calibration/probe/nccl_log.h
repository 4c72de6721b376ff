// NCCL's own record of its choices: with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING, rank 0 of
// every communicator prints one line per collective call (src/enqueue.cc, NCCL 2.19 and later):
//
//   host:pid:tid [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}
//
// (the byte count is count x type size of the call: the per-rank buffer for all-gather and
// reduce-scatter, not nccl-tests' size). Older NCCL printed numeric ids and a time instead:
//
//   ... NCCL INFO 4096 Bytes -> Algo 0 proto 0 time 12.500000
//
// Both forms are parsed; anything else yields nothing. Point-to-point calls (send/recv, hence
// all-to-all) print no tuning line, so their choice stays empty. Pure C++: unit-tested without
// a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/profile.h"

namespace cs::probe {

struct TuningLine {
  std::string function;   // "AllReduce", ...; "" in the old numeric form
  std::int64_t bytes = 0;
  std::string algorithm;  // normalised: ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat
  std::string protocol;   // normalised: ll, ll128, simple
  int channels = 0;       // Hi - Lo + 1; 0 when not printed
};

std::optional<TuningLine> parse_tuning_line(std::string_view line);

// NCCL's spellings ("RING", "Ring", "NVLS_TREE", "NVLSTree", "CollNetDirect", or the numeric id
// of the old form) as the profile writes them; an unknown name is lower-cased.
std::string normalize_algorithm(std::string_view nccl_name);
std::string normalize_protocol(std::string_view nccl_name);

// The function name NCCL prints for a profile op ("all_reduce" -> "AllReduce"); "" for the
// point-to-point ops (all_to_all, send_recv), which have no tuning line.
std::string nccl_function_name(std::string_view op);

// The choice NCCL made most often among the lines of `function` (lines of the old form, which name
// no function, count for any); ties go to the latest. Empty strings and 0 channels when no line.
cal::NcclChoice dominant_choice(const std::vector<TuningLine>& lines, std::string_view function);

// Reads the lines NCCL appended to its debug file since the last call (complete lines only).
class NcclLogTail {
 public:
  NcclLogTail() = default;
  explicit NcclLogTail(std::string path);
  bool active() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Parsed tuning lines appended since the previous call (or since skip_to_end()).
  std::vector<TuningLine> read_new();
  void skip_to_end();

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
};

// NCCL_DEBUG_FILE with NCCL's substitutions expanded: %h the host name up to its first '.',
// %p the process id, %% a '%'; other %-sequences are kept as they are (as NCCL does).
std::string expand_nccl_debug_file(std::string_view pattern, std::string_view host, long pid);

}  // namespace cs::probe
