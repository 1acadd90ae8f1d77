#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"
#include "core/response.h"

namespace horde {

// The responses of operations that have run, by name, so that an operation submitted
// again with the same signature (every gradient, every step) is negotiated as one bit
// at its cache position instead of a serialized request.
//
// Every rank holds an identical cache: entries are inserted, touched and evicted only
// in reaction to a round's outcome, which every rank sees alike, and freed positions
// are reused lowest first. So a position names the same operation on every rank. Each
// rank remembers its own request for the entry (shapes of an allgather differ per
// rank), which is what a later submission is compared with.
class ResponseCache {
 public:
  enum class Match { kMiss, kHit, kChanged };

  // Capacity 0 disables the cache: nothing is stored, every lookup misses.
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  // Length of the bit vector that addresses every position in use (the same on every rank).
  size_t num_positions() const { return slots_.size(); }
  size_t size() const { return by_name_.size(); }

  // kHit: `request` has the cached signature; kChanged: its name is cached with a
  // different one (the entry must be invalidated on every rank). `position` is set
  // unless kMiss.
  Match Find(const Request& request, uint32_t* position) const;

  // Stores a single-name response, evicting the least recently used entry when full.
  // `mine` is this rank's request for it; nullptr when this rank had none (its later
  // submissions will never match, so they invalidate the entry on every rank).
  void Put(const Response& response, const Request* mine);
  void Touch(uint32_t position);
  void Erase(uint32_t position);

  // Whether `position` currently holds `name`.
  bool Holds(uint32_t position, const std::string& name) const;
  const Response& response(uint32_t position) const { return slots_[position]->response; }
  // The name at each position ("" where free): what must be identical on every rank.
  std::vector<std::string> NamesByPosition() const;

 private:
  struct Entry {
    Response response;
    std::optional<Request> mine;
    std::list<uint32_t>::iterator recency;
  };

  uint32_t FreePosition();

  const size_t capacity_;
  std::vector<std::optional<Entry>> slots_;
  std::set<uint32_t> free_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> recency_;  // least recently used first
};

// Whether two requests for the same name ask for the same collective: equal in every
// kSignature field (core/message_fields.h).
bool SameSignature(const Request& a, const Request& b);

// The single-name responses a fused response stands for (each kPerName list sliced
// evenly); a one-name response stands for itself. A multi-name response of an op that
// does not fuse (core/op_traits.h) gives none.
std::vector<Response> SplitResponse(const Response& response);

}  // namespace horde
