#include "topology/link_matrix_hosts.h"

#include <algorithm>

#include "core/joined_words.h"

namespace horde {

Status MatchLinkMatrixToRanks(const LinkMatrix& file, const std::vector<std::string>& rank_hosts,
                              LinkMatrix* out) {
  const int ranks = static_cast<int>(rank_hosts.size());
  if (file.hosts().empty()) {
    if (file.size() != ranks) {
      return Status::InvalidArgument("has links for " + std::to_string(file.size()) +
                                     " ranks; this job has " + std::to_string(ranks) +
                                     " (rows are ranks in order unless a 'hosts' line names them)");
    }
    *out = file;
    return Status::Ok();
  }
  std::vector<int> rows;
  for (int r = 0; r < ranks; ++r) {
    const auto& names = file.hosts();
    const auto found = std::find(names.begin(), names.end(), rank_hosts[r]);
    if (found == names.end()) {
      return Status::InvalidArgument(
          "names the hosts " + JoinedWords(names, ", ") + "; rank " + std::to_string(r) +
          " runs on '" + rank_hosts[r] +
          "', which it does not name (a matrix of other hosts: probe this job's "
          "with horderun --probe-topology)");
    }
    const auto earlier = std::find(rank_hosts.begin(), rank_hosts.begin() + r, rank_hosts[r]);
    if (earlier != rank_hosts.begin() + r) {
      return Status::InvalidArgument("describes one rank per host; ranks " +
                                     std::to_string(earlier - rank_hosts.begin()) + " and " +
                                     std::to_string(r) + " both run on '" + rank_hosts[r] + "'");
    }
    rows.push_back(static_cast<int>(found - names.begin()));
  }
  *out = file.Restricted(rows);
  return Status::Ok();
}

}  // namespace horde
