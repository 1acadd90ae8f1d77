#include "launcher/elastic_hosts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace horde::launcher {

HostPool::HostPool(std::string own_hostname, std::vector<std::string> own_addresses,
                   std::optional<CooldownRange> cooldown)
    : own_hostname_(std::move(own_hostname)),
      own_addresses_(std::move(own_addresses)),
      cooldown_(cooldown) {}

bool HostPool::IsLocal(const std::string& host) const {
  return IsLocalHost(host, own_hostname_, own_addresses_);
}

std::vector<Host> HostPool::Usable(const std::vector<Host>& discovered) const {
  std::vector<Host> usable;
  for (Host host : discovered) {
    auto left_out = left_out_.find(host.name);
    if (left_out != left_out_.end() && left_out->second.out) continue;
    auto withheld = withheld_.find(host.name);
    // More slots reported than at the failure: the machine has capacity again.
    if (withheld != withheld_.end() && host.slots <= withheld->second.reported) {
      host.slots -= withheld->second.slots;
    }
    if (host.slots > 0) usable.push_back(host);
  }
  return usable;
}

std::string HostPool::Exclude(const std::string& host, Clock::time_point now) {
  LeftOut& entry = left_out_[host];
  entry.out = true;
  entry.times += 1;
  if (!cooldown_) return "host " + host + " is left out from now on";
  // Horovod's formula (runner/elastic/discovery.py): doubling, with jitter so that hosts
  // left out together do not all come back at once.
  double min = cooldown_->min_seconds, max = cooldown_->max_seconds;
  double jitter = std::uniform_real_distribution<double>(0, 1)(random_);
  double seconds = std::clamp(min * std::pow(2.0, std::min(entry.times, 30)) + jitter * min, min,
                              max);
  entry.until = now +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", seconds);
  return "host " + host + " is left out for " + text + " s (--blacklist-cooldown-range)";
}

std::vector<std::string> HostPool::EndCooldowns(Clock::time_point now) {
  std::vector<std::string> back;
  for (auto& [host, entry] : left_out_) {
    if (entry.out && entry.until && *entry.until <= now) {
      entry.out = false;
      entry.until.reset();
      back.push_back(host);
    }
  }
  return back;
}

std::string HostPool::RecordFailure(const std::string& host, const std::vector<Host>& discovered,
                                    Clock::time_point now) {
  if (!IsLocal(host)) return Exclude(host, now);
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
