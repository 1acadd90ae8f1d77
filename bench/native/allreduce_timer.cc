// A diagnostic, not part of run.sh: preloaded into an MPI program, it times every
// MPI_Allreduce of at least 1 KiB (through MPI's profiling interface) and prints, per
// rank at MPI_Finalize, how many there were, their bytes and the seconds spent inside
// them. It tells time inside MPI from time around it (negotiation, copies, waiting):
//   scripts/mpirun.sh -np 2 -x LD_PRELOAD=$PWD/build/bench/liballreduce_timer.so ...
#include <mpi.h>

#include <atomic>
#include <cstdio>

namespace {

constexpr int kMinBytes = 1024;  // leaves out the harness's own 8-byte reductions

std::atomic<long> calls{0};
std::atomic<long> bytes{0};
std::atomic<long> nanoseconds{0};

}  // namespace

extern "C" int MPI_Allreduce(const void* send, void* receive, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  const double start = PMPI_Wtime();
  const int result = PMPI_Allreduce(send, receive, count, type, op, comm);
  int size = 0;
  PMPI_Type_size(type, &size);
  if (static_cast<long>(count) * size >= kMinBytes) {
    ++calls;
    bytes += static_cast<long>(count) * size;
    nanoseconds += static_cast<long>((PMPI_Wtime() - start) * 1e9);
  }
  return result;
}

extern "C" int MPI_Finalize() {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr,
               "allreduce_timer: rank %d: %ld MPI_Allreduce calls, %.1f MB, %.3f s inside\n", rank,
               calls.load(), bytes.load() / 1e6, nanoseconds.load() / 1e9);
  return PMPI_Finalize();
}
