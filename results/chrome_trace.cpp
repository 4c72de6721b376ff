#include "results/chrome_trace.h"

namespace cs::results {
namespace {
// Picoseconds to the format's microseconds.
double to_us(Duration d) { return static_cast<double>(d.count()) * 1e-6; }
}  // namespace

void ChromeTrace::name_process(int pid, const std::string& name) {
  events_.push_back({{"ph", "M"}, {"pid", pid}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", name}}}});
}

void ChromeTrace::name_track(int pid, std::int64_t tid, const std::string& name) {
  events_.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
  events_.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
}

void ChromeTrace::span(int pid, std::int64_t tid, const std::string& name, SimTime begin,
                       Duration length, nlohmann::json args) {
  events_.push_back({{"ph", "X"},
                     {"pid", pid},
                     {"tid", tid},
                     {"name", name},
                     {"ts", to_us(begin.time_since_epoch())},
                     {"dur", to_us(length)},
                     {"args", std::move(args)}});
  ++spans_;
}

std::string ChromeTrace::dump() const {
  nlohmann::json doc = {{"displayTimeUnit", "ns"}, {"traceEvents", events_}};
  return doc.dump(1) + "\n";
}

}  // namespace cs::results
