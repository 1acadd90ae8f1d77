// Raw MPI, the practical limit horde is measured against: the same bytes reduced by
// MPI_Allreduce in place, called from C++ with no runtime in between. Built as a shared
// library that the Python harness loads with ctypes, so raw MPI, horde and gloo are
// timed in one process, interleaved, on the same buffers.
//
// The library initializes MPI itself (before horde, which then uses it) and keeps a
// duplicate of MPI_COMM_WORLD for the harness's own barriers and reductions, so they
// never interleave with the collectives horde's background thread runs on the world.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

MPI_Comm bench_comm = MPI_COMM_NULL;

void ReduceInPlace(float* data, int64_t count, MPI_Comm comm) {
  MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
}

}  // namespace

extern "C" {

// Returns the thread level MPI provides; horde needs at least MPI_THREAD_SERIALIZED.
int bench_mpi_init() {
  // What horde sets when it initializes MPI itself (mpi_ops/mpi_context.cc): without it,
  // Open MPI's blocking calls in horde's background thread spin at full speed and take
  // the cores from training. Every contender, raw MPI included, runs with it.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_dup(MPI_COMM_WORLD, &bench_comm);
  return provided;
}

void bench_mpi_finalize() {
  MPI_Comm_free(&bench_comm);
  MPI_Finalize();
}

void bench_barrier() { MPI_Barrier(bench_comm); }

// The largest of every rank's value: a batch took as long as its slowest rank.
double bench_max(double value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, bench_comm);
  return value;
}

// `iters` allreduces of one buffer, as a latency/bandwidth sweep runs them.
void mpi_allreduce_loop(float* data, int64_t count, int iters) {
  for (int i = 0; i < iters; ++i) ReduceInPlace(data, count, MPI_COMM_WORLD);
}

// A gradient set reduced one tensor per call, in place.
void mpi_allreduce_each(float** tensors, const int64_t* counts, int n) {
  for (int i = 0; i < n; ++i) ReduceInPlace(tensors[i], counts[i], MPI_COMM_WORLD);
}

// The same bytes already packed in one buffer: one call, no copies (the lower bound
// for fusion).
void mpi_allreduce_packed(float* packed, int64_t count) {
  ReduceInPlace(packed, count, MPI_COMM_WORLD);
}

// Fusion done by hand: copy every tensor into the packed buffer, reduce it once, copy
// the results back (what a fusing runtime does, without its negotiation).
void mpi_allreduce_packed_copies(float** tensors, const int64_t* counts, int n, float* packed) {
  int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    std::memcpy(packed + at, tensors[i], counts[i] * sizeof(float));
    at += counts[i];
  }
  ReduceInPlace(packed, at, MPI_COMM_WORLD);
  at = 0;
  for (int i = 0; i < n; ++i) {
    std::memcpy(tensors[i], packed + at, counts[i] * sizeof(float));
    at += counts[i];
  }
}

}  // extern "C"
