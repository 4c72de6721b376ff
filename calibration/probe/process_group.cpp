#include "calibration/probe/process_group.h"

#include "calibration/probe/cuda_check.h"

#ifdef CLUSTERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace cs::probe {

namespace {

class SingleProcess final : public ProcessGroup {
 public:
  bool distributed() const override { return false; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  double max(double value) override { return value; }
  bool root_value(bool value) override { return value; }
  void broadcast(void*, std::size_t) override {}
  void barrier() override {}
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  std::unique_ptr<ProcessGroup> first(int) override { return std::make_unique<SingleProcess>(); }
  int local_rank() const override { return 0; }
};

#ifdef CLUSTERSIM_HAVE_MPI

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw ProbeError(std::string(what) + " failed: " + text, true);
}

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup(MPI_Comm comm, bool owned, int local_rank) : comm_(comm), owned_(owned), local_rank_(local_rank) {
    mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiGroup() override {
    if (owned_) MPI_Comm_free(&comm_);
  }
  bool distributed() const override { return true; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double max(double value) override {
    double out = value;
    mpi_check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
    return out;
  }
  bool root_value(bool value) override {
    int v = value ? 1 : 0;
    mpi_check(MPI_Bcast(&v, 1, MPI_INT, 0, comm_), "MPI_Bcast");
    return v != 0;
  }
  void broadcast(void* data, std::size_t bytes) override {
    mpi_check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, comm_), "MPI_Bcast");
  }
  void barrier() override { mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }
  std::vector<std::string> gather(const std::string& mine) override {
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(size_));
    mpi_check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm_), "MPI_Gather");
    std::vector<int> offsets(static_cast<std::size_t>(size_), 0);
    int total = 0;
    for (int i = 0; i < size_; ++i) {
      offsets[static_cast<std::size_t>(i)] = total;
      total += lens[static_cast<std::size_t>(i)];
    }
    std::string all(static_cast<std::size_t>(rank_ == 0 ? total : 0), '\0');
    mpi_check(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, comm_),
              "MPI_Gatherv");
    std::vector<std::string> out;
    if (rank_ != 0) return out;
    for (int i = 0; i < size_; ++i) {
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]),
                               static_cast<std::size_t>(lens[static_cast<std::size_t>(i)])));
    }
    return out;
  }
  std::unique_ptr<ProcessGroup> first(int n) override {
    MPI_Comm sub = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split(comm_, rank_ < n ? 0 : MPI_UNDEFINED, rank_, &sub), "MPI_Comm_split");
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiGroup>(sub, true, local_rank_);
  }
  int local_rank() const override { return local_rank_; }

 private:
  MPI_Comm comm_;
  bool owned_;
  int local_rank_;
  int rank_ = 0, size_ = 1;
};

// Finalises MPI at exit of the run (after every group is gone).
struct MpiSession {
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

#endif

}  // namespace

std::unique_ptr<ProcessGroup> single_process() { return std::make_unique<SingleProcess>(); }

bool mpi_available() {
#ifdef CLUSTERSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<ProcessGroup> mpi_world(int* argc, char*** argv) {
#ifdef CLUSTERSIM_HAVE_MPI
  static MpiSession session;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) mpi_check(MPI_Init(argc, argv), "MPI_Init");
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int local = 0;
  mpi_check(MPI_Comm_rank(node, &local), "MPI_Comm_rank");
  MPI_Comm_free(&node);
  return std::make_unique<MpiGroup>(MPI_COMM_WORLD, false, local);
#else
  (void)argc;
  (void)argv;
  throw ProbeError("clustersim-calibrate was built without MPI: --mpi is not available");
#endif
}

}  // namespace cs::probe
