#include "launcher/slurm.h"

#include <stdexcept>

#include "launcher/host_name.h"
#include "launcher/numbers.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

// Bounds a typo like "n[1-99999999]" before it allocates a list of that size.
constexpr size_t kMaxNodes = 1 << 20;

// Splits at commas that are not inside brackets.
std::vector<std::string> SplitTopLevel(const std::string& text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  return items;
}

unsigned long ParseNumber(const std::string& text, const std::string& context) {
  auto value = ParseNonNegativeInteger(text, 999999999);
  if (!value) throw std::invalid_argument("'" + text + "' in '" + context + "' is not a number");
  return static_cast<unsigned long>(*value);
}

std::string ZeroPadded(unsigned long value, size_t width) {
  std::string digits = std::to_string(value);
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}

// "01-03,7" gives 01 02 03 7.
std::vector<std::string> ExpandRanges(const std::string& ranges) {
  std::vector<std::string> values;
  for (const std::string& range : SplitTopLevel(ranges)) {
    size_t dash = range.find('-');
    std::string first = range.substr(0, dash);
    unsigned long low = ParseNumber(first, ranges);
    unsigned long high = dash == std::string::npos ? low
                                                   : ParseNumber(range.substr(dash + 1), ranges);
    if (high < low) throw std::invalid_argument("range '" + range + "' runs backwards");
    if (high - low >= kMaxNodes) {
      throw std::invalid_argument("range '" + range + "' is too large");
    }
    for (unsigned long value = low; value <= high; ++value) {
      values.push_back(ZeroPadded(value, first.size()));
    }
  }
  return values;
}

// Expands every bracket group of a pattern: "r[1-2]n[1-2]" gives r1n1 r1n2 r2n1 r2n2.
std::vector<std::string> ExpandBrackets(const std::string& pattern) {
  size_t open = pattern.find('[');
  if (pattern.substr(0, open).find(']') != std::string::npos) {
    throw std::invalid_argument("unmatched ']' in '" + pattern + "'");
  }
  if (open == std::string::npos) return {pattern};
  size_t close = pattern.find(']', open);
  if (close == std::string::npos) {
    throw std::invalid_argument("unclosed '[' in '" + pattern + "'");
  }
  std::vector<std::string> names;
  for (const std::string& value : ExpandRanges(pattern.substr(open + 1, close - open - 1))) {
    for (const std::string& rest : ExpandBrackets(pattern.substr(close + 1))) {
      names.push_back(pattern.substr(0, open) + value + rest);
      if (names.size() > kMaxNodes) throw std::invalid_argument("more than a million nodes");
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> ExpandNodeList(const std::string& list) {
  std::vector<std::string> nodes;
  for (const std::string& item : SplitTopLevel(list)) {
    if (item.empty()) throw std::invalid_argument("empty host name");
    for (std::string& node : ExpandBrackets(item)) nodes.push_back(std::move(node));
  }
  return nodes;
}

std::vector<int> ExpandTasksPerNode(const std::string& counts) {
  std::vector<int> tasks;
  for (const std::string& item : SplitTopLevel(counts)) {
    size_t paren = item.find("(x");
    unsigned long count = ParseNumber(item.substr(0, paren), counts);
    unsigned long repeat = 1;
    if (paren != std::string::npos) {
      if (item.back() != ')') throw std::invalid_argument("'" + item + "' lacks its ')'");
      repeat = ParseNumber(item.substr(paren + 2, item.size() - paren - 3), counts);
    }
    if (count == 0 || repeat == 0) throw std::invalid_argument("'" + item + "' counts zero");
    if (tasks.size() + repeat > kMaxNodes) {
      throw std::invalid_argument("more than a million nodes");
    }
    tasks.insert(tasks.end(), repeat, static_cast<int>(count));
  }
  return tasks;
}

std::optional<std::vector<Host>> SlurmHosts(const Environment& env) {
  auto nodelist = env.find("SLURM_JOB_NODELIST");
  if (nodelist == env.end() || nodelist->second.empty()) return std::nullopt;
  auto tasks_var = env.find("SLURM_TASKS_PER_NODE");
  if (tasks_var == env.end()) {
    throw UsageError(
        "SLURM_JOB_NODELIST is set but SLURM_TASKS_PER_NODE is not: run inside "
        "an allocation made by salloc/sbatch, or give the hosts with -H");
  }
  std::vector<std::string> nodes;
  std::vector<int> tasks;
  try {
    nodes = ExpandNodeList(nodelist->second);
    tasks = ExpandTasksPerNode(tasks_var->second);
  } catch (const std::invalid_argument& error) {
    throw UsageError("cannot read the Slurm allocation (SLURM_JOB_NODELIST=" +
                     QuotedForMessage(nodelist->second) +
                     ", SLURM_TASKS_PER_NODE=" + QuotedForMessage(tasks_var->second) +
                     "): " + error.what() + "; give the hosts with -H instead");
  }
  if (nodes.size() != tasks.size()) {
    throw UsageError("the Slurm allocation lists " + std::to_string(nodes.size()) +
                     " nodes but task counts for " + std::to_string(tasks.size()) +
                     " (SLURM_TASKS_PER_NODE=" + QuotedForMessage(tasks_var->second) +
                     "); give the hosts with -H instead");
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < nodes.size(); ++i) {
    CheckHostName(nodes[i], "SLURM_JOB_NODELIST");
    hosts.push_back({nodes[i], tasks[i]});
  }
  RejectDuplicateHosts(hosts, "SLURM_JOB_NODELIST");
  return hosts;
}

}  // namespace horde::launcher
