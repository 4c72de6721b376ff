// Runs a sweep's points: hands them out one at a time (to threads here, or to other processes
// through apps/sweep_mpi.cpp), simulates each, and passes the rows to the results file, which
// writes them in order. Counts the outcomes for the progress line and the exit status.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "drivers/sweep.h"
#include "drivers/sweep_output.h"

namespace cs::drv {

struct SweepCounts {
  std::size_t total = 0;       // points this run covers (the shard's)
  std::size_t already = 0;     // present in the file before this run (--resume)
  std::size_t done = 0;        // finished in this run
  std::size_t ok = 0, invalid = 0, out_of_memory = 0, errors = 0;  // of done
  double elapsed_s = 0;
};

class SweepWork {
 public:
  // `todo[k]` is the sweep point of the results file's row k; rows before out.present() are done.
  SweepWork(const Sweep& sweep, results::RowFormat format, std::vector<std::size_t> todo, SweepResultsFile& out,
            std::function<void(const SweepCounts&)> progress = {});

  // The next row to compute (its position k), or nothing when every row is handed out.
  std::optional<std::size_t> take();
  std::size_t point_of(std::size_t k) const { return todo_[k]; }
  // Row k finished (thread-safe): written as soon as every row before it is.
  void finish(std::size_t k, results::PointStatus status, std::string row);
  // Takes and runs rows on `threads` threads until none are left.
  void run(int threads);
  SweepCounts counts() const;

  const Sweep& sweep() const { return sweep_; }
  results::RowFormat format() const { return format_; }

 private:
  const Sweep& sweep_;
  results::RowFormat format_;
  std::vector<std::size_t> todo_;
  SweepResultsFile& out_;
  std::function<void(const SweepCounts&)> progress_;
  std::atomic<std::size_t> next_;
  mutable std::mutex mutex_;
  SweepCounts counts_;
  std::chrono::steady_clock::time_point start_;
};

// The points of shard `index` (1-based) of `count`: every count-th point from index - 1.
std::vector<std::size_t> sweep_shard(std::size_t points, std::size_t index, std::size_t count);

}  // namespace cs::drv
