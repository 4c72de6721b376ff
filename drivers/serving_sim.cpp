#include "drivers/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include "core/errors.h"
#include "core/random.h"
#include "drivers/assumptions.h"
#include "drivers/calibrated_protocol.h"
#include "drivers/config_paths.h"
#include "drivers/request_stream.h"
#include "drivers/serving_router.h"
#include "drivers/serving_step_time.h"
#include "sim/collectives/collective_runner.h"
#include "sim/engine/simulator.h"
#include "workloads/inference_cost.h"

namespace cs::drv {
namespace {

// Why a failure needs ECMP on this cluster's fabric, and how to get it.
std::string adaptive_note(const topo::Cluster& cluster) {
  return cluster.routing_by_link_layer()
             ? " (this one is adaptive, the default of its InfiniBand NICs: set /fabric/routing=ecmp in the cluster to study it)"
             : " (this one is adaptive)";
}

using results::RequestStatus;

constexpr std::size_t kMaxSamples = 10000;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

enum class Role { kMixed, kDecode, kPrefill };

// A request's progress on the replica that holds it.
struct Seq {
  std::int64_t tokens = 0;     // known tokens: the prompt and what was generated so far
  std::int64_t computed = 0;   // tokens whose keys and values are in the cache
  std::int64_t generated = 0;
  std::int64_t blocks = 0;     // KV blocks held on `replica`
  std::int64_t swapped = 0;    // tokens whose cache waits in host memory (swap preemption)
  int replica = -1;
  // Disaggregated: while its cache crosses the network, the prefill replica it leaves and the
  // blocks it still holds there.
  int source = -1;
  std::int64_t source_blocks = 0;
  SimTime transfer_start = kTimeZero;
  std::uint32_t attempt = 0;   // bumped when a failure sends it back: stale transfers are ignored
  bool in_flight = false;      // in a batch still going through the replica's pipeline
};

// A batch under way: its requests and how many tokens each computes.
using Batch = std::vector<std::pair<std::int64_t, std::int64_t>>;

struct Replica {
  Role role = Role::kMixed;
  int pool = 0;   // 0: the scenario's replicas (mixed or decode); 1: the prefill pool
  int local = 0;  // index within its pool
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running;  // in admission order
  std::int64_t total_blocks = 0, free_blocks = 0;
  std::int64_t queued_blocks = 0;     // blocks the waiting requests will need (least_kv)
  bool up = true, start_pending = false;
  std::uint64_t epoch = 0;
  // Batches under way, oldest first (one at a time without pipeline stages; up to pp with them,
  // vLLM's virtual engines), and when each stage is free again.
  std::deque<Batch> batches;
  std::vector<SimTime> stage_free;
  SimTime down_since = kTimeZero, kv_since = kTimeZero;
  sim::EventHandle failure_event;
};

// One kind of replica: how it is sharded and timed.
struct Pool {
  wl::InferenceShard shard;
  int pp = 1;
  std::unique_ptr<ServingStepTime> step;
  Bytes kv_token_bytes{0};
  std::int64_t blocks = 0;
  std::vector<int> replicas;  // global indices, in pool order
  std::unique_ptr<ServingRouter> router;
};

class ServingSimulation {
 public:
  // `gpus[r]`: replica r's GPUs (the decode or mixed pool first, then the prefill pool);
  // `event_replicas[k]`: the replicas failure event k takes down.
  ServingSimulation(const ServingScenario& s, const coll::Machine& machine, const wl::Model& model,
                    std::shared_ptr<const cal::ProfileModel> profile, std::vector<std::vector<topo::NodeId>> gpus,
                    std::vector<std::vector<int>> event_replicas, std::vector<std::vector<topo::LinkId>> event_links,
                    results::ServingRun& out)
      : s_(s),
        machine_(machine),
        model_(model),
        gpus_(std::move(gpus)),
        event_replicas_(std::move(event_replicas)),
        event_links_(std::move(event_links)),
        out_(out),
        failure_rng_(Rng::derive(s.failures.seed, 12)) {
    requests_ = make_requests(s.requests);
    const bool disaggregated = s.prefill.has_value();
    add_pool(s.tp, s.pp, 0, s.replicas, disaggregated ? Role::kDecode : Role::kMixed, profile, "/replicas");
    if (disaggregated) {
      add_pool(s.prefill->tp, 1, s.replicas, s.prefill->count, Role::kPrefill, profile, "/disaggregation/prefill");
      layout_ = std::make_unique<coll::NetworkLayout>(machine);
      net_ = std::make_unique<net::FlowNetwork>(sim_, layout_->capacities());
      routers_.push_back(std::make_unique<topo::Router>(machine.cluster));
      runners_.push_back(std::make_unique<coll::CollectiveRunner>(sim_, *net_, *routers_.back(), *layout_));
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
      if (!event_links_[k].empty()) {
        sim_.schedule_at(f.at, sim::Phase::kTopologyChange, [this, k] { set_links(event_links_[k], true); });
        if (f.until) sim_.schedule_at(*f.until, sim::Phase::kTopologyChange, [this, k] { set_links(event_links_[k], false); });
      }
    }
    if (s_.failures.mtbf_per_gpu) {
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
      out_.replica_stats[r].kv_in_use_at_end = rep.total_blocks - rep.free_blocks;
    }
    if (net_) {
      const topo::Cluster& c = machine_.cluster;
      for (std::size_t l = 0; l < c.link_count(); ++l) {
        const topo::LinkId id{static_cast<std::uint32_t>(l)};
        const net::LinkStats st = net_->link_stats(id);
        const auto tier = static_cast<std::size_t>(c.link(id).tier);
        if (out_.transfer_bytes_by_tier.size() <= tier) out_.transfer_bytes_by_tier.resize(tier + 1);
        out_.transfer_bytes_by_tier[tier] += st.bytes;
        if (st.bytes.value() > 0) {
          out_.transfer_links.push_back({c.node(c.link(id).src).name, c.node(c.link(id).dst).name, static_cast<int>(tier), st.bytes});
        }
      }
    }
    out_.end = end_;
    out_.events = sim_.events_executed();
  }

 private:
  // ---- set-up ------------------------------------------------------------------------------
  void add_pool(int tp, int pp, int first, int count, Role role, const std::shared_ptr<const cal::ProfileModel>& profile,
                const std::string& where) {
    Pool p;
    p.pp = pp;
    p.shard = {tp, s_.precision, s_.kv_precision, s_.expert_parallel ? tp : 1, pp};
    // One TP group per replica and stage: group local * pp + stage.
    std::vector<std::vector<topo::NodeId>> groups;
    for (int k = 0; k < count; ++k) {
      const auto& all = gpus_[static_cast<std::size_t>(first + k)];
      for (int st = 0; st < pp; ++st) groups.emplace_back(all.begin() + st * tp, all.begin() + (st + 1) * tp);
    }
    p.step = std::make_unique<ServingStepTime>(machine_, model_, p.shard, std::move(groups), profile);
    p.kv_token_bytes = wl::kv_bytes_per_token(model_.transformer, p.shard);
    p.blocks = kv_blocks(p, where);
    p.router = std::make_unique<ServingRouter>(s_.router, s_.requests.seed + static_cast<std::uint64_t>(pools_.size()));
    for (int k = 0; k < count; ++k) {
      Replica rep;
      rep.role = role;
      rep.pool = static_cast<int>(pools_.size());
      rep.local = k;
      rep.total_blocks = rep.free_blocks = p.blocks;
      rep.stage_free.assign(static_cast<std::size_t>(pp), kTimeZero);
      p.replicas.push_back(static_cast<int>(replicas_.size()));
      replicas_.push_back(std::move(rep));
      results::ReplicaStats st;
      st.role = role == Role::kMixed ? "mixed" : role == Role::kDecode ? "decode" : "prefill";
      st.kv_blocks = p.blocks;
      const auto all = machine_.cluster.gpus();
      for (topo::NodeId g : gpus_[static_cast<std::size_t>(first + k)]) {
        st.gpus.push_back(static_cast<int>(std::find(all.begin(), all.end(), g) - all.begin()));
      }
      out_.replica_stats.push_back(std::move(st));
    }
    pools_.push_back(std::move(p));
  }

  // KV blocks per GPU: HBM x memory_fraction - weights / t - one iteration's activations.
  std::int64_t kv_blocks(const Pool& p, const std::string& where) const {
    const hw::GpuSpec& gpu = p.step->gpu();
    const double hbm = static_cast<double>(gpu.hbm_capacity.value()) * s_.scheduler.memory_fraction;
    const double weights = static_cast<double>(wl::inference_weight_bytes(model_, p.shard).value());
    // One iteration's intermediate activations: the widest block tensor (QKV or the MLP's gate
    // and up outputs) and the block's input and residual, 2 bytes each, for max_batch_tokens.
    const wl::TransformerConfig& c = model_.transformer;
    const std::int64_t width = std::max<std::int64_t>(c.is_moe() ? (c.top_k + c.shared_experts) * c.expert_ffn_hidden : c.ffn_hidden, c.hidden);
    const double activations = static_cast<double>(s_.scheduler.max_batch_tokens) * 2.0 *
                               (2.0 * static_cast<double>(width) / p.shard.tp + 2.0 * static_cast<double>(c.hidden));
    const double left = hbm - weights - activations;
    const double block = static_cast<double>(p.kv_token_bytes.value()) * static_cast<double>(s_.scheduler.block_tokens);
    if (left < block) {
      throw ConfigError(s_.file, where,
                        "the model does not fit: " + std::to_string(static_cast<std::int64_t>(weights / 1e9)) +
                            " GB of weights per GPU and the activations of max_batch_tokens leave no room for a KV block in " +
                            std::to_string(static_cast<std::int64_t>(hbm / 1e9)) + " GB (raise tp, lower max_batch_tokens)");
    }
    return static_cast<std::int64_t>(left / block);
  }

  std::int64_t blocks_for(std::int64_t tokens) const { return ceil_div(tokens, s_.scheduler.block_tokens); }
  Replica& replica(int r) { return replicas_[static_cast<std::size_t>(r)]; }
  Seq& seq(std::int64_t id) { return seqs_[static_cast<std::size_t>(id)]; }
  const ServingRequest& request(std::int64_t id) const { return requests_[static_cast<std::size_t>(id)]; }
  results::ReplicaStats& stats(int r) { return out_.replica_stats[static_cast<std::size_t>(r)]; }

  // ---- bookkeeping -------------------------------------------------------------------------
  void account_kv(int r) {
    Replica& rep = replica(r);
    const std::int64_t used = rep.total_blocks - rep.free_blocks;
    stats(r).kv_block_seconds += static_cast<double>(used) * to_seconds(sim_.now() - rep.kv_since);
    rep.kv_since = sim_.now();
  }
  void take_blocks(int r, std::int64_t id, std::int64_t n) {
    account_kv(r);
    Replica& rep = replica(r);
    rep.free_blocks -= n;
    seq(id).blocks += n;
    stats(r).kv_peak = std::max(stats(r).kv_peak, rep.total_blocks - rep.free_blocks);
  }
  void give_back(int r, std::int64_t blocks) {
    account_kv(r);
    replica(r).free_blocks += blocks;
  }
  void free_blocks(int r, std::int64_t id) {
    give_back(r, seq(id).blocks);
    seq(id).blocks = 0;
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
  // The pool's replicas as the router sees them.
  std::vector<ReplicaLoad> loads(const Pool& p) const {
    std::vector<ReplicaLoad> out;
    for (int r : p.replicas) {
      const Replica& x = replicas_[static_cast<std::size_t>(r)];
      out.push_back({x.up, static_cast<std::int64_t>(x.waiting.size() + x.running.size()),
                     x.total_blocks - x.free_blocks + x.queued_blocks});
    }
    return out;
  }

  void enqueue(int r, std::int64_t id) {
    Replica& rep = replica(r);
    rep.waiting.push_back(id);
    rep.queued_blocks += std::max<std::int64_t>(0, blocks_for(seq(id).tokens) - seq(id).blocks);
    request_start(r);
  }

  // A new request, or one a failure sent back: to the prefill pool when disaggregated.
  void route(std::int64_t id) {
    const ServingRequest& req = request(id);
    Pool& entry = pools_.back();
    const std::int64_t longest = req.prompt + req.output;
    // A request no replica could ever hold, or (without chunked prefill) batch, is rejected.
    if (blocks_for(longest) > pools_.front().blocks || blocks_for(req.prompt + 1) > entry.blocks ||
        (!s_.scheduler.chunked_prefill && longest > s_.scheduler.max_batch_tokens)) {
      resolve(id, RequestStatus::kRejected);
      return;
    }
    const int k = entry.router->pick(loads(entry), req.session);
    if (k < 0) {
      router_queue_.push_back(id);
      out_.router_peak_queue = std::max<std::int64_t>(out_.router_peak_queue, static_cast<std::int64_t>(router_queue_.size()));
      return;
    }
    const int r = entry.replicas[static_cast<std::size_t>(k)];
    Seq& q = seq(id);
    const std::uint32_t attempt = q.attempt;
    q = Seq{};
    q.attempt = attempt;
    q.tokens = req.prompt;
    q.replica = r;
    out_.requests[static_cast<std::size_t>(id)].replica = r;
    enqueue(r, id);
  }

  // ---- iterations --------------------------------------------------------------------------
  void request_start(int r) {
    Replica& rep = replica(r);
    if (rep.start_pending || !can_start(rep) || !rep.up) return;
    rep.start_pending = true;
    sim_.schedule_at(sim_.now(), sim::Phase::kDispatch, [this, r] {
      replica(r).start_pending = false;
      start_iteration(r);
    });
  }

  // Whether the replica can start a batch now: fewer batches under way than stages, the first
  // stage free.
  bool can_start(const Replica& rep) const {
    return rep.batches.size() < rep.stage_free.size() && rep.stage_free[0] <= sim_.now();
  }

  // Frees request `id`'s blocks and puts it back at the head of the queue.
  void preempt(int r, std::int64_t id) {
    Replica& rep = replica(r);
    Seq& q = seq(id);
    if (s_.scheduler.preemption == Preemption::kSwap) {
      q.swapped = q.computed;
      swap_bytes_ += q.computed;
    }
    q.computed = 0;
    free_blocks(r, id);
    rep.waiting.push_front(id);
    rep.queued_blocks += blocks_for(q.tokens);
    ++out_.requests[static_cast<std::size_t>(id)].preemptions;
    ++stats(r).preemptions;
  }

  void start_iteration(int r) {
    Replica& rep = replica(r);
    if (!can_start(rep) || !rep.up) return;
    const SchedulerSpec& sc = s_.scheduler;
    std::int64_t budget = sc.max_batch_tokens;
    Batch batch;
    swap_bytes_ = 0;
    bool preempted = false;
    // Running requests first, in admission order (those in a batch under way wait for it).
    for (std::size_t i = 0; i < rep.running.size() && budget > 0;) {
      const std::int64_t id = rep.running[i];
      Seq& q = seq(id);
      if (q.in_flight) {
        ++i;
        continue;
      }
      const std::int64_t want = q.tokens - q.computed;
      const std::int64_t n = sc.chunked_prefill ? std::min(want, budget) : want;
      if (n > budget) break;
      const std::int64_t need = blocks_for(q.computed + n) - q.blocks;
      bool self_preempted = false;
      while (need > rep.free_blocks) {
        // The most recently admitted request not under way (at worst this one).
        std::size_t j = rep.running.size() - 1;
        while (seq(rep.running[j]).in_flight) --j;
        const std::int64_t victim = rep.running[j];
        rep.running.erase(rep.running.begin() + static_cast<std::ptrdiff_t>(j));
        preempt(r, victim);
        preempted = true;
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;
      if (need > 0) take_blocks(r, id, need);
      batch.emplace_back(id, n);
      budget -= n;
      ++i;
    }
    // Then waiting requests, unless this iteration had to preempt.
    while (!preempted && !rep.waiting.empty() && budget > 0 &&
           static_cast<std::int64_t>(rep.running.size()) < sc.max_batch_requests) {
      const std::int64_t id = rep.waiting.front();
      Seq& q = seq(id);
      // Tokens already cached: swapped out to host memory (restored now), or received from a
      // prefill replica (blocks held already).
      const std::int64_t resume = q.swapped > 0 ? q.swapped : q.computed;
      const std::int64_t want = q.tokens - resume;
      const std::int64_t n = sc.chunked_prefill ? std::min(want, budget) : want;
      if (n > budget) break;
      // On demand (vLLM): the blocks of the tokens this iteration computes. Reserved (TensorRT-LLM's
      // GUARANTEED_NO_EVICT): the blocks of the whole request, prompt and every output token.
      const ServingRequest& req = request(id);
      const std::int64_t need =
          (sc.admission == KvAdmission::kReserve ? blocks_for(req.prompt + req.output) : blocks_for(resume + n)) - q.blocks;
      if (need > rep.free_blocks) break;
      rep.waiting.pop_front();
      rep.queued_blocks -= std::max<std::int64_t>(0, blocks_for(q.tokens) - q.blocks);
      if (q.swapped > 0) {
        swap_bytes_ += q.swapped;
        q.swapped = 0;
      }
      q.computed = resume;
      if (need > 0) take_blocks(r, id, need);
      rep.running.push_back(id);
      batch.emplace_back(id, n);
      budget -= n;
    }
    if (batch.empty()) return;

    wl::InferenceBatch b;
    for (const auto& [id, n] : batch) {
      Seq& q = seq(id);
      q.in_flight = true;
      const bool completes = q.computed + n == q.tokens;
      b.add(n, q.computed, completes && q.generated < request(id).output);
    }
    const SimTime end = run_stages(r, b);
    rep.batches.push_back(std::move(batch));
    const std::uint64_t epoch = rep.epoch;
    ++stats(r).iterations;
    ++out_.iterations_total;
    if (out_.iterations.size() < results::kMaxTraceIterations) {
      out_.iterations.push_back({r, sim_.now(), end - sim_.now(), static_cast<std::int32_t>(b.sequences), static_cast<std::int32_t>(b.tokens)});
    }
    sim_.schedule_at(end, sim::Phase::kCompletion, [this, r, epoch] { end_iteration(r, epoch); });
  }

  // Times batch `b` through replica r's stages from now: stage k starts when the batch has left
  // stage k-1 (and its activations arrived: each TP rank sends its 1/tp slice to the same rank of
  // the next stage, which all-gathers them, as vLLM's pipeline does) and when stage k is done
  // with the batch before; the LM head runs on the last stage. Returns when the batch is out.
  // With one stage: now + the iteration (and the swap traffic over PCIe).
  SimTime run_stages(int r, const wl::InferenceBatch& b) {
    Replica& rep = replica(r);
    const Pool& pool = pools_[static_cast<std::size_t>(rep.pool)];
    const int pp = pool.pp, layers = model_.transformer.layers;
    const int tp = pool.shard.tp;
    const auto& gpus = gpus_[static_cast<std::size_t>(r)];
    Duration swap{0};
    if (swap_bytes_ > 0) swap = transfer_time(pool.kv_token_bytes * swap_bytes_, pool.step->gpu().pcie_bandwidth);
    SimTime ready = sim_.now();
    Duration busy{0};
    for (int st = 0; st < pp; ++st) {
      const int first = st * layers / pp, count = (st + 1) * layers / pp - first;
      const int group = rep.local * pp + st;
      const Duration t = pool.step->step(group, b, first, count, st == pp - 1).total() + swap;
      if (st > 0) {
        const Bytes hidden{b.tokens * model_.transformer.hidden * 2};
        ready += pool.step->send_recv(gpus[static_cast<std::size_t>((st - 1) * tp)], gpus[static_cast<std::size_t>(st * tp)],
                                      Bytes{hidden.value() / tp}) +
                 pool.step->collective(CollectiveOp::kAllGather, group, hidden);
      }
      const SimTime start = std::max(ready, rep.stage_free[static_cast<std::size_t>(st)]);
      ready = start + t;
      rep.stage_free[static_cast<std::size_t>(st)] = ready;
      busy += t;
    }
    stats(r).busy += busy / pp;
    // The first stage takes the next batch when it is done with this one.
    if (pp > 1) {
      const std::uint64_t epoch = rep.epoch;
      sim_.schedule_at(rep.stage_free[0], sim::Phase::kDispatch, [this, r, epoch] {
        if (replica(r).epoch == epoch) request_start(r);
      });
    }
    return ready;
  }

  void end_iteration(int r, std::uint64_t epoch) {
    Replica& rep = replica(r);
    if (epoch != rep.epoch) return;  // the replica failed meanwhile
    auto& st = stats(r);
    const Batch batch = std::move(rep.batches.front());  // batches leave the pipeline in order
    rep.batches.pop_front();
    std::vector<std::int64_t> finished, handed_over;
    for (const auto& [id, n] : batch) {
      Seq& q = seq(id);
      q.in_flight = false;
      const ServingRequest& req = request(id);
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
      } else if (rep.role == Role::kPrefill) {
        handed_over.push_back(id);  // its first token is out: the rest is the decode pool's
      }
    }
    for (std::int64_t id : finished) {
      free_blocks(r, id);
      rep.running.erase(std::find(rep.running.begin(), rep.running.end(), id));
      ++st.completed;
      resolve(id, RequestStatus::kCompleted);
    }
    for (std::int64_t id : handed_over) {
      rep.running.erase(std::find(rep.running.begin(), rep.running.end(), id));
      seq(id).source = r;
      seq(id).source_blocks = seq(id).blocks;
      seq(id).blocks = 0;
      pending_transfers_.push_back(id);
    }
    if (rep.role == Role::kDecode) start_transfers();  // blocks may have come free
    if (!handed_over.empty()) start_transfers();
    request_start(r);
  }

  // ---- disaggregation: KV caches from the prefill pool to the decode pool -------------------
  // Starts the waiting transfers, in order, while some decode replica that is up has room for
  // the cache (blocks for the prompt and the first token); the prefill replica holds the cache
  // until then.
  void start_transfers() {
    Pool& decode = pools_.front();
    while (!pending_transfers_.empty()) {
      const std::int64_t id = pending_transfers_.front();
      Seq& q = seq(id);
      const std::int64_t need = blocks_for(q.computed);
      std::vector<ReplicaLoad> l = loads(decode);
      for (std::size_t k = 0; k < l.size(); ++k) {
        l[k].up = l[k].up && replicas_[static_cast<std::size_t>(decode.replicas[k])].free_blocks >= need;
      }
      const int k = decode.router->pick(l, request(id).session);
      if (k < 0) return;
      pending_transfers_.pop_front();
      const int d = decode.replicas[static_cast<std::size_t>(k)];
      q.replica = d;
      out_.requests[static_cast<std::size_t>(id)].replica = d;
      take_blocks(d, id, need);
      transferring_.insert(id);
      q.transfer_start = sim_.now();
      start_kv_flows(id, q.source, d);
    }
  }

  // The cache of `id`'s prompt, split over the prefill replica's TP GPUs by KV head, goes to the
  // decode GPUs that hold the same heads: GPU i of t_p sends to GPU j of t_d the share of heads
  // both hold, |[i/t_p, (i+1)/t_p) n [j/t_d, (j+1)/t_d)| of the whole, each as an NCCL send/receive
  // on the shared network (NCCL's net transport: rails, PXN; docs/network-model.md).
  void start_kv_flows(std::int64_t id, int from, int to) {
    const auto& src = gpus_[static_cast<std::size_t>(from)];
    const auto& dst = gpus_[static_cast<std::size_t>(to)];
    const double total = static_cast<double>(seq(id).computed) *
                         static_cast<double>(wl::kv_bytes_per_token(model_.transformer, {1, s_.precision, s_.kv_precision}).value());
    const double tp = static_cast<double>(src.size()), td = static_cast<double>(dst.size());
    auto remaining = std::make_shared<int>(0);
    const std::uint32_t attempt = seq(id).attempt;
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, Bytes>> parts;
    for (std::size_t i = 0; i < src.size(); ++i) {
      for (std::size_t j = 0; j < dst.size(); ++j) {
        const double lo = std::max(static_cast<double>(i) / tp, static_cast<double>(j) / td);
        const double hi = std::min(static_cast<double>(i + 1) / tp, static_cast<double>(j + 1) / td);
        if (hi <= lo) continue;
        parts.push_back({{i, j}, Bytes{std::max<std::int64_t>(1, std::llround((hi - lo) * total))}});
      }
    }
    *remaining = static_cast<int>(parts.size());
    for (const auto& [pair, bytes] : parts) {
      coll::CollectiveSpec spec;
      spec.op = CollectiveOp::kSendRecv;
      spec.size = bytes;
      spec.ranks = {src[pair.first], dst[pair.second]};
      spec.label = hash_combine(static_cast<std::uint64_t>(id), pair.first * 1024 + pair.second);
      auto schedule = coll::build_schedule(layout_->schedules(), spec, CollectiveAlgorithm::kDirect, nullptr);
      runners_.back()->start(spec, std::make_shared<const coll::Schedule>(std::move(*schedule)), CollectiveAlgorithm::kDirect, coll::Protocol::kSimple,
                     [this, id, attempt, remaining](const coll::CollectiveOutcome&) {
                       if (--*remaining == 0) end_transfer(id, attempt);
                     });
    }
  }

  void end_transfer(std::int64_t id, std::uint32_t attempt) {
    Seq& q = seq(id);
    if (q.attempt != attempt) return;  // a failure sent the request back meanwhile
    transferring_.erase(id);
    give_back(q.source, q.source_blocks);
    request_start(q.source);  // its blocks may admit more prompts
    q.source = -1;
    q.source_blocks = 0;
    out_.requests[static_cast<std::size_t>(id)].kv_transfer = sim_.now() - q.transfer_start;
    enqueue(q.replica, id);
  }

  // ---- failures ----------------------------------------------------------------------------
  // A cable fails (or comes back): transfers that start from now on are routed around the links
  // that are down (a new router over the same cluster); transfers already under way finish on
  // the path they took.
  void set_links(const std::vector<topo::LinkId>& links, bool down) {
    for (topo::LinkId l : links) {
      if (down) {
        links_down_.insert(l.value);
      } else if (auto it = links_down_.find(l.value); it != links_down_.end()) {
        links_down_.erase(it);
      }
    }
    std::vector<topo::LinkId> now;
    for (std::uint32_t l : links_down_) {
      if (now.empty() || now.back().value != l) now.push_back(topo::LinkId{l});
    }
    routers_.push_back(now.empty() ? std::make_unique<topo::Router>(machine_.cluster)
                                   : std::make_unique<topo::Router>(machine_.cluster, now));
    runners_.push_back(std::make_unique<coll::CollectiveRunner>(sim_, *net_, *routers_.back(), *layout_));
  }


  // Sends request `id` back to the router (retry) or loses it (drop), freeing what it holds.
  void send_back(std::int64_t id) {
    Seq& q = seq(id);
    if (q.source >= 0) give_back(q.source, q.source_blocks);
    if (q.replica >= 0 && q.blocks > 0) give_back(q.replica, q.blocks);
    transferring_.erase(id);
    const std::uint32_t attempt = q.attempt + 1;
    q = Seq{};
    q.attempt = attempt;
    auto& rec = out_.requests[static_cast<std::size_t>(id)];
    rec.first_token = kTimeNever;
    rec.kv_transfer = Duration{0};
    if (s_.failures.policy == FailurePolicy::kDrop) {
      resolve(id, RequestStatus::kLost);
    } else {
      ++rec.retries;
      route(id);
    }
  }

  void fail(int r) {
    Replica& rep = replica(r);
    if (!rep.up || done()) return;
    account_kv(r);
    rep.up = false;
    rep.down_since = sim_.now();
    ++rep.epoch;
    auto& st = stats(r);
    ++st.failures;
    rep.batches.clear();
    std::fill(rep.stage_free.begin(), rep.stage_free.end(), sim_.now());
    // Everything it holds: queued, running, and caches on their way from or to it.
    std::vector<std::int64_t> held(rep.running.begin(), rep.running.end());
    held.insert(held.end(), rep.waiting.begin(), rep.waiting.end());
    for (std::int64_t id : transferring_) {
      if (seq(id).source == r || seq(id).replica == r) held.push_back(id);
    }
    for (std::int64_t id : pending_transfers_) {
      if (seq(id).source == r) held.push_back(id);
    }
    std::erase_if(pending_transfers_, [&](std::int64_t id) { return seq(id).source == r; });
    rep.running.clear();
    rep.waiting.clear();
    rep.queued_blocks = 0;
    std::sort(held.begin(), held.end());  // back to the router in arrival order
    for (std::int64_t id : held) {
      if (seq(id).replica == r) seq(id).blocks = 0;  // this replica's blocks are gone with it
      if (seq(id).source == r) seq(id).source_blocks = 0;
      send_back(id);
    }
    rep.free_blocks = rep.total_blocks;
  }

  void repair(int r) {
    Replica& rep = replica(r);
    if (rep.up) return;
    rep.up = true;
    rep.kv_since = sim_.now();
    stats(r).down += sim_.now() - rep.down_since;
    // Requests waiting at the router go out again, in arrival order.
    std::deque<std::int64_t> queued;
    queued.swap(router_queue_);
    for (std::int64_t id : queued) route(id);
    if (rep.role == Role::kDecode) start_transfers();
    if (s_.failures.mtbf_per_gpu && !done()) schedule_random_failure(r);
  }

  void schedule_random_failure(int r) {
    const double gpus = static_cast<double>(gpus_[static_cast<std::size_t>(r)].size());
    const double mean_s = to_seconds(*s_.failures.mtbf_per_gpu) / gpus;
    const double wait = -std::log1p(-failure_rng_.uniform()) * mean_s;
    const double horizon = to_seconds(kTimeHorizon) / 2 - to_seconds(sim_.now());
    if (wait >= horizon) return;  // beyond any simulated time
    replica(r).failure_event = sim_.schedule_after(duration_from_seconds(wait), sim::Phase::kTopologyChange, [this, r] {
      fail(r);
      sim_.schedule_after(s_.failures.repair, sim::Phase::kTopologyChange, [this, r] { repair(r); });
    });
  }

  // ---- timeline ----------------------------------------------------------------------------
  void sample() {
    results::ServingSample x;
    x.time = sim_.now();
    x.waiting = static_cast<std::int64_t>(router_queue_.size() + pending_transfers_.size());
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
  const coll::Machine& machine_;
  const wl::Model& model_;
  std::vector<std::vector<topo::NodeId>> gpus_;
  std::vector<std::vector<int>> event_replicas_;
  std::vector<std::vector<topo::LinkId>> event_links_;  // the cable each link failure event names
  results::ServingRun& out_;
  Rng failure_rng_;
  sim::Simulator sim_;
  std::vector<Pool> pools_;  // [0]: the scenario's replicas; [1]: the prefill pool
  std::vector<ServingRequest> requests_;
  std::vector<Seq> seqs_;
  std::vector<Replica> replicas_;
  std::deque<std::int64_t> router_queue_;
  std::deque<std::int64_t> pending_transfers_;  // prefilled, waiting for room in the decode pool
  std::set<std::int64_t> transferring_;
  // The shared network of the KV transfers (disaggregated only).
  std::unique_ptr<coll::NetworkLayout> layout_;
  std::unique_ptr<net::FlowNetwork> net_;
  // The routing of new transfers is the last router's (routers avoid the links that are down);
  // earlier ones stay alive for the transfers that started on them.
  std::vector<std::unique_ptr<topo::Router>> routers_;
  std::vector<std::unique_ptr<coll::CollectiveRunner>> runners_;
  std::multiset<std::uint32_t> links_down_;
  std::int64_t swap_bytes_ = 0;  // tokens swapped out or in by the iteration being scheduled
  std::int64_t resolved_ = 0;
  SimTime end_ = kTimeZero;
  Duration sample_period_{0};
};

// Replica r's GPUs: the scenario's replicas from first_gpu, then the prefill pool.
std::vector<std::vector<topo::NodeId>> place_replicas(const ServingScenario& s, std::span<const topo::NodeId> cluster_gpus) {
  struct Range {
    int first, count, tp;
    const char* where;
  };
  std::vector<Range> ranges = {{s.first_gpu, s.replicas, s.tp * s.pp, "/replicas/count"}};
  if (s.prefill) {
    ranges.push_back({s.prefill->first_gpu.value_or(s.first_gpu + s.replicas * s.tp), s.prefill->count, s.prefill->tp,
                      "/disaggregation/prefill/count"});
  }
  std::vector<std::vector<topo::NodeId>> gpus;
  std::vector<bool> taken(cluster_gpus.size(), false);
  for (const Range& g : ranges) {
    const std::int64_t end = static_cast<std::int64_t>(g.first) + static_cast<std::int64_t>(g.count) * g.tp;
    if (end > static_cast<std::int64_t>(cluster_gpus.size())) {
      throw ConfigError(s.file, g.where, std::to_string(g.count) + " replicas of " + std::to_string(g.tp) + " GPUs from GPU " +
                                             std::to_string(g.first) + " need " + std::to_string(end) +
                                             " GPUs; the cluster has " + std::to_string(cluster_gpus.size()));
    }
    for (int r = 0; r < g.count; ++r) {
      std::vector<topo::NodeId> one;
      for (int k = 0; k < g.tp; ++k) {
        const auto i = static_cast<std::size_t>(g.first + r * g.tp + k);
        if (taken[i]) throw ConfigError(s.file, g.where, "the prefill and decode replicas overlap at GPU " + std::to_string(i));
        taken[i] = true;
        one.push_back(cluster_gpus[i]);
      }
      gpus.push_back(std::move(one));
    }
  }
  return gpus;
}

// The replicas each failure event names.
std::vector<std::vector<int>> failure_targets(const ServingScenario& s, const topo::Cluster& cluster,
                                              const std::vector<std::vector<topo::NodeId>>& gpus) {
  const auto cluster_gpus = cluster.gpus();
  std::vector<std::vector<int>> out;
  for (const FailureEvent& f : s.failures.events) {
    std::vector<int> hit;
    if (f.replica >= 0) hit.push_back(f.replica);
    if (f.gpu >= 0 && static_cast<std::size_t>(f.gpu) >= cluster_gpus.size()) {
      throw ConfigError(s.file, f.where + "/gpu", "GPU " + std::to_string(f.gpu) + " does not exist (the cluster has " +
                                                      std::to_string(cluster_gpus.size()) + ")");
    }
    int server = f.server;  // a switch inside a server fails that server's replicas
    if (!f.device.empty()) {
      const auto d = cluster.find_node(f.device);
      if (!d) throw ConfigError(s.file, f.where + "/switch", "no device \"" + f.device + "\" in the cluster");
      const topo::NodeKind kind = cluster.node(*d).kind;
      if (kind == topo::NodeKind::kGpu || kind == topo::NodeKind::kNic || kind == topo::NodeKind::kHost ||
          kind == topo::NodeKind::kStorage) {
        throw ConfigError(s.file, f.where + "/switch", "\"" + f.device + "\" is not a switch");
      }
      if (cluster.node(*d).server >= 0) server = cluster.node(*d).server;
    }
    for (std::size_t r = 0; r < gpus.size() && (f.gpu >= 0 || server >= 0); ++r) {
      for (topo::NodeId g : gpus[r]) {
        const bool named = f.gpu >= 0 ? g == cluster_gpus[static_cast<std::size_t>(f.gpu)] : cluster.node(g).server == server;
        if (named) {
          hit.push_back(static_cast<int>(r));
          break;
        }
      }
    }
    if (f.server >= 0 && hit.empty()) {
      throw ConfigError(s.file, f.where + "/server", "no replica has a GPU in server " + std::to_string(f.server));
    }
    if (!f.device.empty() && server >= 0 && hit.empty()) {
      throw ConfigError(s.file, f.where + "/switch", "no replica has a GPU in the server of \"" + f.device + "\"");
    }
    out.push_back(std::move(hit));  // a GPU no replica uses fails nothing
  }
  return out;
}

// The cable (both directions) each link failure event names; empty for other events.
std::vector<std::vector<topo::LinkId>> failed_links(const ServingScenario& s, const topo::Cluster& cluster) {
  std::vector<std::vector<topo::LinkId>> out;
  for (const FailureEvent& f : s.failures.events) {
    std::vector<topo::LinkId> cable;
    const auto fabric_switch = f.device.empty() ? std::nullopt : cluster.find_node(f.device);
    if (fabric_switch && cluster.node(*fabric_switch).server < 0) {
      // A spine or core switch: every link in and out of it. A leaf's failure would cut its
      // servers off, which the transfers' routing cannot go around: fail their servers instead.
      const std::string where = f.where + "/switch";
      if (!s.prefill) throw ConfigError(s.file, where, "a fabric switch failure changes the network the KV caches cross: it needs a disaggregated deployment");
      if (cluster.routing() != topo::Routing::kEcmp) throw ConfigError(s.file, where, "switch failures are modelled on fabrics with ECMP routing" + adaptive_note(cluster));
      for (const auto& links : {cluster.out_links(*fabric_switch), cluster.in_links(*fabric_switch)}) {
        for (topo::LinkId l : links) {
          if (cluster.link(l).tier < 2) {
            throw ConfigError(s.file, where, "\"" + f.device + "\" connects endpoints (a leaf): its failure cuts their servers off; fail those servers instead");
          }
          cable.push_back(l);
        }
      }
    }
    if (!f.link.empty()) {
      const std::string where = f.where + "/link";
      if (!s.prefill) {
        throw ConfigError(s.file, where, "a link failure changes the network the KV caches cross: it needs a disaggregated deployment");
      }
      if (cluster.routing() != topo::Routing::kEcmp) {
        throw ConfigError(s.file, where, "link failures are modelled on fabrics with ECMP routing" + adaptive_note(cluster));
      }
      std::optional<topo::NodeId> end[2];
      for (int i = 0; i < 2; ++i) {
        end[i] = cluster.find_node(f.link[static_cast<std::size_t>(i)]);
        if (!end[i]) throw ConfigError(s.file, where + "/" + std::to_string(i), "no device \"" + f.link[static_cast<std::size_t>(i)] + "\" in the cluster");
      }
      for (const auto& [a, b] : {std::pair{end[0], end[1]}, std::pair{end[1], end[0]}}) {
        if (auto l = cluster.find_link(*a, *b)) cable.push_back(*l);
      }
      if (cable.empty()) throw ConfigError(s.file, where, "no link joins \"" + f.link[0] + "\" and \"" + f.link[1] + "\"");
    }
    out.push_back(std::move(cable));
  }
  return out;
}

void check_tp(const ServingScenario& s, const wl::TransformerConfig& c, int tp, const char* where) {
  if (c.heads % tp != 0) {
    throw ConfigError(s.file, where, "tp " + std::to_string(tp) + " does not divide the model's " + std::to_string(c.heads) +
                                         " attention heads");
  }
}

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
  check_tp(s, c, s.tp, "/replicas/tp");
  if (s.pp > c.layers) {
    throw ConfigError(s.file, "/replicas/pp", std::to_string(s.pp) + " pipeline stages for " + std::to_string(c.layers) + " layers");
  }
  if (s.expert_parallel) {
    if (!c.is_moe()) throw ConfigError(s.file, "/replicas/expert_parallel", "the model has no experts to spread");
    for (const auto& [tp, where] : {std::pair{s.tp, "/replicas/tp"}, std::pair{s.prefill ? s.prefill->tp : s.tp, "/disaggregation/prefill/tp"}}) {
      if (tp < 2 || c.experts % tp != 0) {
        throw ConfigError(s.file, where, "expert parallelism spreads the " + std::to_string(c.experts) +
                                             " experts over the replica's tp GPUs: tp must be at least 2 and divide them");
      }
    }
  }
  if (s.prefill) check_tp(s, c, s.prefill->tp, "/disaggregation/prefill/tp");
  std::vector<std::vector<topo::NodeId>> gpus = place_replicas(s, machine.cluster.gpus());
  std::vector<std::vector<int>> targets = failure_targets(s, machine.cluster, gpus);
  std::vector<topo::NodeId> all;
  for (const auto& g : gpus) all.insert(all.end(), g.begin(), g.end());

  results::ServingRun out;
  out.scenario = s.name;
  out.cluster = machine.cluster.name();
  out.model = model.name;
  out.gpu = machine.cluster.gpu_spec(all[0]).name;
  out.replicas = s.replicas;
  out.tp = s.tp;
  out.pp = s.pp;
  if (s.prefill) {
    out.prefill_replicas = s.prefill->count;
    out.prefill_tp = s.prefill->tp;
  }
  out.precision = enum_name(wl::kPrecisionNames, s.precision);
  out.router = enum_name(kRouterPolicyNames, s.router);
  out.max_batch_tokens = s.scheduler.max_batch_tokens;
  out.max_batch_requests = s.scheduler.max_batch_requests;
  out.block_tokens = s.scheduler.block_tokens;
  out.chunked_prefill = s.scheduler.chunked_prefill;
  out.preemption = enum_name(kPreemptionNames, s.scheduler.preemption);
  out.kv_bytes_per_token = wl::kv_bytes_per_token(c, {s.tp, s.precision, s.kv_precision, 1, s.pp});
  out.weights_per_gpu = wl::inference_weight_bytes(model, {s.tp, s.precision, s.kv_precision, 1, s.pp});
  out.expert_parallel = s.expert_parallel;
  out.slo_ttft = s.slo.ttft;
  out.slo_tpot = s.slo.tpot;
  out.assumptions = training_assumptions(machine, catalog, all, out.precision, profile.get());
  out.warnings = machine.warnings;
  std::vector<std::vector<topo::LinkId>> links = failed_links(s, machine.cluster);
  ServingSimulation sim(s, machine, model, profile, std::move(gpus), std::move(targets), std::move(links), out);
  sim.run();
  return out;
}

}  // namespace cs::drv
