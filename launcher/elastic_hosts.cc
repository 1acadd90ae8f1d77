#include "launcher/elastic_hosts.h"

#include <algorithm>

namespace horde::launcher {

HostPool::HostPool(std::string own_hostname, std::vector<std::string> own_addresses)
    : own_hostname_(std::move(own_hostname)), own_addresses_(std::move(own_addresses)) {}

bool HostPool::IsLocal(const std::string& host) const {
  return IsLocalHost(host, own_hostname_, own_addresses_);
}

std::vector<Host> HostPool::Usable(const std::vector<Host>& discovered) const {
  std::vector<Host> usable;
  for (Host host : discovered) {
    if (blacklist_.count(host.name)) continue;
    auto withheld = withheld_.find(host.name);
    // More slots reported than at the failure: the machine has capacity again.
    if (withheld != withheld_.end() && host.slots <= withheld->second.reported) {
      host.slots -= withheld->second.slots;
    }
    if (host.slots > 0) usable.push_back(host);
  }
  return usable;
}

std::string HostPool::RecordFailure(const std::string& host, const std::vector<Host>& discovered) {
  if (!IsLocal(host)) {
    blacklist_.insert(host);
    return "host " + host + " is left out from now on";
  }
  int reported = 0;
  for (const Host& candidate : discovered) {
    if (candidate.name == host) reported = candidate.slots;
  }
  Withheld& withheld = withheld_[host];
  if (reported > withheld.reported) withheld.slots = 0;  // older failures were made up for
  withheld.reported = reported;
  withheld.slots += 1;
  return "one slot of " + host + " (this machine) is withheld (" + std::to_string(withheld.slots) +
         " in all)";
}

std::vector<Host> TakeSlots(const std::vector<Host>& hosts, int max_slots) {
  std::vector<Host> taken;
  for (Host host : hosts) {
    if (max_slots <= 0) break;
    host.slots = std::min(host.slots, max_slots);
    max_slots -= host.slots;
    taken.push_back(host);
  }
  return taken;
}

std::string HostOfRank(const std::vector<Host>& hosts, int rank) {
  for (const Host& host : hosts) {
    if (rank < host.slots) return host.name;
    rank -= host.slots;
  }
  return "";
}

}  // namespace horde::launcher
