#include "results/availability.h"

#include "results/summary.h"

namespace cs::results {
nlohmann::json availability_json(const AvailabilityReport& a) {
  const bool goal = a.effective_time_to_train_s.has_value() && a.effective_cost.has_value();
  const nlohmann::json none(nullptr);
  return {{"gpus", a.gpus},
          {"mtbf_per_gpu_h", to_hours(a.mtbf_per_gpu)},
          {"failures_from", a.failure_source},
          {"job_mtbf_s", to_seconds(a.job_mtbf)},
          {"job_mtbf_h", to_hours(a.job_mtbf)},
          {"checkpoint_bytes", a.checkpoint_bytes ? nlohmann::json(a.checkpoint_bytes->value()) : nlohmann::json(nullptr)},
          {"checkpoint_writers", a.checkpoint_bytes ? nlohmann::json(a.writers) : nlohmann::json(nullptr)},
          {"write_bandwidth_bytes_per_s", a.checkpoint_bytes ? nlohmann::json(a.write_bandwidth.value()) : nlohmann::json(nullptr)},
          {"save_time_s", to_seconds(a.save_time)},
          {"save_time_from", a.save_time_given ? "given" : "storage"},
          {"restart_time_s", to_seconds(a.restart_time)},
          {"interval_s", to_seconds(a.interval)},
          {"interval_from", a.interval_given ? "given" : "simulated_optimum"},
          {"optimal_interval_s", {{"young", to_seconds(a.young)},
                                  {"daly", to_seconds(a.daly)},
                                  {"availability_optimal", to_seconds(a.availability_optimal)},
                                  {"simulated", to_seconds(a.simulated_optimal)}}},
          {"ettr", a.ettr_simulated},
          {"ettr_standard_error", a.ettr_standard_error},
          {"ettr_first_order", a.ettr_first_order},
          {"ettr_renewal", a.ettr_renewal},
          {"simulated", {{"interruptions", a.simulated_interruptions},
                         {"time_s", to_seconds(a.simulated_time)},
                         {"lost_work_s", to_seconds(a.lost_work)},
                         {"seed", a.seed}}},
          {"effective_time_to_train_s", goal ? nlohmann::json(*a.effective_time_to_train_s) : none},
          {"effective_time_to_train_days", goal ? nlohmann::json(*a.effective_time_to_train_s / 86400) : none},
          {"effective_cost_usd", goal ? nlohmann::json(a.effective_cost->value()) : none},
          {"assumptions", assumptions_json(a.assumptions)}};
}

}  // namespace cs::results
