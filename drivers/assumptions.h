// The values a training run's prediction rests on that are assumed or fitted rather than read
// from a datasheet, derived or measured (SourcedFact::is_judgement): the run lists them
// (summary.json "assumptions", the run table), so that a user sees when a number extrapolates,
// e.g. an H100's GEMM efficiency assumed equal to the A100's.
//
// Which values a run rests on: per GPU model of the job, its roofline values (gemm, attention,
// memory, kernel_launch, overlap_slowdown; those a calibration profile measured are not
// assumptions); per link class present in the cluster, its protocol values (efficiency,
// step_latency, ll_step_latency) and wire latency; the collective launch latency; each NIC
// model's latency; each reducing NVSwitch generation's reduction rate. Values a cluster file or an
// override set are the user's and are not listed.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "calibration/profile_model.h"
#include "core/sourced_value.h"
#include "hardware/catalog.h"
#include "sim/collectives/machine.h"

namespace cs::drv {

// `job_gpus`: the GPUs of the job (rank order); `dtype`: the precision of its matrix work;
// `profile`: the calibration profile, or null. In a stable order: GPU models, link classes in
// enum order, the launch latency, NICs and NVSwitch generations by name.
std::vector<SourcedFact> training_assumptions(const coll::Machine& machine, const hw::Catalog& catalog,
                                              std::span<const topo::NodeId> job_gpus, const std::string& dtype,
                                              const cal::ProfileModel* profile);

}  // namespace cs::drv
