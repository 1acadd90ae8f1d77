#pragma once

#include <vector>

#include "horde/process_set.h"

namespace horde {

// Starts horde on every rank of the MPI job (collective). Safe to call again; after a
// shutdown it starts a new runtime. Throws horde::Error, e.g. for a malformed HORDE_*
// variable. Registers shutdown() to run at process exit.
void init();
// init(), then registers one process set per entry of `process_sets` (ranks of the job)
// and returns them, in order: every rank passes the same sets, members or not, e.g.
// auto sets = horde::init({{0, 1}, {2, 3}}). Needs no HORDE_DYNAMIC_PROCESS_SETS. Throws
// horde::Error (kInvalidArgument) for a bad set, and if horde is already initialized
// (with no sets to add, it returns none and does nothing, as init() does).
std::vector<ProcessSet> init(const std::vector<std::vector<int>>& process_sets);
// Stops horde on this rank; operations still pending fail with kAborted.
void shutdown();
bool is_initialized();

// This process's place in the job. Each throws horde::Error before init().
int size();
int rank();
int local_size();
int local_rank();
// The number of nodes, and this node's index among them.
int cross_size();
int cross_rank();
// True when every node runs the same number of ranks.
bool is_homogeneous();
// True when MPI provides MPI_THREAD_MULTIPLE, so the program may call MPI itself.
bool mpi_threads_supported();

}  // namespace horde
