#include "drivers/cluster_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <set>

#include "calibration/profile.h"
#include "core/errors.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/gpu_pool.h"
#include "drivers/job_network.h"
#include "drivers/job_stream.h"
#include "drivers/job_timing.h"

namespace cs::drv {
namespace {

using results::JobRecord;

enum class EventKind : std::uint8_t { kFailure = 0, kRepair = 1, kFinish = 2, kResume = 3, kArrival = 4 };

struct Event {
  double time = 0;
  EventKind kind = EventKind::kArrival;
  std::uint64_t seq = 0;
  std::int64_t job = -1;   // or the GPU of a repair
  std::uint32_t version = 0;
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

enum class State : std::uint8_t { kFuture, kWaiting, kRestarting, kRunning, kDone, kRejected };

// A job's life in the simulation. Progress and work are seconds of its ideal run.
struct Job {
  const JobRequest* req = nullptr;
  State state = State::kFuture;
  double work = 0, done = 0;
  double rate = 1, since = 0;   // progress per second, and when `done` was last brought up to date
  double segment_done = 0;      // `done` when the job last began progressing (link bytes)
  std::uint32_t version = 0;    // of its pending finish or resume event
  std::optional<Placement> placement;
  int unit = 1;
  double ideal_iter = 0;        // s; 0 for a job of fixed length
  const ClassTiming* timing = nullptr;
  JobTraffic traffic;
  bool networked = false;       // its traffic loads a link of tier >= 1
  double started_at = 0;        // of the current run
  double restart_left = 0;      // paid at its next start
  double alone_rate = 1;
  int threshold = 1;            // fragmentation threshold while it waits
};

class Scheduler {
 public:
  Scheduler(const ScheduleScenario& s, results::ScheduleRun& out) : s_(s), out_(out), rng_(Rng::derive(s.seed, 21)) {}

  void setup() {
    if (!s_.cluster.empty()) {
      machine_.emplace(coll::load_machine(s_.cluster, s_.cluster_overrides));
      if (!s_.profile.empty()) {  // measured compute and link parameters, as a training run takes them
        profile_ = std::make_shared<const cal::ProfileModel>(cal::load_profile(s_.profile));
        check_profile_gpu(*profile_, machine_->cluster, s_.profile, s_.file, "/profile");
        machine_->protocol = calibrate_protocol(*profile_, machine_->protocol).protocol;
      }
      pool_.emplace(machine_->cluster);
      network_ = std::make_unique<JobNetwork>(*machine_);
      out_.cluster = machine_->cluster.name();
      out_.warnings = machine_->warnings;
      out_.network = true;
    } else {
      pool_.emplace(read_node_list(s_.nodes, s_.node_fraction));
      out_.cluster = s_.nodes;
    }
    check_sizes();
    stream_ = make_jobs(s_);
    if (!stream_.classes.empty()) timer_ = std::make_unique<JobTimer>(*machine_, s_, stream_.classes, profile_);
    out_.gpus = pool_->gpus();
    out_.servers = static_cast<int>(pool_->servers().size());
    out_.leaf_groups = pool_->groups();
    out_.users = stream_.users;
    out_.skipped = stream_.skipped;
    jobs_.resize(stream_.jobs.size());
    unfinished_ = static_cast<std::int64_t>(jobs_.size());
    out_.jobs.resize(stream_.jobs.size());
    link_jobs_.assign(machine_ ? machine_->cluster.link_count() : 0, 0);
    link_since_.assign(link_jobs_.size(), 0);
    link_shared_.assign(link_jobs_.size(), 0);
    link_bytes_.assign(link_jobs_.size(), 0);
    link_max_.assign(link_jobs_.size(), 0);
  }

  void run() {
    for (std::size_t i = 0; i < stream_.jobs.size(); ++i) {
      push(to_seconds(stream_.jobs[i].arrival), EventKind::kArrival, static_cast<std::int64_t>(i), 0);
    }
    if (s_.failures.mtbf_per_gpu.value() > 0) schedule_failure(0);
    while (!events_.empty() && unfinished_ > 0) {
      const double now = events_.top().time;
      while (!events_.empty() && events_.top().time == now) {
        const Event e = events_.top();
        events_.pop();
        handle(e, now);
      }
      if (network_ && s_.interference && running_changed_) retime(now);
      running_changed_ = false;
      schedule_pass(now);
      if (network_ && s_.interference && running_changed_) retime(now);
      running_changed_ = false;
      sample(now);
    }
    finish_links();
    out_.joint_runs = network_ ? network_->joint_runs() : 0;
  }

 private:
  // ---- set-up ------------------------------------------------------------------------------
  // A synthetic job size no server set can hold is a mistake in the file (a trace's such job is
  // a rejection the results report).
  void check_sizes() const {
    if (!s_.jobs.synthetic) return;
    const ValueDistribution& d = s_.jobs.synthetic->gpus;
    const std::vector<double> sizes = d.kind == ValueDistribution::Kind::kChoice ? d.choices
                                      : d.kind == ValueDistribution::Kind::kConstant ? std::vector<double>{d.value}
                                                                                       : std::vector<double>{};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (std::round(sizes[i]) <= pool_->gpus()) continue;
      const std::string where = s_.jobs.where + "/gpus" + (d.kind == ValueDistribution::Kind::kChoice ? "/choice/" + std::to_string(i) : "");
      throw ConfigError(s_.file, where, "jobs of " + std::to_string(static_cast<long long>(std::round(sizes[i]))) +
                                            " GPUs on a cluster of " + std::to_string(pool_->gpus()));
    }
  }

  // ---- events ------------------------------------------------------------------------------
  void push(double t, EventKind k, std::int64_t job, std::uint32_t version) {
    events_.push(Event{t, k, seq_++, job, version});
  }

  void schedule_failure(double now) {
    const double rate = static_cast<double>(pool_->gpus()) / to_seconds(s_.failures.mtbf_per_gpu);
    push(now + draw_exponential(failure_rng_) / rate, EventKind::kFailure, -1, 0);
  }

  void handle(const Event& e, double now) {
    switch (e.kind) {
      case EventKind::kArrival:
        arrive(e.job, now);
        break;
      case EventKind::kFinish: {
        Job& j = job(e.job);
        if (j.state == State::kRunning && j.version == e.version) complete(e.job, now);
        break;
      }
      case EventKind::kResume: {
        Job& j = job(e.job);
        if (j.state == State::kRestarting && j.version == e.version) begin_progress(e.job, now);
        break;
      }
      case EventKind::kFailure: {
        const int gpu = static_cast<int>(failure_rng_.below(static_cast<std::uint64_t>(pool_->gpus())));
        if (!pool_->down(gpu)) {
          pool_->set_down(gpu, true);
          for (std::int64_t id : holders(gpu)) {
            ++out_.jobs[static_cast<std::size_t>(id)].failures;
            stop(id, now);
          }
          push(now + to_seconds(s_.failures.repair), EventKind::kRepair, gpu, 0);
        }
        schedule_failure(now);
        break;
      }
      case EventKind::kRepair:
        pool_->set_down(static_cast<int>(e.job), false);
        break;
    }
  }

  std::vector<std::int64_t> holders(int gpu) const {
    std::vector<std::int64_t> out;
    for (std::int64_t id : running_) {
      const Job& j = jobs_[static_cast<std::size_t>(id)];
      if (std::find(j.placement->gpus.begin(), j.placement->gpus.end(), gpu) != j.placement->gpus.end()) out.push_back(id);
    }
    return out;
  }

  // ---- arrival and the queue ---------------------------------------------------------------
  void arrive(std::int64_t id, double now) {
    const JobRequest& r = stream_.jobs[static_cast<std::size_t>(id)];
    Job& j = job(id);
    j.req = &r;
    JobRecord& rec = out_.jobs[static_cast<std::size_t>(id)];
    rec.id = r.id;
    rec.name = r.name;
    rec.job_class = r.job_class >= 0 ? stream_.classes[static_cast<std::size_t>(r.job_class)] : "";
    rec.user = stream_.users[static_cast<std::size_t>(r.user)];
    rec.priority = r.priority;
    rec.gpus = r.gpus;
    rec.gpu_milli = r.gpu_milli;
    rec.arrival = long_seconds(now);
    if (r.job_class >= 0) j.unit = timer_->unit(r.job_class);
    std::optional<std::string> why = pool_->never_fits(request(j));
    if (!why && r.job_class >= 0) why = timer_->refuses(r.job_class, r.gpus);
    if (why) {
      j.state = State::kRejected;
      rec.status = results::JobStatus::kRejected;
      rec.reason = *why;
      rec.first_start = rec.finish = rec.arrival;
      --unfinished_;
      return;
    }
    if (r.job_class >= 0) {
      j.timing = &timer_->timing(r.job_class, r.gpus);
      std::vector<int> canonical(static_cast<std::size_t>(r.gpus));
      for (int i = 0; i < r.gpus; ++i) canonical[static_cast<std::size_t>(i)] = i;
      const JobTraffic t = timer_->traffic(r.job_class, canonical);
      j.ideal_iter = to_seconds(JobTimer::iteration(*j.timing, t.groups.empty() ? Duration{0} : network_->alone(t)));
      j.work = r.iterations * j.ideal_iter;
    } else {
      j.work = to_seconds(r.duration);
    }
    rec.ideal = long_seconds(j.work);
    j.threshold = r.gpu_milli < 1000 ? 1 : r.gpus <= pool_->max_server_gpus() ? r.gpus : j.unit;
    enqueue(id);
  }

  GpuRequest request(const Job& j) const {
    return GpuRequest{j.req->gpus, j.req->gpu_milli, j.unit, &j.req->gpu_models};
  }

  // The queue's order: the policy's key, then arrival order.
  std::pair<double, std::int64_t> key(std::int64_t id) const {
    const Job& j = jobs_[static_cast<std::size_t>(id)];
    switch (s_.policy) {
      case QueuePolicy::kSjf:
        return {j.work - j.done + j.restart_left, id};
      case QueuePolicy::kPriority:
        return {-static_cast<double>(j.req->priority), id};
      default:
        return {0, id};
    }
  }

  void enqueue(std::int64_t id) {
    Job& j = job(id);
    j.state = State::kWaiting;
    queue_.insert(key(id));
    thresholds_.insert(j.threshold);
  }

  void dequeue(std::int64_t id) {
    Job& j = job(id);
    queue_.erase(key(id));
    thresholds_.erase(thresholds_.find(j.threshold));
  }

  // ---- starting and stopping ---------------------------------------------------------------
  void start(std::int64_t id, Placement p, double now) {
    dequeue(id);
    Job& j = job(id);
    JobRecord& rec = out_.jobs[static_cast<std::size_t>(id)];
    pool_->allocate(p);
    if (rec.starts == 0) rec.first_start = long_seconds(now);
    ++rec.starts;
    rec.servers = p.servers;
    rec.leaf_groups = p.groups;
    rec.first_gpu = p.gpus.front();
    j.placement = std::move(p);
    j.started_at = now;
    running_.insert(id);
    if (j.req->job_class >= 0) {
      j.traffic = timer_->traffic(j.req->job_class, j.placement->gpus);
      const Duration alone = j.traffic.groups.empty() ? Duration{0} : network_->alone(j.traffic);
      j.alone_rate = rate_of(j, alone);
      j.networked = false;
      if (!j.traffic.groups.empty()) {
        for (const LinkLoad& l : network_->links(j.traffic)) j.networked |= machine_->cluster.link(l.link).tier >= 1;
      }
    }
    if (j.restart_left > 0) {
      j.state = State::kRestarting;
      ++j.version;
      push(now + j.restart_left, EventKind::kResume, id, j.version);
      j.restart_left = 0;
    } else {
      begin_progress(id, now);
    }
  }

  void begin_progress(std::int64_t id, double now) {
    Job& j = job(id);
    j.state = State::kRunning;
    j.since = now;
    j.segment_done = j.done;
    j.rate = j.alone_rate;
    if (j.networked) {
      load_links(j, now, +1);
      running_changed_ = true;
    }
    reschedule_finish(id, now);
  }

  void reschedule_finish(std::int64_t id, double now) {
    Job& j = job(id);
    ++j.version;
    push(now + std::max(0.0, j.work - j.done) / j.rate, EventKind::kFinish, id, j.version);
  }

  void advance(Job& j, double now) {
    if (j.state != State::kRunning) return;
    j.done = std::min(j.work, j.done + j.rate * (now - j.since));
    j.since = now;
  }

  // Leaves the GPUs: progress and link bytes accounted.
  void leave(std::int64_t id, double now) {
    Job& j = job(id);
    JobRecord& rec = out_.jobs[static_cast<std::size_t>(id)];
    if (j.state == State::kRunning) {
      advance(j, now);
      if (j.networked) {
        load_links(j, now, -1);
        running_changed_ = true;
        const double iterations = j.ideal_iter > 0 ? (j.done - j.segment_done) / j.ideal_iter : 0.0;
        for (const LinkLoad& l : network_->links(j.traffic)) {
          link_bytes_[l.link.value] += iterations * static_cast<double>(l.bytes.value());
        }
      }
    }
    rec.gpu_seconds += (now - j.started_at) * static_cast<double>(j.placement->milli) * static_cast<double>(j.placement->gpus.size()) / 1000.0;
    pool_->release(*j.placement);
    running_.erase(id);
    ++j.version;
  }

  void complete(std::int64_t id, double now) {
    leave(id, now);
    Job& j = job(id);
    j.state = State::kDone;
    JobRecord& rec = out_.jobs[static_cast<std::size_t>(id)];
    rec.finish = long_seconds(now);
    rec.alone = long_seconds(j.work / j.alone_rate);
    j.placement.reset();
    --unfinished_;
  }

  // Preempted or failed: back to the queue with the progress of its last checkpoint.
  void stop(std::int64_t id, double now) {
    leave(id, now);
    Job& j = job(id);
    const double interval = to_seconds(s_.checkpoint.interval);
    const double kept = interval > 0 ? std::floor(j.done / interval) * interval : 0.0;
    JobRecord& rec = out_.jobs[static_cast<std::size_t>(id)];
    const double restart = to_seconds(s_.checkpoint.restart);
    rec.lost = long_seconds(to_seconds(rec.lost) + (j.done - kept) + restart);
    j.done = kept;
    j.restart_left = restart;
    j.placement.reset();
    j.networked = false;
    enqueue(id);
  }

  // ---- the network -------------------------------------------------------------------------
  // A networked job starts (+1) or stops (-1) loading its links: time with two or more jobs on a
  // link is accumulated per link.
  void load_links(const Job& j, double now, int delta) {
    for (const LinkLoad& l : network_->links(j.traffic)) {
      const std::uint32_t k = l.link.value;
      if (link_jobs_[k] >= 2) link_shared_[k] += now - link_since_[k];
      link_since_[k] = now;
      link_jobs_[k] += delta;
      link_max_[k] = std::max(link_max_[k], link_jobs_[k]);
    }
  }

  // Every running networked job's iteration with its neighbours; jobs whose time changed get a
  // new rate and finish time. Only jobs with a link another running job also loads can be slowed
  // (the per-link counts say which); the others run at their alone rate.
  void retime(double now) {
    std::vector<std::int64_t> ids;
    std::vector<const JobTraffic*> traffic;
    for (std::int64_t id : running_) {
      Job& j = jobs_[static_cast<std::size_t>(id)];
      if (j.state != State::kRunning || !j.networked) continue;
      bool shares = false;
      for (const LinkLoad& l : network_->links(j.traffic)) {
        if (link_jobs_[l.link.value] >= 2) {
          shares = true;
          break;
        }
      }
      if (shares) {
        ids.push_back(id);
        traffic.push_back(&j.traffic);
      } else {
        set_rate(id, j.alone_rate, now);
      }
    }
    if (ids.empty()) return;
    const std::vector<Duration> comm = network_->together(traffic);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      Job& j = job(ids[i]);
      set_rate(ids[i], rate_of(j, comm[i]), now);
    }
  }

  // Progress per second of a job of a class whose all-reduce takes `allreduce`: T_ideal / T_iter.
  static double rate_of(const Job& j, Duration allreduce) {
    const double iteration = to_seconds(JobTimer::iteration(*j.timing, allreduce));
    return j.ideal_iter > 0 && iteration > 0 ? j.ideal_iter / iteration : 1.0;
  }

  void set_rate(std::int64_t id, double rate, double now) {
    Job& j = job(id);
    if (rate == j.rate) return;
    advance(j, now);
    j.rate = rate;
    reschedule_finish(id, now);
  }

  // ---- the scheduling pass -----------------------------------------------------------------
  // The pool's own policy for this scenario: network-aware placement falls back to topology
  // where it has nothing to time (and for the preemption check).
  PlacementPolicy pool_policy() const {
    return s_.placement == PlacementPolicy::kNetworkAware ? PlacementPolicy::kTopology : s_.placement;
  }

  std::optional<Placement> find_place(const Job& j) {
    const GpuRequest r = request(j);
    if (s_.placement != PlacementPolicy::kNetworkAware || !j.timing || r.gpus <= 1) return pool_->place(r, pool_policy(), rng_);
    // The candidates of topology and packed placement, each timed beside the running jobs.
    std::optional<Placement> best;
    double best_time = 0;
    for (PlacementPolicy p : {PlacementPolicy::kTopology, PlacementPolicy::kPacked, PlacementPolicy::kFirstFit}) {
      std::optional<Placement> c = pool_->place(r, p, rng_);
      if (!c) continue;
      if (best && c->gpus == best->gpus) continue;
      const double t = predicted_iteration(j, *c);
      if (!best || t < best_time) {
        best = std::move(c);
        best_time = t;
      }
    }
    return best;
  }

  double predicted_iteration(const Job& j, const Placement& p) {
    const JobTraffic t = timer_->traffic(j.req->job_class, p.gpus);
    if (t.groups.empty()) return to_seconds(j.timing->rest);
    std::vector<const JobTraffic*> traffic;
    for (std::int64_t id : running_) {
      const Job& o = jobs_[static_cast<std::size_t>(id)];
      if (o.state == State::kRunning && o.networked) traffic.push_back(&o.traffic);
    }
    traffic.push_back(&t);
    const Duration comm = s_.interference ? network_->together(traffic).back() : network_->alone(t);
    return to_seconds(JobTimer::iteration(*j.timing, comm));
  }

  void schedule_pass(double now) {
    // Within one pass GPUs only get taken, so a request like one that failed fails too.
    int failed_whole = std::numeric_limits<int>::max(), failed_share = std::numeric_limits<int>::max();
    auto try_start = [&](std::int64_t id) {
      const Job& j = jobs_[static_cast<std::size_t>(id)];
      const bool simple = j.unit == 1 && j.req->gpu_models.empty();
      if (simple && (j.req->gpu_milli < 1000 ? j.req->gpu_milli >= failed_share : j.req->gpus >= failed_whole)) return false;
      std::optional<Placement> p = find_place(j);
      if (!p) {
        if (simple) (j.req->gpu_milli < 1000 ? failed_share : failed_whole) = j.req->gpu_milli < 1000 ? j.req->gpu_milli : j.req->gpus;
        return false;
      }
      start(id, std::move(*p), now);
      return true;
    };
    while (!queue_.empty()) {
      const std::int64_t head = queue_.begin()->second;
      if (try_start(head)) continue;
      if (s_.preemption && preempt_for(head, now)) {
        failed_whole = failed_share = std::numeric_limits<int>::max();
        if (try_start(head)) continue;
      }
      if (s_.policy == QueuePolicy::kEasyBackfill) backfill(head, now, try_start);
      return;
    }
  }

  // EASY: the head's reservation is the earliest predicted finish that frees enough GPUs (by
  // count, as EASY counts nodes); later jobs start if they fit now and end before it, or use only
  // GPUs the head will not need then.
  template <class TryStart>
  void backfill(std::int64_t head, double now, TryStart& try_start) {
    const Job& h = jobs_[static_cast<std::size_t>(head)];
    std::vector<std::pair<double, int>> ends;
    for (std::int64_t id : running_) {
      const Job& j = jobs_[static_cast<std::size_t>(id)];
      const double end = j.state == State::kRunning ? now + (j.work - j.done) / j.rate + 0.0
                                                     : now + (j.work - j.done) / j.alone_rate;
      ends.push_back({end, j.placement->milli == 1000 ? static_cast<int>(j.placement->gpus.size()) : 0});
    }
    std::sort(ends.begin(), ends.end());
    int free = pool_->gpus() - pool_->down_count() - static_cast<int>((pool_->allocated_milli() + 999) / 1000);
    double shadow = std::numeric_limits<double>::infinity();
    for (const auto& [end, gpus] : ends) {
      if (free >= h.req->gpus) break;
      free += gpus;
      shadow = end;
    }
    int extra = std::max(0, free - h.req->gpus);
    std::vector<std::int64_t> candidates;
    for (auto it = std::next(queue_.begin()); it != queue_.end(); ++it) candidates.push_back(it->second);
    for (std::int64_t id : candidates) {
      const Job& j = jobs_[static_cast<std::size_t>(id)];
      const bool ends_before = now + (j.work - j.done) + j.restart_left <= shadow;
      const int need = j.req->gpu_milli < 1000 ? 0 : j.req->gpus;
      if (!ends_before && need > extra) continue;
      if (try_start(id) && !ends_before) extra -= need;
    }
  }

  // Priority with preemption: stops running jobs of lower priority than `id` (lowest first, most
  // recently started first) until it fits; stops none when even all of them would not do.
  bool preempt_for(std::int64_t id, double now) {
    const Job& j = jobs_[static_cast<std::size_t>(id)];
    std::vector<std::int64_t> victims;
    for (std::int64_t r : running_) {
      if (jobs_[static_cast<std::size_t>(r)].req->priority < j.req->priority) victims.push_back(r);
    }
    std::sort(victims.begin(), victims.end(), [&](std::int64_t a, std::int64_t b) {
      const Job& x = jobs_[static_cast<std::size_t>(a)];
      const Job& y = jobs_[static_cast<std::size_t>(b)];
      if (x.req->priority != y.req->priority) return x.req->priority < y.req->priority;
      if (x.started_at != y.started_at) return x.started_at > y.started_at;
      return a > b;
    });
    const PlacementPolicy policy = pool_policy();
    std::size_t k = 0;
    bool fits = false;
    for (; k < victims.size() && !fits; ++k) {
      pool_->release(*jobs_[static_cast<std::size_t>(victims[k])].placement);
      fits = pool_->place(request(j), policy, rng_).has_value();
    }
    for (std::size_t i = 0; i < k; ++i) pool_->allocate(*jobs_[static_cast<std::size_t>(victims[i])].placement);
    if (!fits) return false;
    for (std::size_t i = 0; i < k; ++i) {
      ++out_.jobs[static_cast<std::size_t>(victims[i])].preemptions;
      stop(victims[i], now);
    }
    return true;
  }

  // ---- samples and links -------------------------------------------------------------------
  void sample(double now) {
    results::ScheduleSample x;
    x.time = long_seconds(now);
    x.running = static_cast<std::int32_t>(running_.size());
    x.waiting = static_cast<std::int32_t>(queue_.size());
    x.allocated_milli = pool_->allocated_milli();
    x.down = pool_->down_count();
    x.fragmented = thresholds_.empty() ? 0 : pool_->fragmented(*thresholds_.begin());
    if (!out_.timeline.empty() && out_.timeline.back().time.value() == now) {
      out_.timeline.back() = x;
    } else {
      out_.timeline.push_back(x);
    }
  }

  void finish_links() {
    if (!machine_) return;
    const topo::Cluster& c = machine_->cluster;
    for (std::size_t k = 0; k < link_bytes_.size(); ++k) {
      if (link_bytes_[k] <= 0 && link_max_[k] == 0) continue;
      const topo::LinkInfo& l = c.link(topo::LinkId{static_cast<std::uint32_t>(k)});
      if (l.tier < 1) continue;
      out_.links.push_back({c.node(l.src).name, c.node(l.dst).name, l.tier, link_bytes_[k], l.bandwidth,
                            long_seconds(link_shared_[k]), link_max_[k]});
    }
  }

  Job& job(std::int64_t id) { return jobs_[static_cast<std::size_t>(id)]; }

  const ScheduleScenario& s_;
  results::ScheduleRun& out_;
  std::optional<coll::Machine> machine_;
  std::optional<GpuPool> pool_;
  std::unique_ptr<JobNetwork> network_;
  std::shared_ptr<const cal::ProfileModel> profile_;
  std::unique_ptr<JobTimer> timer_;
  JobStream stream_;
  std::vector<Job> jobs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::set<std::pair<double, std::int64_t>> queue_;
  std::multiset<int> thresholds_;
  std::set<std::int64_t> running_;
  std::int64_t unfinished_ = 0;
  bool running_changed_ = false;
  Rng rng_;
  Rng failure_rng_ = Rng::derive(s_.failures.seed, 22);
  std::vector<int> link_jobs_, link_max_;
  std::vector<double> link_since_, link_shared_, link_bytes_;
};

}  // namespace

results::ScheduleRun simulate_schedule(const ScheduleScenario& s) {
  results::ScheduleRun out;
  out.scenario = s.name;
  out.policy = enum_name(kQueuePolicyNames, s.policy);
  out.placement = enum_name(kPlacementPolicyNames, s.placement);
  out.preemption = s.preemption;
  Scheduler sim(s, out);
  sim.setup();
  out.interference = s.interference && out.network;
  if (out.network && !s.classes.empty()) {
    out.assumptions.push_back("job classes: everything but the data-parallel all-reduce timed by the plan search's fast estimate on the cluster's first GPUs");
    if (out.interference) {
      out.assumptions.push_back("jobs whose all-reduces share links communicate at the same time and share them max-min: the pessimistic case");
    }
  }
  sim.run();
  return out;
}

}  // namespace cs::drv
