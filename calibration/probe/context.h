// The state of one calibration run shared by its sections: the options, the profile being filled,
// the devices and their link classes, per-device timing resources, and the rules for failed
// points (a ProbeError fails the point and the run goes on; Ctrl-C fails the point and stops the
// run; a sticky CUDA error stops the run). The profile is saved after every section, so a crash
// still leaves a valid file.
#pragma once

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "calibration/probe/cuda_check.h"
#include "calibration/probe/inventory.h"
#include "calibration/probe/probe.h"
#include "calibration/probe/stats.h"
#include "calibration/probe/timer.h"
#include "calibration/profile.h"

namespace cs::probe {

class ProcessGroup;

class ProbeContext {
 public:
  ProbeContext(const ProbeOptions& options, std::ostream& out, std::ostream& log, const std::atomic<bool>* interrupted);
  ~ProbeContext();
  ProbeContext(const ProbeContext&) = delete;
  ProbeContext& operator=(const ProbeContext&) = delete;

  const ProbeOptions& options() const { return options_; }
  bool quick() const { return options_.quick; }
  StopRule stop_rule() const;
  // The bound on byte sweeps (options' max_bytes, or no bound).
  std::int64_t max_bytes() const;
  const std::atomic<bool>* interrupted() const { return interrupted_; }
  void check_interrupted() const;

  cal::Profile& profile() { return profile_; }
  std::vector<DeviceInfo>& devices() { return devices_; }
  const DeviceInfo& device(int i) const { return devices_.at(static_cast<std::size_t>(i)); }
  int device_count() const { return static_cast<int>(devices_.size()); }
  std::vector<std::vector<std::string>>& link_class() { return link_class_; }
  // The link class joining devices `first` .. `first + n - 1` (all pairs): nvlink when every pair
  // is nvlink, else pcie.
  std::string group_link_class(int n) const;

  // The MPI processes (or this process alone).
  ProcessGroup& processes() { return *processes_; }
  void set_processes(std::unique_ptr<ProcessGroup> p);
  // Whether this process writes the profile and the tables (rank 0).
  bool is_root() const;

  std::ostream& out() { return out_; }
  std::ostream& log() { return log_; }

  // The NCCL debug file whose TUNING lines give NCCL's choices ("" when not captured).
  const std::string& nccl_log() const { return nccl_log_; }
  void set_nccl_log(std::string path) { nccl_log_ = std::move(path); }
  // Nodes spanned by the first n ranks (1 single-process).
  int nodes_of_first(int n) const;
  void set_rank_nodes(std::vector<int> node_of_rank) { node_of_rank_ = std::move(node_of_rank); }

  // Per-device timing resources, made on first use.
  L2Flusher& flusher(int device);
  StreamBlocker& blocker(int device);
  std::size_t l2_flush_bytes() const;

  // A line for provenance.notes (deduplicated, in order).
  void note(const std::string& text);
  void mark_incomplete() { profile_.provenance.complete = false; }
  int failed_points() const { return failed_points_; }
  void count_failure() {
    ++failed_points_;
    mark_incomplete();
  }

  // Fits the models and writes the profile atomically (rank 0 only).
  void save();

  // Prints `row(point)` (rank 0) and appends the point to `dest`.
  template <class Point, class Row>
  void emit(std::vector<Point>& dest, Point point, Row&& row) {
    if (is_root()) out_ << row(point) << "\n" << std::flush;
    dest.push_back(std::move(point));
  }

  // Runs `body(point)`, then prints `row(point)` (rank 0) and appends the point to `dest`, whatever
  // happened: an Interrupted or a fatal ProbeError is rethrown after the failed point is recorded.
  template <class Point, class Body, class Row>
  void measure_into(std::vector<Point>& dest, Point point, Body&& body, Row&& row) {
    try {
      measure(point, std::forward<Body>(body));
    } catch (...) {
      emit(dest, std::move(point), row);
      throw;
    }
    emit(dest, std::move(point), row);
  }

  // Runs `body(point)`; a ProbeError or other exception marks the point failed with its text. An
  // Interrupted or a fatal ProbeError marks it failed and is rethrown.
  template <class Point, class Body>
  void measure(Point& point, Body&& body) {
    try {
      body(point);
      point.status = cal::PointStatus::kOk;
    } catch (const Interrupted& e) {
      fail(point, e.what());
      throw;
    } catch (const ProbeError& e) {
      fail(point, e.what());
      if (e.fatal()) throw;
    } catch (const std::exception& e) {
      fail(point, e.what());
    }
  }

 private:
  template <class Point>
  void fail(Point& point, const std::string& error) {
    point.status = cal::PointStatus::kFailed;
    point.error = error.empty() ? "failed" : error;
    point.timing.reset();
    count_failure();
  }

  ProbeOptions options_;
  std::ostream& out_;
  std::ostream& log_;
  const std::atomic<bool>* interrupted_;
  cal::Profile profile_;
  std::vector<DeviceInfo> devices_;
  std::vector<std::vector<std::string>> link_class_;
  std::unique_ptr<ProcessGroup> processes_;
  std::map<int, std::unique_ptr<L2Flusher>> flushers_;
  std::map<int, std::unique_ptr<StreamBlocker>> blockers_;
  std::vector<std::string> notes_;
  std::string nccl_log_;
  std::vector<int> node_of_rank_;
  int failed_points_ = 0;
};

// The sections (each in its own file). They append points to the profile in plan order and print
// their table rows as they go.
void run_warmup(ProbeContext& ctx, const std::vector<int>& devices, double seconds);
void run_gemm_section(ProbeContext& ctx);
void run_memory_section(ProbeContext& ctx);
void run_launch_section(ProbeContext& ctx);
void run_overlap_section(ProbeContext& ctx);
void run_links_section(ProbeContext& ctx);
void run_collectives_section(ProbeContext& ctx);

}  // namespace cs::probe
