#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horde/status.h"

namespace horde {

// What negotiation needs from the network. Rank 0 of the transport is the coordinator.
// mpi_ops implements it over MPI; the unit tests implement it in memory.
// Every call is collective: all ranks make the same calls in the same order.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collects every rank's blob on the coordinator, indexed by rank. Other ranks get an
  // empty vector.
  virtual Status GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) = 0;
  // Replaces every rank's blob with the coordinator's.
  virtual Status BroadcastFromCoordinator(std::string* blob) = 0;
  // Replaces every rank's words with their bitwise AND over all ranks (same length
  // everywhere).
  virtual Status AllreduceAnd(std::vector<uint64_t>* words) = 0;
};

}  // namespace horde
