#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace horde {

// What one rank says in a round's single bitwise-AND allreduce, and what all ranks
// together said. Flags and invalid positions are sent inverted, so the AND computes
// their OR (some rank says so); ready positions are sent plainly, so the AND says
// which cached operations every rank has submitted.
struct RoundBits {
  bool shutdown = false;          // a rank is shutting down
  bool uncached = false;          // a rank has requests for the coordinator
  bool join = false;              // a rank has joined
  bool slow_round = false;        // the coordinator wants a round (to inspect stalls)
  std::vector<uint32_t> ready;    // cache positions submitted (ascending after decoding)
  std::vector<uint32_t> invalid;  // cache positions to evict everywhere (ascending)
  // Rank 0's word to every rank (the autotuner's choice); other ranks send all ones.
  uint64_t coordinator_word = ~uint64_t{0};
};

// Layout: one word of flags, the coordinator's word, `positions` bits of ready positions, then
// `positions` bits of invalid positions, rounded up to whole words.
// Both write into vectors the caller keeps from round to round (their capacity stays).
void EncodeRoundBits(const RoundBits& mine, size_t positions, std::vector<uint64_t>* words);
// Reads the AND of every rank's encoding.
void DecodeRoundBits(const std::vector<uint64_t>& anded, size_t positions, RoundBits* all);

}  // namespace horde
