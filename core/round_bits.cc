#include "core/round_bits.h"

namespace horde {
namespace {

constexpr size_t kHeaderWords = 2;  // flags, coordinator word

enum Flag : uint64_t { kShutdown = 1, kUncached = 2, kJoin = 4, kSlowRound = 8 };

size_t Words(size_t positions) { return (positions + 63) / 64; }

void SetBit(std::vector<uint64_t>* words, size_t first_word, uint32_t position) {
  (*words)[first_word + position / 64] |= uint64_t{1} << (position % 64);
}

void SetPositions(const std::vector<uint64_t>& words, size_t first_word, size_t positions,
                  bool inverted, std::vector<uint32_t>* out) {
  out->clear();
  for (size_t w = 0; w < Words(positions); ++w) {
    uint64_t bits = inverted ? ~words[first_word + w] : words[first_word + w];
    const size_t valid = positions - w * 64;
    if (valid < 64) bits &= (uint64_t{1} << valid) - 1;
    for (; bits; bits &= bits - 1) {
      out->push_back(static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits)));
    }
  }
}

}  // namespace

void EncodeRoundBits(const RoundBits& mine, size_t positions, std::vector<uint64_t>* words) {
  const size_t n = Words(positions);
  words->assign(kHeaderWords + 2 * n, 0);
  uint64_t flags = 0;
  if (mine.shutdown) flags |= kShutdown;
  if (mine.uncached) flags |= kUncached;
  if (mine.join) flags |= kJoin;
  if (mine.slow_round) flags |= kSlowRound;
  (*words)[0] = ~flags;
  (*words)[1] = mine.coordinator_word;
  for (uint32_t p : mine.ready) SetBit(words, kHeaderWords, p);
  for (uint32_t p : mine.invalid) SetBit(words, kHeaderWords + n, p);
  for (size_t w = kHeaderWords + n; w < words->size(); ++w) (*words)[w] = ~(*words)[w];
}

void DecodeRoundBits(const std::vector<uint64_t>& anded, size_t positions, RoundBits* all) {
  const size_t n = Words(positions);
  const uint64_t flags = ~anded[0];
  all->shutdown = flags & kShutdown;
  all->uncached = flags & kUncached;
  all->join = flags & kJoin;
  all->slow_round = flags & kSlowRound;
  all->coordinator_word = anded[1];
  SetPositions(anded, kHeaderWords, positions, false, &all->ready);
  SetPositions(anded, kHeaderWords + n, positions, true, &all->invalid);
}

}  // namespace horde
