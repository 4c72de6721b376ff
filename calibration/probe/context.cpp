#include "calibration/probe/context.h"

#include <algorithm>
#include <set>

#include "calibration/fit.h"
#include "calibration/nominal.h"
#include "calibration/probe/process_group.h"

namespace cs::probe {

ProbeContext::ProbeContext(const ProbeOptions& options, std::ostream& out, std::ostream& log,
                           const std::atomic<bool>* interrupted)
    : options_(options), out_(out), log_(log), interrupted_(interrupted), processes_(single_process()) {}

ProbeContext::~ProbeContext() = default;

StopRule ProbeContext::stop_rule() const {
  StopRule r;
  r.min_samples = profile_.settings.min_samples;
  r.target_spread = profile_.settings.target_spread;
  r.time_limit_s = to_seconds(profile_.settings.time_limit);
  return r;
}

std::int64_t ProbeContext::max_bytes() const {
  return options_.max_bytes > 0 ? options_.max_bytes : std::numeric_limits<std::int64_t>::max();
}

void ProbeContext::check_interrupted() const {
  if (interrupted_ != nullptr && interrupted_->load()) throw Interrupted();
}

std::string ProbeContext::group_link_class(int n) const {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      if (static_cast<std::size_t>(i) >= link_class_.size() || static_cast<std::size_t>(j) >= link_class_[i].size() ||
          link_class_[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] != "nvlink") {
        return "pcie";
      }
    }
  }
  return "nvlink";
}

int ProbeContext::nodes_of_first(int n) const {
  if (node_of_rank_.empty()) return 1;
  std::set<int> nodes;
  for (int i = 0; i < n && static_cast<std::size_t>(i) < node_of_rank_.size(); ++i) {
    nodes.insert(node_of_rank_[static_cast<std::size_t>(i)]);
  }
  return std::max<int>(1, static_cast<int>(nodes.size()));
}

void ProbeContext::set_processes(std::unique_ptr<ProcessGroup> p) { processes_ = std::move(p); }

bool ProbeContext::is_root() const { return processes_->rank() == 0; }

L2Flusher& ProbeContext::flusher(int device) {
  auto& f = flushers_[device];
  if (!f) f = std::make_unique<L2Flusher>(device, l2_flush_bytes());
  return *f;
}

StreamBlocker& ProbeContext::blocker(int device) {
  auto& b = blockers_[device];
  if (!b) b = std::make_unique<StreamBlocker>(device);
  return *b;
}

std::size_t ProbeContext::l2_flush_bytes() const { return static_cast<std::size_t>(profile_.settings.l2_flush.value()); }

void ProbeContext::note(const std::string& text) {
  if (std::find(notes_.begin(), notes_.end(), text) != notes_.end()) return;
  notes_.push_back(text);
}

void ProbeContext::save() {
  if (!is_root()) return;
  for (const auto& [device, b] : blockers_) {
    if (b->timeouts() > 0) {
      note("GPU " + std::to_string(device) +
           ": the blocking kernel timed out; later samples on it include the enqueue time");
    }
  }
  std::string notes;
  for (const std::string& n : notes_) notes += (notes.empty() ? "" : "; ") + n;
  profile_.provenance.notes = notes;
  try {
    profile_.models = cal::fit_models(profile_, cal::nominal_from_catalog(profile_.inventory));
  } catch (const std::exception& e) {
    // The points are what matter; --refit can fit them again once the fit is fixed.
    profile_.models = cal::Models{};
    log_ << "clustersim-calibrate: fitting the models failed (" << e.what() << "); the points are saved\n";
  }
  cal::save_profile(profile_, options_.out);
}

}  // namespace cs::probe
