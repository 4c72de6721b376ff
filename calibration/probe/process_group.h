// The processes taking part in a calibration run: this process alone (every GPU of the node driven
// from one thread, communicators made with ncclCommInitAll), or, when built with MPI and started
// under mpirun with --mpi, one process per GPU across nodes (communicators made with
// ncclCommInitRank from a unique id broadcast over MPI, as nccl-tests does with MPI=1).
//
// The MPI path is compiled only where CMake finds MPI (CLUSTERSIM_HAVE_MPI); it has not been run
// (docs/calibration.md, "Limits").
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cs::probe {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual bool distributed() const = 0;  // MPI: one GPU per process
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The largest of every process's value.
  virtual double max(double value) = 0;
  // Rank 0's value, everywhere (stop decisions, so that all processes leave a loop together).
  virtual bool root_value(bool value) = 0;
  // Rank 0's bytes, everywhere.
  virtual void broadcast(void* data, std::size_t bytes) = 0;
  virtual void barrier() = 0;
  // Every process's string, in rank order, at rank 0 (empty elsewhere).
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // The first n processes as a group: a new group on them, nullptr on the others. Collective: every
  // process of this group calls it.
  virtual std::unique_ptr<ProcessGroup> first(int n) = 0;
  // The GPU this process drives in distributed mode (its rank on the node).
  virtual int local_rank() const = 0;
};

std::unique_ptr<ProcessGroup> single_process();

// MPI_Init and the world group. Throws ProbeError when the probe was built without MPI.
std::unique_ptr<ProcessGroup> mpi_world(int* argc, char*** argv);
bool mpi_available();

}  // namespace cs::probe
