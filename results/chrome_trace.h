// Timelines in the Chrome trace event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open. One process per group of tracks (GPUs, links), one thread per track,
// complete events ("ph":"X") with microsecond timestamps. Output is deterministic: tracks and
// events appear in the order they were added.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace cs::results {

class ChromeTrace {
 public:
  // Names a process (a group of tracks) and a thread (one track) inside it.
  void name_process(int pid, const std::string& name);
  void name_track(int pid, std::int64_t tid, const std::string& name);
  // A span on a track. `args` are shown when the span is selected.
  void span(int pid, std::int64_t tid, const std::string& name, SimTime begin, Duration length,
            nlohmann::json args = nlohmann::json::object());
  std::size_t span_count() const { return spans_; }
  std::string dump() const;  // the whole trace as JSON text

 private:
  nlohmann::json events_ = nlohmann::json::array();
  std::size_t spans_ = 0;
};

}  // namespace cs::results
