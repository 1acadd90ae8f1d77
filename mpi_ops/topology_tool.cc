// horde-topology: the link probe and the planner from the command line.
//
//   horderun -H a:1,b:1,c:1 --probe-topology links.txt    (runs: horde-topology probe ...)
//   horde-topology probe [--output FILE]   under mpirun: measure, rank 0 writes the matrix
//   horde-topology plan FILE [MIB ...]     the trees planned over FILE, and for each size
//                                          (default 1 4 16 64 MiB) predicted times and
//                                          the bound, one line each:
//                                          size_bytes B ring_ms R rd_ms D trees_ms T
//                                          bound_ms X trees_chosen 0|1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_ops/host_name.h"
#include "mpi_ops/link_probe.h"
#include "mpi_ops/mpi_transport.h"
#include "topology/collective_cost.h"
#include "topology/link_bounds.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {
namespace {

constexpr int kUsageExitCode = 2;

int Usage(const std::string& why) {
  std::cerr << "horde-topology: " << why
            << "\nusage: horde-topology probe [--output FILE]    (under mpirun or horderun)"
               "\n       horde-topology plan FILE [MIB ...]\n";
  return kUsageExitCode;
}

int Probe(const std::vector<std::string>& args) {
  std::string output;
  if (args.size() == 2 && args[0] == "--output") {
    output = args[1];
  } else if (!args.empty()) {
    return Usage("probe takes --output FILE or nothing");
  }
  std::shared_ptr<MpiContext> context;
  LinkMatrix links;
  Status status = MpiContext::Create(&context);
  const auto start = std::chrono::steady_clock::now();
  if (status.ok()) status = LinkProbe(context->world()).Measure(&links);
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  std::vector<std::string> hosts;
  if (status.ok()) status = MpiTransport(context).GatherToCoordinator(HostName(), &hosts);
  if (!status.ok()) {
    std::cerr << "horde-topology: " << status.message() << "\n";
    return 1;
  }
  if (context->topology().rank != 0) return 0;
  // Rows named by host, so that a job maps them by name whatever order its hosts come in;
  // several ranks on one host have no row of their own to name.
  std::string note;
  if (std::set<std::string>(hosts.begin(), hosts.end()).size() == hosts.size()) {
    links.set_hosts(hosts);
  } else {
    note = "# rows are ranks, in order: some host runs several ranks\n";
  }
  const std::string text = "# measured by horde-topology probe\n" + note + links.Format();
  if (output.empty()) {
    std::cout << text;
  } else {
    std::ofstream file(output);
    if (!(file << text)) {
      std::cerr << "horde-topology: cannot write '" << output << "'\n";
      return 1;
    }
    std::cerr << "horde-topology: measured the links between " << links.size() << " ranks in "
              << spent.count() << " s; wrote them to " << output << "\n";
  }
  std::cerr << TopologyPlan(links).Describe();
  return 0;
}

int Plan(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("plan needs a link matrix file");
  std::ifstream file(args[0]);
  if (!file) return Usage("cannot read '" + args[0] + "'");
  std::stringstream text;
  text << file.rdbuf();
  LinkMatrix links;
  const Status parsed = LinkMatrix::Parse(text.str(), &links);
  if (!parsed.ok()) {
    std::cerr << "horde-topology: '" << args[0] << "': " << parsed.message() << "\n";
    return 1;
  }
  std::vector<double> mebibytes;
  for (size_t i = 1; i < args.size(); ++i) {
    char* end = nullptr;
    const double value = std::strtod(args[i].c_str(), &end);
    if (end == args[i].c_str() || *end != '\0' || !(value > 0)) {
      return Usage("sizes are positive numbers of MiB, got '" + args[i] + "'");
    }
    mebibytes.push_back(value);
  }
  if (mebibytes.empty()) mebibytes = {1, 4, 16, 64};
  const TopologyPlan plan(links);
  std::cout << plan.Describe();
  const double bound = AllreduceRateBound(links);
  for (double mib : mebibytes) {
    const int64_t bytes = static_cast<int64_t>(mib * (1 << 20)) / 4 * 4;
    std::printf(
        "size_bytes %lld ring_ms %.3f rd_ms %.3f trees_ms %.3f bound_ms %.3f "
        "trees_chosen %d\n",
        static_cast<long long>(bytes), 1e3 * RingAllreduceSeconds(links, bytes),
        1e3 * RecursiveDoublingAllreduceSeconds(links, bytes),
        plan.trees().empty() ? 0.0 : 1e3 * TreesAllreduceSeconds(links, plan.trees(), bytes, 4),
        bound > 0 ? 1e3 * bytes / bound : 0.0, plan.TreesForAllreduce(bytes, 4) ? 1 : 0);
  }
  return 0;
}

}  // namespace
}  // namespace mpi
}  // namespace horde

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return horde::mpi::Usage("say probe or plan");
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "probe") return horde::mpi::Probe(args);
  if (command == "plan") return horde::mpi::Plan(args);
  return horde::mpi::Usage("unknown command '" + command + "'");
}
