#include "topology/link_matrix_hosts.h"

#include <algorithm>
#include <map>

#include "core/joined_words.h"

namespace horde {
namespace {

// The job's hosts in the order of their first ranks, and each host's ranks in rank order.
struct JobHosts {
  std::vector<std::string> names;
  std::map<std::string, std::vector<int>> ranks;
};

JobHosts HostsOf(const std::vector<std::string>& rank_hosts) {
  JobHosts hosts;
  for (size_t r = 0; r < rank_hosts.size(); ++r) {
    std::vector<int>& ranks = hosts.ranks[rank_hosts[r]];
    if (ranks.empty()) hosts.names.push_back(rank_hosts[r]);
    ranks.push_back(static_cast<int>(r));
  }
  return hosts;
}

// With several ranks a host, the hosts' k-th ranks form one communicator each, and every
// one must list the hosts in the same order for the plan's trees to join the same hosts.
Status CheckSeveralRanksEach(const JobHosts& hosts) {
  const std::string& first = hosts.names[0];
  const size_t each = hosts.ranks.at(first).size();
  for (const std::string& host : hosts.names) {
    if (hosts.ranks.at(host).size() != each) {
      return Status::InvalidArgument(
          "plans trees between hosts that run as many ranks each; this job runs " +
          std::to_string(each) + " on '" + first + "' and " +
          std::to_string(hosts.ranks.at(host).size()) + " on '" + host +
          "' (HORDE_TOPOLOGY=off keeps collectives on MPI)");
    }
  }
  for (size_t k = 1; k < each; ++k) {
    for (size_t h = 1; h < hosts.names.size(); ++h) {
      const int earlier = hosts.ranks.at(hosts.names[h - 1])[k];
      const int later = hosts.ranks.at(hosts.names[h])[k];
      if (earlier > later) {
        return Status::InvalidArgument(
            "needs the hosts' k-th ranks in the order of their first ranks; rank " +
            std::to_string(later) + " on '" + hosts.names[h] + "' comes before rank " +
            std::to_string(earlier) + " on '" + hosts.names[h - 1] +
            "' (place ranks by host or by slot, or set HORDE_TOPOLOGY=off)");
      }
    }
  }
  return Status::Ok();
}

// A matrix without names: rows are ranks in order, or, with several ranks a host, hosts in
// the order of their first ranks.
Status MatchUnnamed(const LinkMatrix& file, const JobHosts& hosts, int ranks, LinkMatrix* out) {
  const int host_count = static_cast<int>(hosts.names.size());
  if (file.size() == host_count && host_count < ranks) {
    HORDE_RETURN_IF_ERROR(CheckSeveralRanksEach(hosts));
  } else if (file.size() != ranks) {
    if (host_count == ranks) {
      return Status::InvalidArgument("has links for " + std::to_string(file.size()) +
                                     " ranks; this job has " + std::to_string(ranks) +
                                     " (rows are ranks in order unless a 'hosts' line names them)");
    }
    return Status::InvalidArgument(
        "has links for " + std::to_string(file.size()) + " ranks; this job has " +
        std::to_string(ranks) + " ranks on " + std::to_string(host_count) +
        (host_count == 1 ? " host" : " hosts") +
        " (rows are ranks in order, or hosts in the order of their first ranks, unless a "
        "'hosts' line names them)");
  }
  *out = file;
  return Status::Ok();
}

}  // namespace

Status MatchLinkMatrixToJob(const LinkMatrix& file, const std::vector<std::string>& rank_hosts,
                            LinkMatrix* out) {
  const JobHosts hosts = HostsOf(rank_hosts);
  if (file.hosts().empty()) {
    return MatchUnnamed(file, hosts, static_cast<int>(rank_hosts.size()), out);
  }
  const bool per_host = hosts.names.size() < rank_hosts.size();
  if (per_host) HORDE_RETURN_IF_ERROR(CheckSeveralRanksEach(hosts));
  const std::vector<std::string>& wanted = per_host ? hosts.names : rank_hosts;
  std::vector<int> rows;
  for (const std::string& host : wanted) {
    const auto& names = file.hosts();
    const auto found = std::find(names.begin(), names.end(), host);
    if (found == names.end()) {
      return Status::InvalidArgument(
          "names the hosts " + JoinedWords(names, ", ") + "; rank " +
          std::to_string(hosts.ranks.at(host)[0]) + " runs on '" + host +
          "', which it does not name (a matrix of other hosts: probe this job's "
          "with horderun --probe-topology)");
    }
    rows.push_back(static_cast<int>(found - names.begin()));
  }
  *out = file.Restricted(rows);
  return Status::Ok();
}

}  // namespace horde
