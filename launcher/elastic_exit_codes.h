#pragma once

namespace horde::launcher {

// The exit codes by which an elastic rank tells horderun what to do next (the other
// half is python/horde/common/elastic). Neither is a failure of the rank's host.

// The job must re-form: hosts changed (HostsUpdatedInterrupt), or a collective failed
// because another rank died or hung (HordeInternalError). The rank committed first.
constexpr int kResetExitCode = 75;

// HORDE_ELASTIC_EXPECT_COMMIT named a commit, and no rank of the new generation holds
// one of this job: every host that held one is gone. Restarting would silently start
// the training over, so horderun stops the job.
constexpr int kCommitLostExitCode = 76;

}  // namespace horde::launcher
