// `mpirun -n K clustersim sweep ...`: the points handed out over MPI ranks, when clustersim is
// built with MPI (CMake finds OpenMPI: CLUSTERSIM_HAVE_MPI). Rank 0 reads the results file,
// hands each rank the next point as it asks (so uneven points balance), simulates --jobs points
// itself meanwhile, and writes every row, in point order, to the one file; the file is the one
// `--jobs 1` writes. Every rank reads the sweep file, so it must be visible to all of them.
#pragma once

#include "apps/cmd_sweep.h"

namespace cs::cli {

// The number of processes this one was launched with by mpirun (OpenMPI, MPICH, PMIx or Slurm's
// PMI environment), 1 when it was not.
int mpi_world_size();

// The sweep over MPI. Without MPI support a launch by mpirun is an error (every rank would
// otherwise write the same file).
int run_sweep_mpi(const SweepOptions& opts);

}  // namespace cs::cli
