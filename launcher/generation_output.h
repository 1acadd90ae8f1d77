#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace horde::launcher {

// How one rank ended, as mpirun or the rank's exit wrapper reports it.
struct RankEnd {
  int rank = 0;
  bool signaled = false;  // killed by signal `number`, else exited with code `number`
  int number = 0;
  int ExitCode() const { return signaled ? 128 + number : number; }  // as a shell says
  bool operator==(const RankEnd& other) const {
    return rank == other.rank && signaled == other.signaled && number == other.number;
  }
};

// What horderun learns from one generation's mpirun stderr, line by line: the rank that
// mpirun names as the first to fail, the first rank whose exit wrapper reports a failure
// (rank_exit.h), the ranks that horde's stall inspector reports as not submitting, and
// the newest commit that rank 0 announces ("horde elastic: generation G holds commit ID").
class GenerationOutput {
 public:
  void Scan(const std::string& line);

  std::optional<RankEnd> named_by_mpirun() const;
  const std::optional<RankEnd>& named_by_wrapper() const { return named_by_wrapper_; }
  // Every failure an exit wrapper reported since the last call, in order: while the
  // generation runs (in place, the job outlives a failed rank).
  std::vector<RankEnd> TakeWrapperReports() { return std::exchange(unreported_, {}); }
  const std::vector<int>& stalled_ranks() const { return stalled_ranks_; }
  const std::optional<std::string>& commit() const { return commit_; }
  // mpirun's own complaint, for a failure that names no rank: its first line that says
  // "error", else its last line that is not a frame of dashes.
  std::string Complaint() const { return error_line_.empty() ? last_line_ : error_line_; }

 private:
  std::optional<RankEnd> named_by_mpirun_;
  std::optional<int> process_name_rank_;  // "Process name:" seen, its "Exit code:" not yet
  std::optional<int> process_exit_code_;
  std::optional<RankEnd> named_by_wrapper_;
  std::vector<RankEnd> unreported_;
  std::vector<int> stalled_ranks_;  // sorted, each once
  std::optional<std::string> commit_;
  std::string error_line_;
  std::string last_line_;
};

// The rank mpirun names as the first to fail in one line of its stderr, e.g.
// "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
// or "  Process name: [[4711,1],2]".
std::optional<int> FailedRankIn(const std::string& line);

// The ranks a line of the stall inspector's report names as not having submitted an
// operation, e.g. "  ranks 1,3-5 have not submitted allreduce 'x' (waiting 3.0 s)".
std::vector<int> StalledRanksIn(const std::string& line);

// The commit rank 0 announces in `line`, anywhere in it (mpirun may prefix a tag).
std::optional<std::string> CommitIn(const std::string& line);

}  // namespace horde::launcher
