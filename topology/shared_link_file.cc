#include "topology/shared_link_file.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "core/rank_agreement.h"
#include "core/rank_names.h"
#include "topology/link_matrix_hosts.h"

namespace horde {
namespace {

Status ReadLinkFile(const std::string& path, std::string* text, LinkMatrix* links) {
  std::ifstream file(path);
  if (!file) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: cannot read the link matrix file '" + path +
                                   "' (expected auto, off, or a file written by horderun "
                                   "--probe-topology)");
  }
  std::stringstream read;
  read << file.rdbuf();
  *text = read.str();
  const Status parsed = LinkMatrix::Parse(*text, links);
  if (!parsed.ok()) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: '" + path + "': " + parsed.message());
  }
  return Status::Ok();
}

// FNV-1a: enough to tell copies apart, not meant to resist anyone.
uint64_t Digest(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// On rank 0, from every rank's "HOST DIGEST": "ok" and the hosts, one per line, or
// "error" and the message.
std::string Verdict(const std::vector<std::string>& reports, const std::string& path) {
  std::vector<std::string> hosts;
  std::vector<std::string> digests;
  for (const std::string& report : reports) {
    const size_t space = report.rfind(' ');
    hosts.push_back(report.substr(0, space));
    digests.push_back(report.substr(space + 1));
  }
  std::vector<int> unlike;
  std::string unlike_hosts;
  for (size_t r = 1; r < reports.size(); ++r) {
    if (digests[r] == digests[0]) continue;
    unlike.push_back(static_cast<int>(r));
    unlike_hosts += (unlike_hosts.empty() ? "" : ", ") + hosts[r];
  }
  if (!unlike.empty()) {
    return "error\nHORDE_TOPOLOGY: the copies of the link matrix file '" + path +
           "' differ between hosts: " + RankNames().List(unlike) + " (on " + unlike_hosts +
           ") read another matrix than rank 0 (on " + hosts[0] +
           "); every host needs the same file (horderun --probe-topology writes one)";
  }
  std::string verdict = "ok";
  for (const std::string& host : hosts) verdict += "\n" + host;
  return verdict;
}

}  // namespace

Status ReadSharedLinkFile(Transport* transport, const std::string& path, const std::string& host,
                          LinkMatrix* links) {
  std::string text;
  LinkMatrix parsed;
  HORDE_RETURN_IF_ERROR(
      AgreeAllSucceeded(transport, ReadLinkFile(path, &text, &parsed), "topology planning"));
  std::vector<std::string> reports;
  HORDE_RETURN_IF_ERROR(
      transport->GatherToCoordinator(host + " " + std::to_string(Digest(text)), &reports));
  std::string verdict;
  if (transport->rank() == 0) verdict = Verdict(reports, path);
  HORDE_RETURN_IF_ERROR(transport->BroadcastFromCoordinator(&verdict));
  std::istringstream lines(verdict);
  std::string first;
  std::getline(lines, first);
  if (first != "ok") return Status::InvalidArgument(verdict.substr(first.size() + 1));
  std::vector<std::string> hosts;
  for (std::string line; std::getline(lines, line);) hosts.push_back(line);
  const Status matched = MatchLinkMatrixToJob(parsed, hosts, links);
  if (!matched.ok()) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: '" + path + "' " + matched.message());
  }
  return Status::Ok();
}

}  // namespace horde
