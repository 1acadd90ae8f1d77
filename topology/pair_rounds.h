#pragma once

#include <utility>
#include <vector>

namespace horde {

// A round-robin tournament over ranks 0..n-1 (the circle method): every pair of ranks
// meets in exactly one round, and within a round no rank is in two pairs, so the pairs
// of a round can exchange data at the same time without sharing an end. n-1 rounds for
// even n, n for odd n (one rank sits each round out). Pairs are (lower, higher).
std::vector<std::vector<std::pair<int, int>>> PairRounds(int n);

}  // namespace horde
