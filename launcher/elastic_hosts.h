#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace horde::launcher {

// Which of the discovered slots an elastic job may use, after failures.
//
// The rule for a failed rank: on another host, the whole host is left out for the rest
// of the job (Horovod's blacklist: a failed node usually fails again). On this machine
// (localhost, 127.x, its hostname or addresses), leaving the host out would leave a
// one-machine job with nothing, so only the failed rank's slot is withheld: a job of 3
// ranks on localhost:3 goes on with 2. Withheld local slots come back when the
// discovery script reports more slots for this machine than it did at the failure.
class HostPool {
 public:
  HostPool(std::string own_hostname, std::vector<std::string> own_addresses);

  // `discovered` minus blacklisted hosts and withheld local slots, in the same order.
  std::vector<Host> Usable(const std::vector<Host>& discovered) const;

  // Accounts for a failed rank on `host`; returns what was done, for the reset message
  // ("host node2 is left out" / "one slot of localhost is withheld").
  std::string RecordFailure(const std::string& host, const std::vector<Host>& discovered);

  // Leaves a host out without a failed rank (its ssh check failed).
  void Exclude(const std::string& host) { blacklist_.insert(host); }

  bool IsLocal(const std::string& host) const;

 private:
  std::string own_hostname_;
  std::vector<std::string> own_addresses_;
  std::set<std::string> blacklist_;
  struct Withheld {
    int slots = 0;      // slots withheld from this local host
    int reported = 0;   // its slots in the discovery output at the last failure
  };
  std::map<std::string, Withheld> withheld_;
};

// The first `max_slots` slots of `hosts` (ranks fill hosts in order, as mpirun's
// --map-by slot places them): whole hosts, the last one cut to what is left.
std::vector<Host> TakeSlots(const std::vector<Host>& hosts, int max_slots);

// The host that runs `rank` when ranks fill `hosts` in order; empty past the end.
std::string HostOfRank(const std::vector<Host>& hosts, int rank);

}  // namespace horde::launcher
