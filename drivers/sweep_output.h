// The results file of a sweep, written a whole row at a time in point order, so that it is always
// a header and a prefix of the rows the run covers: a sweep killed at any moment leaves at most
// one torn last line, which a resume cuts and redoes. Rows that finish out of order wait for the
// ones before them (at most one per worker), so the file's bytes depend only on the points.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "results/sweep_row.h"

namespace cs::drv {

class SweepResultsFile {
 public:
  enum class Mode {
    kFresh,   // the file must be absent or empty
    kForce,   // whatever is there is replaced
    kResume,  // the rows already there are kept, checked against `keys`
  };
  // Opens `path` for the rows (of `parameters` parameters) whose keys (drv::sweep_point_key) are `keys`, in that order.
  // `option` names the file in errors ("--out"). Resuming checks the header and that every whole
  // line already there is the row of the next key; a line without its newline is cut.
  SweepResultsFile(std::string path, results::RowFormat format, const std::string& header, std::size_t parameters,
                   std::vector<std::string> keys, Mode mode, std::string option);
  ~SweepResultsFile();
  SweepResultsFile(const SweepResultsFile&) = delete;
  SweepResultsFile& operator=(const SweepResultsFile&) = delete;

  std::size_t present() const { return present_; }  // rows there before this run
  std::size_t rows() const { return keys_.size(); }

  // Row `k` (k >= present()), in any order from any thread; written once every row before it is.
  void put(std::size_t k, std::string row);
  std::size_t written() const;  // rows in the file now

 private:
  void append(const std::string& text);

  std::string path_, option_;
  std::vector<std::string> keys_;
  std::size_t present_ = 0;
  int fd_ = -1;
  mutable std::mutex mutex_;
  std::size_t next_ = 0;                     // the next row to write
  std::vector<std::string> pending_;         // rows waiting for an earlier one, by k - next_
  std::vector<bool> pending_set_;
};

struct Sweep;

// The results files of a sweep's shards joined in point order (the header, then every point's
// row once): what one `--jobs 1` run writes. Every part must be in `format`, carry this sweep's
// header and only whole rows of its points (a torn last line is left out); a point two parts
// give different rows, or that no part gives, is an InputError at "parts" naming it.
std::string merge_sweep_parts(const Sweep& s, results::RowFormat format, const std::vector<std::string>& parts);

// The format a results file name asks for: ".csv" or ".jsonl"; InputError at `option` otherwise.
results::RowFormat sweep_format_of(const std::string& path, const std::string& option);

}  // namespace cs::drv
