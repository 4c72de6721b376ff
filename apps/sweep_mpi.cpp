#include "apps/sweep_mpi.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <chrono>
#include <memory>
#include <thread>

#include "apps/cli_common.h"
#include "core/errors.h"

#ifdef CLUSTERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace cs::cli {

int mpi_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

#ifndef CLUSTERSIM_HAVE_MPI

int run_sweep_mpi(const SweepOptions&) {
  throw ConfigError("", "mpirun",
                    "this clustersim was built without MPI (CMake found no MPI; install libopenmpi-dev and rebuild), so it cannot "
                    "share a sweep between ranks; run it without mpirun (--jobs N), or split it with --shard I/N");
}

#else

namespace {

constexpr int kTagRequest = 1;  // worker -> 0: "next please", with the previous row if any
constexpr int kTagAssign = 2;   // 0 -> worker: row k and its point, or k = -1: no more

// MPI_Init_thread / MPI_Finalize around the sweep; only the main thread calls MPI.
struct MpiSession {
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  ~MpiSession() { MPI_Finalize(); }
  int rank = 0, size = 1;
};

// Whether every rank got this far (false on every rank if one failed).
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// A finished row: k (8 bytes), status (1 byte), the row's text.
std::string pack_row(std::int64_t k, results::PointStatus status, const std::string& row) {
  std::string msg(9, '\0');
  std::memcpy(msg.data(), &k, 8);
  msg[8] = static_cast<char>(status);
  return msg + row;
}

int serve(const SweepOptions& o, const SweepSetup& setup, const MpiSession& mpi) {
  std::unique_ptr<drv::SweepResultsFile> out;
  std::exception_ptr failure;
  try {
    out = open_results(o, setup);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!all_ok(!failure)) std::rethrow_exception(failure);
  const bool progress = stderr_is_terminal();
  drv::SweepWork work(setup.sweep, setup.format, setup.todo, *out, sweep_progress(progress));
  std::exception_ptr local_failure;  // the local threads' (a write that failed)
  std::thread local([&] {
    try {
      work.run(o.jobs);
    } catch (...) {
      local_failure = std::current_exception();
    }
  });
  int active = mpi.size - 1;
  std::string buffer;
  while (active > 0) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // do not spin a core the workers need
      continue;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    buffer.resize(static_cast<std::size_t>(count));
    MPI_Recv(buffer.data(), count, MPI_CHAR, st.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (buffer.size() >= 9 && !failure) {
      std::int64_t k = 0;
      std::memcpy(&k, buffer.data(), 8);
      try {
        work.finish(static_cast<std::size_t>(k), static_cast<results::PointStatus>(buffer[8]), buffer.substr(9));
      } catch (...) {
        failure = std::current_exception();
      }
    }
    std::int64_t assign[2] = {-1, -1};
    if (!failure) {
      if (auto k = work.take()) assign[0] = static_cast<std::int64_t>(*k), assign[1] = static_cast<std::int64_t>(work.point_of(*k));
    }
    if (assign[0] < 0) --active;
    MPI_Send(assign, 2, MPI_INT64_T, st.MPI_SOURCE, kTagAssign, MPI_COMM_WORLD);
  }
  local.join();
  if (failure) std::rethrow_exception(failure);
  if (local_failure) std::rethrow_exception(local_failure);
  return finish_sweep(o, setup, work.counts(), progress);
}

void work_for_rank0(const SweepSetup& setup) {
  std::string msg;  // empty: the first request
  while (true) {
    MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest, MPI_COMM_WORLD);
    std::int64_t assign[2];
    MPI_Recv(assign, 2, MPI_INT64_T, 0, kTagAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (assign[0] < 0) return;
    const drv::PointResult r = drv::run_sweep_point(setup.sweep, static_cast<std::size_t>(assign[1]), setup.format);
    msg = pack_row(assign[0], r.status, r.row);
  }
}

}  // namespace

int run_sweep_mpi(const SweepOptions& o) {
  MpiSession mpi;
  if (o.dry_run) throw ConfigError("", "--dry-run", "lists the points on one process; run it without mpirun");
  // Every rank reads the sweep; rank 0 reports what is wrong with it, the others exit quietly.
  SweepSetup setup;
  std::exception_ptr failure;
  try {
    setup = prepare_sweep(o);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!all_ok(!failure)) {
    if (mpi.rank == 0 && failure) std::rethrow_exception(failure);
    if (mpi.rank == 0) throw ConfigError("", "mpirun", "another rank could not read the sweep file " + o.sweep + " (is it visible to every rank?)");
    return 2;
  }
  if (mpi.rank == 0) return serve(o, setup, mpi);
  if (!all_ok(true)) return 2;  // rank 0 could not open the results file
  work_for_rank0(setup);
  return 0;
}

#endif

}  // namespace cs::cli
