#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/host_list.h"

namespace horde::launcher {

// Expands a Slurm node list: "node[01-04],login" gives node01 to node04 and login;
// "a[1,3-5],b" gives a1 a3 a4 a5 b. Zero padding follows the range's first number, and
// several brackets in one name multiply ("r[1-2]n[1-2]"). Throws std::invalid_argument.
std::vector<std::string> ExpandNodeList(const std::string& list);

// Expands SLURM_TASKS_PER_NODE's compressed counts: "2(x3),1" gives 2 2 2 1.
// Throws std::invalid_argument.
std::vector<int> ExpandTasksPerNode(const std::string& counts);

// Inside a Slurm allocation (SLURM_JOB_NODELIST is set), its hosts with
// SLURM_TASKS_PER_NODE slots each; outside one, nullopt. Throws UsageError when the
// variables are malformed or disagree.
std::optional<std::vector<Host>> SlurmHosts(const Environment& env);

}  // namespace horde::launcher
