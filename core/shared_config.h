#pragma once

#include "core/build_identity.h"
#include "core/config.h"
#include "core/transport.h"
#include "horde/status.h"

namespace horde {

// Makes every rank run with the same values of the settings whose difference between
// ranks would make them issue different collectives or decide differently in step:
//
//   HORDE_FUSION_THRESHOLD, HORDE_CACHE_CAPACITY  what the fast path fuses and where a
//       cached response sits, which every rank computes alone;
//   HORDE_CYCLE_TIME, HORDE_AUTOTUNE  autotune's choices index candidates built from the
//       configured values, and only ranks that autotune apply rank 0's choice;
//   HORDE_GPU_OPERATIONS, HORDE_HIERARCHICAL_ALLREDUCE  NCCL against MPI, one algorithm
//       against another;
//   HORDE_STALL_CHECK_TIME_SECONDS, HORDE_STALL_SHUTDOWN_TIME_SECONDS,
//       HORDE_STALL_CHECK_DISABLE  when each rank sends its waiting cached requests to
//       the coordinator, whose stall inspector must see them before a limit;
//   HORDE_DYNAMIC_PROCESS_SETS  a rank that refused add_process_set() would leave the
//       others inside a collective.
//
// Every rank takes rank 0's value. Where values differ, rank 0 logs (warning) each such
// variable with every rank's value, and every other rank whose value differs logs the
// same line. The other settings stay per rank: log level, and the timeline and autotune
// files and sample length, which only rank 0 uses.
//
// `parsed` is how this rank's environment parsed: a malformed value on any rank fails
// init() on every rank (naming the ranks and their errors), instead of leaving the
// others inside MPI. Before anything else, the ranks compare their builds: ranks with
// another version, wire format or GPU path fail init() on every rank, naming each rank's
// host and build. Collective over `transport`, before the runtime starts.
Status AgreeOnConfig(Transport* transport, const BuildIdentity& build, const Status& parsed,
                     Config* config);

}  // namespace horde
