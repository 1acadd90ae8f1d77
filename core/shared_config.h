#pragma once

#include "core/build_identity.h"
#include "core/config.h"
#include "core/transport.h"
#include "horde/status.h"

namespace horde {

// Makes every rank run with the same values of the shared settings (SettingScope::kShared
// in core/settings.cc, which says for each why): settings whose difference between ranks
// would make them issue different collectives or decide differently in step.
//
// Every rank takes rank 0's value. Where values differ, rank 0 logs (warning) each such
// variable with every rank's value, and every other rank whose value differs logs the
// same line. The other settings stay per rank.
//
// `parsed` is how this rank's environment parsed: a malformed value on any rank fails
// init() on every rank (naming the ranks and their errors), instead of leaving the
// others inside MPI. Before anything else, the ranks compare their builds: ranks with
// another version, wire format or GPU path fail init() on every rank, naming each rank's
// host and build. Collective over `transport`, before the runtime starts.
Status AgreeOnConfig(Transport* transport, const BuildIdentity& build, const Status& parsed,
                     Config* config);

}  // namespace horde
