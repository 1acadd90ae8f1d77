#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace horde::launcher {

// Horovod's --blacklist-cooldown-range MIN MAX: how long a left-out host stays out.
struct CooldownRange {
  int min_seconds = 0;
  int max_seconds = 0;
};

// Which of the discovered slots an elastic job may use, after failures.
//
// The rule for a failed rank: on another host, the whole host is left out (Horovod's
// blacklist: a failed node usually fails again). Without a cool-down range it stays out
// for the rest of the job; with one, as in Horovod, the n-th time a host is left out it
// stays out for MIN * 2^n + U(0,1) * MIN seconds, kept within [MIN, MAX], and is then
// usable again if the discovery script still lists it. On this machine (localhost,
// 127.x, its hostname or addresses), leaving the host out would leave a one-machine job
// with nothing, so only the failed rank's slot is withheld: a job of 3 ranks on
// localhost:3 goes on with 2. Withheld local slots come back when the discovery script
// reports more slots for this machine than it did at the failure.
class HostPool {
 public:
  using Clock = std::chrono::steady_clock;

  HostPool(std::string own_hostname, std::vector<std::string> own_addresses,
           std::optional<CooldownRange> cooldown = std::nullopt);

  // `discovered` minus left-out hosts and withheld local slots, in the same order.
  std::vector<Host> Usable(const std::vector<Host>& discovered) const;

  // Accounts for a failed rank on `host`; returns what was done, for the reset message
  // ("host node2 is left out for 4.3 s" / "one slot of localhost is withheld").
  std::string RecordFailure(const std::string& host, const std::vector<Host>& discovered,
                            Clock::time_point now);

  // Leaves a remote host out (a failed rank or ssh check); returns "left out ...".
  std::string Exclude(const std::string& host, Clock::time_point now);

  // The left-out hosts whose cool-down is over at `now`: usable again from now on. Their
  // count of times left out is kept, so the next cool-down is longer.
  std::vector<std::string> EndCooldowns(Clock::time_point now);

  bool IsLocal(const std::string& host) const;

 private:
  std::string own_hostname_;
  std::vector<std::string> own_addresses_;
  std::optional<CooldownRange> cooldown_;
  std::mt19937 random_{std::random_device{}()};
  struct LeftOut {
    int times = 0;                           // how often this host was left out
    std::optional<Clock::time_point> until;  // none: for the rest of the job
    bool out = false;
  };
  std::map<std::string, LeftOut> left_out_;
  struct Withheld {
    int slots = 0;     // slots withheld from this local host
    int reported = 0;  // its slots in the discovery output at the last failure
  };
  std::map<std::string, Withheld> withheld_;
};

// The first `max_slots` slots of `hosts` (ranks fill hosts in order, as mpirun's
// --map-by slot places them): whole hosts, the last one cut to what is left.
std::vector<Host> TakeSlots(const std::vector<Host>& hosts, int max_slots);

// The host that runs `rank` when ranks fill `hosts` in order; empty past the end.
std::string HostOfRank(const std::vector<Host>& hosts, int rank);

}  // namespace horde::launcher
