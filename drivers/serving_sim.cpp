#include "drivers/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

#include "core/errors.h"
#include "core/random.h"
#include "drivers/assumptions.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/config_paths.h"
#include "drivers/request_stream.h"
#include "drivers/serving_step_time.h"
#include "sim/engine/simulator.h"
#include "workloads/inference_cost.h"

namespace cs::drv {
namespace {

using results::RequestStatus;

constexpr std::size_t kMaxSamples = 10000;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A request's progress on the replica that holds it.
struct Seq {
  std::int64_t tokens = 0;     // known tokens: the prompt and what was generated so far
  std::int64_t computed = 0;   // tokens whose keys and values are in the cache
  std::int64_t generated = 0;
  std::int64_t blocks = 0;     // KV blocks held
  std::int64_t swapped = 0;    // tokens whose cache waits in host memory (swap preemption)
  int replica = -1;
};

struct Replica {
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running;  // in admission order
  std::int64_t total_blocks = 0, free_blocks = 0;
  std::int64_t queued_blocks = 0;     // blocks the waiting requests' prompts will need (least_kv)
  bool up = true, busy = false, start_pending = false;
  std::uint64_t epoch = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> batch;  // (request, new tokens) in flight
  SimTime iteration_start = kTimeZero, down_since = kTimeZero, kv_since = kTimeZero;
  std::optional<SimTime> repair_at;
  sim::EventHandle failure_event;
};

class ServingSimulation {
 public:
  // `event_replicas[k]`: the replicas failure event k takes down.
  ServingSimulation(const ServingScenario& s, const coll::Machine& machine, const wl::Model& model,
                    std::shared_ptr<const cal::ProfileModel> profile, std::vector<std::vector<topo::NodeId>> gpus,
                    std::vector<std::vector<int>> event_replicas, results::ServingRun& out)
      : s_(s),
        event_replicas_(std::move(event_replicas)),
        model_(model),
        shard_{s.tp, s.precision, s.kv_precision},
        step_(machine, model, shard_, gpus, std::move(profile)),
        out_(out),
        rng_(Rng::derive(s.requests.seed, 11)),
        failure_rng_(Rng::derive(s.failures.seed, 12)) {
    requests_ = make_requests(s.requests, s.file);
    kv_token_bytes_ = wl::kv_bytes_per_token(model.transformer, shard_);
    replicas_.resize(static_cast<std::size_t>(s.replicas));
    const std::int64_t blocks = kv_blocks();
    for (Replica& r : replicas_) r.total_blocks = r.free_blocks = blocks;
    out_.replica_stats.resize(replicas_.size());
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
      out_.replica_stats[r].kv_blocks = blocks;
      for (topo::NodeId g : gpus[r]) {
        const auto all = machine.cluster.gpus();
        out_.replica_stats[r].gpus.push_back(static_cast<int>(std::find(all.begin(), all.end(), g) - all.begin()));
      }
    }
    seqs_.resize(requests_.size());
    out_.requests.resize(requests_.size());
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      auto& rec = out_.requests[i];
      rec.id = requests_[i].id;
      rec.arrival = requests_[i].arrival;
      rec.prompt = requests_[i].prompt;
      rec.output = requests_[i].output;
    }
  }

  void run() {
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      sim_.schedule_at(requests_[i].arrival, sim::Phase::kCompletion, [this, i] { route(static_cast<std::int64_t>(i)); });
    }
    for (std::size_t k = 0; k < s_.failures.events.size(); ++k) {
      const FailureEvent& f = s_.failures.events[k];
      for (int r : event_replicas_[k]) {
        sim_.schedule_at(f.at, sim::Phase::kTopologyChange, [this, r] { fail(r); });
        if (f.until) sim_.schedule_at(*f.until, sim::Phase::kTopologyChange, [this, r] { repair(r); });
      }
    }
    if (s_.failures.mtbf_per_gpu_hours > 0) {
      for (std::size_t r = 0; r < replicas_.size(); ++r) schedule_random_failure(static_cast<int>(r));
    }
    const double last = to_seconds(requests_.back().arrival);
    sample_period_ = duration_from_seconds(std::max(last / 1000.0, 1e-3));
    sim_.schedule_at(kTimeZero, sim::Phase::kStatistics, [this] { sample(); });
    sim_.run();
    if (resolved_ != static_cast<std::int64_t>(requests_.size())) {
      throw InternalError("serving simulation ended with " + std::to_string(requests_.size() - static_cast<std::size_t>(resolved_)) +
                          " requests unresolved");
    }
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
      Replica& rep = replicas_[r];
      account_kv(static_cast<int>(r));
      if (!rep.up) out_.replica_stats[r].down += end_ - rep.down_since;
    }
    out_.end = end_;
    out_.events = sim_.events_executed();
  }

 private:
  // ---- capacity ----------------------------------------------------------------------------
  std::int64_t kv_blocks() const {
    const hw::GpuSpec& gpu = step_.gpu();
    const double hbm = static_cast<double>(gpu.hbm_capacity.value()) * s_.scheduler.memory_fraction;
    const double weights = static_cast<double>(wl::inference_weight_bytes(model_, shard_).value());
    // One iteration's intermediate activations: the widest block tensor (QKV or the MLP's gate
    // and up outputs) and the block's input and residual, 2 bytes each, for max_batch_tokens.
    const wl::TransformerConfig& c = model_.transformer;
    const std::int64_t width = std::max<std::int64_t>(c.is_moe() ? (c.top_k + c.shared_experts) * c.expert_ffn_hidden : c.ffn_hidden, c.hidden);
    const double activations = static_cast<double>(s_.scheduler.max_batch_tokens) * 2.0 *
                               (2.0 * static_cast<double>(width) / s_.tp + 2.0 * static_cast<double>(c.hidden));
    const double left = hbm - weights - activations;
    const double block = static_cast<double>(kv_token_bytes_.value()) * static_cast<double>(s_.scheduler.block_tokens);
    if (left < block) {
      throw ConfigError(s_.file, "/replicas",
                        "the model does not fit: " + std::to_string(static_cast<std::int64_t>(weights / 1e9)) +
                            " GB of weights per GPU and the activations of max_batch_tokens leave no room for a KV block in " +
                            std::to_string(static_cast<std::int64_t>(hbm / 1e9)) + " GB (raise tp, lower max_batch_tokens)");
    }
    return static_cast<std::int64_t>(left / block);
  }

  std::int64_t blocks_for(std::int64_t tokens) const { return ceil_div(tokens, s_.scheduler.block_tokens); }

  // ---- bookkeeping -------------------------------------------------------------------------
  void account_kv(int r) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    auto& st = out_.replica_stats[static_cast<std::size_t>(r)];
    const std::int64_t used = rep.total_blocks - rep.free_blocks;
    st.kv_block_seconds += static_cast<double>(used) * to_seconds(sim_.now() - rep.kv_since);
    rep.kv_since = sim_.now();
  }
  void take_blocks(int r, std::int64_t id, std::int64_t n) {
    account_kv(r);
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    rep.free_blocks -= n;
    seqs_[static_cast<std::size_t>(id)].blocks += n;
    auto& st = out_.replica_stats[static_cast<std::size_t>(r)];
    st.kv_peak = std::max(st.kv_peak, rep.total_blocks - rep.free_blocks);
  }
  void free_blocks(int r, std::int64_t id) {
    account_kv(r);
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    replicas_[static_cast<std::size_t>(r)].free_blocks += q.blocks;
    q.blocks = 0;
  }
  void resolve(std::int64_t id, RequestStatus status) {
    auto& rec = out_.requests[static_cast<std::size_t>(id)];
    rec.status = status;
    rec.finish = status == RequestStatus::kCompleted ? sim_.now() : kTimeNever;
    end_ = std::max(end_, sim_.now());
    if (++resolved_ == static_cast<std::int64_t>(requests_.size())) {
      // Nothing left to serve: stop the failure process.
      for (Replica& rep : replicas_) sim_.cancel(rep.failure_event);
    }
  }
  bool done() const { return resolved_ == static_cast<std::int64_t>(requests_.size()); }

  // ---- routing -----------------------------------------------------------------------------
  void route(std::int64_t id) {
    const ServingRequest& req = requests_[static_cast<std::size_t>(id)];
    const std::int64_t longest = req.prompt + req.output;
    // A request no replica could ever hold, or (without chunked prefill) batch, is rejected.
    if (blocks_for(longest) > replicas_[0].total_blocks ||
        (!s_.scheduler.chunked_prefill && longest > s_.scheduler.max_batch_tokens)) {
      resolve(id, RequestStatus::kRejected);
      return;
    }
    const int r = pick_replica(req);
    if (r < 0) {
      router_queue_.push_back(id);
      out_.router_peak_queue = std::max<std::int64_t>(out_.router_peak_queue, static_cast<std::int64_t>(router_queue_.size()));
      return;
    }
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    q = Seq{};
    q.tokens = req.prompt;
    q.replica = r;
    out_.requests[static_cast<std::size_t>(id)].replica = r;
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    rep.waiting.push_back(id);
    rep.queued_blocks += blocks_for(req.prompt);
    request_start(r);
  }

  std::int64_t outstanding(const Replica& r) const {
    return static_cast<std::int64_t>(r.waiting.size() + r.running.size());
  }

  int pick_replica(const ServingRequest& req) {
    std::vector<int> up;
    for (std::size_t r = 0; r < replicas_.size(); ++r)
      if (replicas_[r].up) up.push_back(static_cast<int>(r));
    if (up.empty()) return -1;
    switch (s_.router) {
      case RouterPolicy::kRoundRobin: {
        for (std::size_t k = 0; k < replicas_.size(); ++k) {
          const std::size_t r = (next_round_robin_ + k) % replicas_.size();
          if (replicas_[r].up) {
            next_round_robin_ = r + 1;
            return static_cast<int>(r);
          }
        }
        return -1;
      }
      case RouterPolicy::kLeastOutstanding: {
        // Ties go round-robin: the scan starts after the replica chosen last.
        int best = -1;
        for (std::size_t k = 0; k < replicas_.size(); ++k) {
          const std::size_t r = (next_round_robin_ + k) % replicas_.size();
          if (replicas_[r].up && (best < 0 || outstanding(replicas_[r]) < outstanding(replicas_[static_cast<std::size_t>(best)]))) {
            best = static_cast<int>(r);
          }
        }
        next_round_robin_ = static_cast<std::size_t>(best) + 1;
        return best;
      }
      case RouterPolicy::kLeastKv: {
        const auto load = [&](int r) {
          const Replica& x = replicas_[static_cast<std::size_t>(r)];
          return x.total_blocks - x.free_blocks + x.queued_blocks;
        };
        return *std::min_element(up.begin(), up.end(), [&](int a, int b) { return load(a) < load(b); });
      }
      case RouterPolicy::kPowerOfTwo: {
        if (up.size() == 1) return up[0];
        const std::size_t i = rng_.below(up.size());
        std::size_t j = rng_.below(up.size() - 1);
        if (j >= i) ++j;
        const int a = up[std::min(i, j)], b = up[std::max(i, j)];
        return outstanding(replicas_[static_cast<std::size_t>(b)]) < outstanding(replicas_[static_cast<std::size_t>(a)]) ? b : a;
      }
      case RouterPolicy::kSessionAffinity:
        return up[mix64(req.session) % up.size()];
    }
    return -1;
  }

  // ---- iterations --------------------------------------------------------------------------
  void request_start(int r) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    if (rep.start_pending || rep.busy || !rep.up) return;
    rep.start_pending = true;
    sim_.schedule_at(sim_.now(), sim::Phase::kDispatch, [this, r] {
      replicas_[static_cast<std::size_t>(r)].start_pending = false;
      start_iteration(r);
    });
  }

  // Frees request `id`'s blocks and puts it back at the head of the queue.
  void preempt(int r, std::int64_t id) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    Seq& q = seqs_[static_cast<std::size_t>(id)];
    if (s_.scheduler.preemption == Preemption::kSwap) {
      q.swapped = q.computed;
      swap_bytes_ += q.computed;
    } else {
      q.computed = 0;
    }
    free_blocks(r, id);
    rep.waiting.push_front(id);
    rep.queued_blocks += blocks_for(q.tokens);
    ++out_.requests[static_cast<std::size_t>(id)].preemptions;
    ++out_.replica_stats[static_cast<std::size_t>(r)].preemptions;
  }

  void start_iteration(int r) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    if (rep.busy || !rep.up) return;
    const SchedulerSpec& sc = s_.scheduler;
    std::int64_t budget = sc.max_batch_tokens;
    rep.batch.clear();
    swap_bytes_ = 0;
    bool preempted = false;
    // Running requests first, in admission order.
    for (std::size_t i = 0; i < rep.running.size() && budget > 0;) {
      const std::int64_t id = rep.running[i];
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      const std::int64_t want = q.tokens - q.computed;
      const std::int64_t n = sc.chunked_prefill ? std::min(want, budget) : want;
      if (n > budget) break;
      const std::int64_t need = blocks_for(q.computed + n) - q.blocks;
      bool self_preempted = false;
      while (need > rep.free_blocks) {
        const std::int64_t victim = rep.running.back();
        rep.running.pop_back();
        preempt(r, victim);
        preempted = true;
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;
      if (need > 0) take_blocks(r, id, need);
      rep.batch.emplace_back(id, n);
      budget -= n;
      ++i;
    }
    // Then waiting requests, unless this iteration had to preempt.
    while (!preempted && !rep.waiting.empty() && budget > 0 &&
           static_cast<std::int64_t>(rep.running.size()) < sc.max_batch_requests) {
      const std::int64_t id = rep.waiting.front();
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      const std::int64_t resume = q.swapped;  // cache restored from host memory
      const std::int64_t want = q.tokens - resume;
      const std::int64_t n = sc.chunked_prefill ? std::min(want, budget) : want;
      if (n > budget) break;
      // On demand (vLLM): the blocks of the tokens this iteration computes. Reserved (TensorRT-LLM's
      // GUARANTEED_NO_EVICT): the blocks of the whole request, prompt and every output token.
      const ServingRequest& req = requests_[static_cast<std::size_t>(id)];
      const std::int64_t need = sc.admission == KvAdmission::kReserve ? blocks_for(req.prompt + req.output)
                                                                      : blocks_for(resume + n);
      if (need > rep.free_blocks) break;
      rep.waiting.pop_front();
      rep.queued_blocks -= blocks_for(q.tokens);
      if (resume > 0) {
        swap_bytes_ += resume;
        q.computed = resume;
        q.swapped = 0;
      }
      take_blocks(r, id, need);
      rep.running.push_back(id);
      rep.batch.emplace_back(id, n);
      budget -= n;
    }
    if (rep.batch.empty()) return;

    wl::InferenceBatch b;
    for (const auto& [id, n] : rep.batch) {
      const Seq& q = seqs_[static_cast<std::size_t>(id)];
      const ServingRequest& req = requests_[static_cast<std::size_t>(id)];
      const bool completes = q.computed + n == q.tokens;
      b.add(n, q.computed, completes && q.generated < req.output);
    }
    Duration t = step_.step(r, b).total();
    if (swap_bytes_ > 0) t += transfer_time(kv_token_bytes_ * swap_bytes_, step_.gpu().pcie_bandwidth);
    rep.busy = true;
    rep.iteration_start = sim_.now();
    const std::uint64_t epoch = rep.epoch;
    auto& st = out_.replica_stats[static_cast<std::size_t>(r)];
    ++st.iterations;
    ++out_.iterations_total;
    if (out_.iterations.size() < results::kMaxTraceIterations) {
      out_.iterations.push_back({r, sim_.now(), t, static_cast<std::int32_t>(b.sequences), static_cast<std::int32_t>(b.tokens)});
    }
    sim_.schedule_after(t, sim::Phase::kCompletion, [this, r, epoch] { end_iteration(r, epoch); });
  }

  void end_iteration(int r, std::uint64_t epoch) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    if (epoch != rep.epoch) return;  // the replica failed meanwhile
    rep.busy = false;
    auto& st = out_.replica_stats[static_cast<std::size_t>(r)];
    st.busy += sim_.now() - rep.iteration_start;
    std::vector<std::int64_t> finished;
    for (const auto& [id, n] : rep.batch) {
      Seq& q = seqs_[static_cast<std::size_t>(id)];
      const ServingRequest& req = requests_[static_cast<std::size_t>(id)];
      auto& rec = out_.requests[static_cast<std::size_t>(id)];
      // A prompt, or a preempted request's recomputation, rather than one decode step.
      if (!(q.generated > 0 && n == 1 && q.computed + 1 == q.tokens)) st.prefill_tokens += n;
      q.computed += n;
      if (q.computed < q.tokens) continue;  // a prompt chunk
      if (q.generated < req.output) {
        ++q.generated;
        ++q.tokens;
        ++st.output_tokens;
        if (q.generated == 1 && rec.first_token == kTimeNever) rec.first_token = sim_.now();
      }
      if (q.generated >= req.output) {
        if (req.output == 0) rec.first_token = sim_.now();
        finished.push_back(id);
      }
    }
    for (std::int64_t id : finished) {
      free_blocks(r, id);
      rep.running.erase(std::find(rep.running.begin(), rep.running.end(), id));
      ++st.completed;
      resolve(id, RequestStatus::kCompleted);
    }
    rep.batch.clear();
    request_start(r);
  }

  // ---- failures ----------------------------------------------------------------------------
  void fail(int r) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    if (!rep.up || done()) return;
    account_kv(r);
    rep.up = false;
    rep.down_since = sim_.now();
    ++rep.epoch;
    auto& st = out_.replica_stats[static_cast<std::size_t>(r)];
    ++st.failures;
    if (rep.busy) {
      st.busy += sim_.now() - rep.iteration_start;
      rep.busy = false;
    }
    std::vector<std::int64_t> held(rep.running.begin(), rep.running.end());
    held.insert(held.end(), rep.waiting.begin(), rep.waiting.end());
    rep.running.clear();
    rep.waiting.clear();
    rep.queued_blocks = 0;
    rep.free_blocks = rep.total_blocks;
    rep.batch.clear();
    std::sort(held.begin(), held.end());  // back to the router in arrival order
    for (std::int64_t id : held) {
      seqs_[static_cast<std::size_t>(id)] = Seq{};
      auto& rec = out_.requests[static_cast<std::size_t>(id)];
      rec.first_token = kTimeNever;
      if (s_.failures.policy == FailurePolicy::kDrop) {
        resolve(id, RequestStatus::kLost);
      } else {
        ++rec.retries;
        route(id);
      }
    }
  }

  void repair(int r) {
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    if (rep.up) return;
    rep.up = true;
    rep.kv_since = sim_.now();
    out_.replica_stats[static_cast<std::size_t>(r)].down += sim_.now() - rep.down_since;
    // Requests waiting at the router go out again, in arrival order.
    std::deque<std::int64_t> queued;
    queued.swap(router_queue_);
    for (std::int64_t id : queued) route(id);
    if (s_.failures.mtbf_per_gpu_hours > 0 && !done()) schedule_random_failure(r);
  }

  void schedule_random_failure(int r) {
    const double mean_s = s_.failures.mtbf_per_gpu_hours * 3600.0 / s_.tp;
    const double wait = -std::log1p(-failure_rng_.uniform()) * mean_s;
    const double horizon = to_seconds(kTimeHorizon) / 2 - to_seconds(sim_.now());
    if (wait >= horizon) return;  // beyond any simulated time
    Replica& rep = replicas_[static_cast<std::size_t>(r)];
    rep.failure_event = sim_.schedule_after(duration_from_seconds(wait), sim::Phase::kTopologyChange, [this, r] {
      fail(r);
      sim_.schedule_after(s_.failures.repair, sim::Phase::kTopologyChange, [this, r] { repair(r); });
    });
  }

  // ---- timeline ----------------------------------------------------------------------------
  void sample() {
    results::ServingSample x;
    x.time = sim_.now();
    x.waiting = static_cast<std::int64_t>(router_queue_.size());
    for (const Replica& rep : replicas_) {
      x.waiting += static_cast<std::int64_t>(rep.waiting.size());
      x.running += static_cast<std::int64_t>(rep.running.size());
      x.kv_blocks += rep.total_blocks - rep.free_blocks;
      x.replicas_up += rep.up ? 1 : 0;
    }
    out_.timeline.push_back(x);
    if (!done() && out_.timeline.size() < kMaxSamples) {
      sim_.schedule_after(sample_period_, sim::Phase::kStatistics, [this] { sample(); });
    }
  }

  const ServingScenario& s_;
  std::vector<std::vector<int>> event_replicas_;
  const wl::Model& model_;
  wl::InferenceShard shard_;
  ServingStepTime step_;
  results::ServingRun& out_;
  Rng rng_, failure_rng_;
  sim::Simulator sim_;
  std::vector<ServingRequest> requests_;
  std::vector<Seq> seqs_;
  std::vector<Replica> replicas_;
  std::deque<std::int64_t> router_queue_;
  Bytes kv_token_bytes_{0};
  std::int64_t swap_bytes_ = 0;  // tokens swapped out or in by the iteration being scheduled
  std::size_t next_round_robin_ = 0;
  std::int64_t resolved_ = 0;
  SimTime end_ = kTimeZero;
  Duration sample_period_{0};
};

}  // namespace

results::ServingRun simulate_serving(const ServingScenario& s) {
  const hw::Catalog& catalog = hw::Catalog::builtin();
  coll::Machine machine = coll::load_machine(s.cluster, s.cluster_overrides, catalog);
  std::shared_ptr<const cal::ProfileModel> profile;
  if (!s.profile.empty()) {
    profile = std::make_shared<const cal::ProfileModel>(cal::load_profile(s.profile));
    check_profile_gpu(*profile, machine.cluster, s.profile, s.file, "/profile");
    machine.protocol = calibrate_protocol(*profile, machine.protocol).protocol;
  }
  const wl::Model model = load_model_reference(s.model);
  if (model.family != wl::ModelFamily::kTransformer || model.transformer.head != wl::HeadKind::kLm) {
    throw ConfigError(s.file, "/model", "serving needs a decoder language model (a transformer with an lm head)");
  }
  const wl::TransformerConfig& c = model.transformer;
  if (c.heads % s.tp != 0) {
    throw ConfigError(s.file, "/replicas/tp", "tp " + std::to_string(s.tp) + " does not divide the model's " +
                                                  std::to_string(c.heads) + " attention heads");
  }
  const auto cluster_gpus = machine.cluster.gpus();
  const std::int64_t needed = static_cast<std::int64_t>(s.first_gpu) + static_cast<std::int64_t>(s.replicas) * s.tp;
  if (needed > static_cast<std::int64_t>(cluster_gpus.size())) {
    throw ConfigError(s.file, "/replicas/count", std::to_string(s.replicas) + " replicas of tp " + std::to_string(s.tp) +
                                                     " from GPU " + std::to_string(s.first_gpu) + " need " + std::to_string(needed) +
                                                     " GPUs; the cluster has " + std::to_string(cluster_gpus.size()));
  }
  std::vector<std::vector<topo::NodeId>> gpus(static_cast<std::size_t>(s.replicas));
  for (int r = 0; r < s.replicas; ++r) {
    for (int k = 0; k < s.tp; ++k) gpus[static_cast<std::size_t>(r)].push_back(cluster_gpus[static_cast<std::size_t>(s.first_gpu + r * s.tp + k)]);
  }
  std::vector<topo::NodeId> all;
  for (const auto& g : gpus) all.insert(all.end(), g.begin(), g.end());

  results::ServingRun out;
  out.scenario = s.name;
  out.cluster = machine.cluster.name();
  out.model = model.name;
  out.gpu = machine.cluster.gpu_spec(all[0]).name;
  out.replicas = s.replicas;
  out.tp = s.tp;
  out.precision = enum_name(wl::kPrecisionNames, s.precision);
  out.router = enum_name(kRouterPolicyNames, s.router);
  out.max_batch_tokens = s.scheduler.max_batch_tokens;
  out.max_batch_requests = s.scheduler.max_batch_requests;
  out.block_tokens = s.scheduler.block_tokens;
  out.chunked_prefill = s.scheduler.chunked_prefill;
  out.preemption = enum_name(kPreemptionNames, s.scheduler.preemption);
  out.kv_bytes_per_token = wl::kv_bytes_per_token(c, {s.tp, s.precision, s.kv_precision});
  out.weights_per_gpu = wl::inference_weight_bytes(model, {s.tp, s.precision, s.kv_precision});
  out.slo_ttft = s.slo.ttft;
  out.slo_tpot = s.slo.tpot;
  out.assumptions = training_assumptions(machine, catalog, all, out.precision, profile.get());
  out.warnings = machine.warnings;
  // The replicas each failure event names.
  std::vector<std::vector<int>> event_replicas;
  for (const FailureEvent& f : s.failures.events) {
    std::vector<int> hit;
    if (f.replica >= 0) hit.push_back(f.replica);
    if (f.gpu >= 0 && static_cast<std::size_t>(f.gpu) >= cluster_gpus.size()) {
      throw ConfigError(s.file, f.where + "/gpu", "GPU " + std::to_string(f.gpu) + " does not exist (the cluster has " +
                                                      std::to_string(cluster_gpus.size()) + ")");
    }
    for (int r = 0; r < s.replicas && f.replica < 0; ++r) {
      for (topo::NodeId g : gpus[static_cast<std::size_t>(r)]) {
        const bool named = f.gpu >= 0 ? g == cluster_gpus[static_cast<std::size_t>(f.gpu)]
                                      : machine.cluster.node(g).server == f.server;
        if (named) {
          hit.push_back(r);
          break;
        }
      }
    }
    if (f.server >= 0 && hit.empty()) {
      throw ConfigError(s.file, f.where + "/server", "no replica has a GPU in server " + std::to_string(f.server));
    }
    event_replicas.push_back(std::move(hit));  // a GPU no replica uses fails nothing
  }
  ServingSimulation sim(s, machine, model, profile, std::move(gpus), std::move(event_replicas), out);
  sim.run();
  return out;
}

}  // namespace cs::drv
