#include "drivers/sweep_runner.h"

#include <exception>
#include <thread>

namespace cs::drv {

SweepWork::SweepWork(const Sweep& sweep, results::RowFormat format, std::vector<std::size_t> todo, SweepResultsFile& out,
                     std::function<void(const SweepCounts&)> progress)
    : sweep_(sweep), format_(format), todo_(std::move(todo)), out_(out), progress_(std::move(progress)), next_(out.present()),
      start_(std::chrono::steady_clock::now()) {
  counts_.total = todo_.size();
  counts_.already = out.present();
}

std::optional<std::size_t> SweepWork::take() {
  const std::size_t k = next_.fetch_add(1);
  if (k >= todo_.size()) return std::nullopt;
  return k;
}

void SweepWork::finish(std::size_t k, results::PointStatus status, std::string row) {
  out_.put(k, std::move(row));
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.done;
  switch (status) {
    case results::PointStatus::kOk: ++counts_.ok; break;
    case results::PointStatus::kInvalid: ++counts_.invalid; break;
    case results::PointStatus::kOutOfMemory: ++counts_.out_of_memory; break;
    case results::PointStatus::kError: ++counts_.errors; break;
  }
  counts_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (progress_) progress_(counts_);
}

void SweepWork::run(int threads) {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto worker = [&] {
    try {
      while (auto k = take()) {
        PointResult r = run_sweep_point(sweep_, todo_[*k], format_);
        finish(*k, r.status, std::move(r.row));
      }
    } catch (...) {  // writing the file failed: stop handing out rows, report it once
      next_.store(todo_.size());
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

SweepCounts SweepWork::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SweepCounts c = counts_;
  c.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return c;
}

std::vector<std::size_t> sweep_shard(std::size_t points, std::size_t index, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t i = index - 1; i < points; i += count) out.push_back(i);
  return out;
}

}  // namespace cs::drv
