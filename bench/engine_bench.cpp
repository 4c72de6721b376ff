// Event engine throughput: schedule + run of 10^7 events, alone (no models).
//
// Each scenario has `live` components; a component's event re-arms the component 1..1000 ps
// later, so about `live` events are pending at any time (a hold model). With cancellations, a
// component also arms a timeout behind its next event with probability 3/7 and cancels it when
// that next event fires: 3 of every 10 scheduled events are then cancelled before they run.
//
// Prints a table for people and one JSON line for tools. Usage: bench_engine [events]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "core/random.h"
#include "sim/engine/simulator.h"

namespace {

using cs::sim::EventHandle;
using cs::sim::Phase;
using cs::sim::Simulator;

struct Scenario {
  const char* name;
  std::uint32_t live;
  bool cancellations;
};

struct Result {
  Scenario scenario;
  std::uint64_t executed = 0;
  std::uint64_t scheduled = 0;
  std::uint64_t cancelled = 0;
  double seconds = 0;
  std::uint64_t trace_hash = 0;
};

class HoldModel {
 public:
  HoldModel(const Scenario& s, std::uint64_t events)
      : scenario_(s), remaining_(events), rng_(cs::Rng::derive(1, s.live)), timeouts_(s.live) {}

  Result run() {
    const auto start = std::chrono::steady_clock::now();
    for (std::uint32_t c = 0; c < scenario_.live && remaining_ > 0; ++c) arm(c);
    sim_.run();
    const auto stop = std::chrono::steady_clock::now();
    Result r{scenario_};
    r.executed = sim_.events_executed();
    r.scheduled = scheduled_;
    r.cancelled = cancelled_;
    r.seconds = std::chrono::duration<double>(stop - start).count();
    r.trace_hash = sim_.trace_hash();
    return r;
  }

 private:
  void arm(std::uint32_t c) {
    --remaining_;
    const auto delay = cs::picoseconds(static_cast<std::int64_t>(1 + rng_.below(1000)));
    sim_.schedule_after(delay, Phase::kCompletion, [this, c] { fire(c); });
    ++scheduled_;
    if (scenario_.cancellations && rng_.below(7) < 3) {
      timeouts_[c] = sim_.schedule_after(delay + cs::nanoseconds(1), Phase::kStatistics, [] {});
      ++scheduled_;
    }
  }

  void fire(std::uint32_t c) {
    if (scenario_.cancellations && sim_.cancel(timeouts_[c])) ++cancelled_;
    if (remaining_ > 0) arm(c);
  }

  Scenario scenario_;
  std::uint64_t remaining_;
  cs::Rng rng_;
  Simulator sim_;
  std::vector<EventHandle> timeouts_;
  std::uint64_t scheduled_ = 0;
  std::uint64_t cancelled_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  cs::use_huge_pages(argv);  // core/huge_pages.h
  std::uint64_t events = 10'000'000;
  if (argc > 1) events = std::strtoull(argv[1], nullptr, 10);
  if (events == 0) {
    std::fprintf(stderr, "usage: bench_engine [events > 0]\n");
    return 2;
  }
  const Scenario scenarios[] = {
      {"few_live", 16, false},
      {"pending_1e5", 100'000, false},
      {"few_live_cancel30", 16, true},
      {"pending_1e5_cancel30", 100'000, true},
  };
  std::vector<Result> results;
  for (const Scenario& s : scenarios) results.push_back(HoldModel(s, events).run());

  std::printf("engine: schedule + run, %llu real events per scenario\n",
              static_cast<unsigned long long>(events));
  std::printf("%-22s %8s %11s %11s %10s %8s %12s\n", "scenario", "live", "scheduled", "cancelled",
              "executed", "seconds", "events/s");
  for (const Result& r : results) {
    std::printf("%-22s %8u %11llu %11llu %10llu %8.3f %12.3e\n", r.scenario.name, r.scenario.live,
                static_cast<unsigned long long>(r.scheduled), static_cast<unsigned long long>(r.cancelled),
                static_cast<unsigned long long>(r.executed), r.seconds,
                static_cast<double>(r.executed) / r.seconds);
  }
  std::string json = "{\"bench\":\"engine\",\"results\":[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"scenario\":\"%s\",\"live\":%u,\"scheduled\":%llu,\"cancelled\":%llu,"
                  "\"executed\":%llu,\"seconds\":%.6f,\"events_per_s\":%.0f,"
                  "\"scheduled_per_s\":%.0f,\"trace_hash\":\"%016llx\"}",
                  i ? "," : "", r.scenario.name, r.scenario.live,
                  static_cast<unsigned long long>(r.scheduled), static_cast<unsigned long long>(r.cancelled),
                  static_cast<unsigned long long>(r.executed), r.seconds,
                  static_cast<double>(r.executed) / r.seconds, static_cast<double>(r.scheduled) / r.seconds,
                  static_cast<unsigned long long>(r.trace_hash));
    json += buf;
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
  return 0;
}
