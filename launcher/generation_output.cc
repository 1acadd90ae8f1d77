#include "launcher/generation_output.h"

#include <algorithm>
#include <regex>

#include "launcher/elastic_exit_codes.h"
#include "launcher/rank_exit.h"

namespace horde::launcher {
namespace {

constexpr size_t kMaxLine = 1000;  // longer lines are no report of mpirun's or horde's

std::optional<int> Number(const std::string& line, const std::regex& pattern) {
  std::smatch match;
  if (line.size() > kMaxLine || !std::regex_search(line, match, pattern)) return std::nullopt;
  return std::stoi(match[1].str());
}

// "1,3-5" -> 1, 3, 4, 5; a range is capped so that a garbled line cannot make millions.
std::vector<int> RankList(const std::string& text) {
  static const std::regex kItem(R"((\d{1,9})(?:-(\d{1,9}))?)");
  std::vector<int> ranks;
  for (std::sregex_iterator it(text.begin(), text.end(), kItem), end; it != end; ++it) {
    int first = std::stoi((*it)[1].str());
    int last = (*it)[2].matched ? std::stoi((*it)[2].str()) : first;
    for (int rank = first; rank <= last && rank - first < 100000; ++rank) ranks.push_back(rank);
  }
  return ranks;
}

bool IsFrame(const std::string& line) {
  return line.find_first_not_of("- \t") == std::string::npos;
}

}  // namespace

std::optional<int> FailedRankIn(const std::string& line) {
  // Open MPI 4 and 5: "mpirun noticed that process rank 2 with PID 7 on node vm exited on
  // signal 9 (Killed)." (5.0's prterun breaks the line after "exited on"); a non-zero
  // exit: "Process name: [[4711,1],3]" (4.x), "Process name: [prterun-vm-7@1,3]" (5.x).
  static const std::regex kPatterns[] = {
      std::regex(R"(process rank (\d{1,9}) with PID \d+ on node \S+ exited on( signal|\s*$))"),
      std::regex(R"(Process name: \[\[\d+,\d+\],(\d{1,9})\])"),
      std::regex(R"(Process name: \[[^\s,\[\]]+,(\d{1,9})\])"),
  };
  for (const std::regex& pattern : kPatterns) {
    if (auto rank = Number(line, pattern)) return rank;
  }
  return std::nullopt;
}

std::vector<int> StalledRanksIn(const std::string& line) {
  // core/stall_inspector.cc; the rank list is core/rank_names.cc's, a host may follow it.
  static const std::regex kLine(
      R"(\branks? (\d{1,9}(?:[-,]\d{1,9})*)\b.*? ha(?:s|ve) not submitted )");
  std::smatch match;
  if (line.size() > kMaxLine || !std::regex_search(line, match, kLine)) return {};
  return RankList(match[1].str());
}

std::optional<std::string> CommitIn(const std::string& line) {
  static const std::regex kLine(R"(horde elastic: generation (\d+) holds commit (\S+))");
  std::smatch match;
  if (line.size() > kMaxLine || !std::regex_search(line, match, kLine)) return std::nullopt;
  return match[2].str();
}

void GenerationOutput::Scan(const std::string& line) {
  static const std::regex kSignal(R"(^\s*signal (\d{1,3}))");
  static const std::regex kExitCode(R"(Exit code:\s+(\d{1,3}))");
  static const std::regex kDaemonSignal(R"(exited on signal (\d{1,3}))");
  if (named_by_mpirun_) {
    if (named_by_mpirun_->signaled && named_by_mpirun_->number == 0) {  // 5.0's broken line
      if (auto number = Number(line, kSignal)) named_by_mpirun_->number = *number;
    }
  } else if (auto rank = FailedRankIn(line); rank && !process_exit_code_) {
    if (line.find("Process name:") != std::string::npos) {
      process_name_rank_ = rank;
    } else {
      named_by_mpirun_ = RankEnd{*rank, true, Number(line, kDaemonSignal).value_or(0)};
    }
  } else if (process_name_rank_ && !process_exit_code_) {
    process_exit_code_ = Number(line, kExitCode);
  }
  if (auto reported = RankEndInExitLine(line)) {
    if (!named_by_wrapper_) named_by_wrapper_ = reported;
    unreported_.push_back(*reported);
  }
  if (line.find("stall: these operations") != std::string::npos) stalled_ranks_.clear();
  for (int rank : StalledRanksIn(line)) {
    auto at = std::lower_bound(stalled_ranks_.begin(), stalled_ranks_.end(), rank);
    if (at == stalled_ranks_.end() || *at != rank) stalled_ranks_.insert(at, rank);
  }
  if (auto commit = CommitIn(line)) commit_ = commit;
  if (IsFrame(line) || line.size() > kMaxLine) return;
  last_line_ = line;
  if (error_line_.empty() && line.find("rror") != std::string::npos) error_line_ = line;
}

std::optional<RankEnd> GenerationOutput::named_by_mpirun() const {
  if (named_by_mpirun_) return named_by_mpirun_;
  if (!process_name_rank_ || !process_exit_code_) return std::nullopt;
  return RankEnd{*process_name_rank_, false, *process_exit_code_};
}

}  // namespace horde::launcher
