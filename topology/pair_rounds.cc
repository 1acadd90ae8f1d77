#include "topology/pair_rounds.h"

#include <algorithm>

namespace horde {

std::vector<std::vector<std::pair<int, int>>> PairRounds(int n) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (n < 2) return rounds;
  // Odd n: a phantom rank n makes the count even; whoever meets it sits out.
  const int m = n % 2 == 0 ? n : n + 1;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> round;
    // Rank m-1 stays put; the others rotate around it.
    auto add = [&](int a, int b) {
      if (a < n && b < n) round.emplace_back(std::min(a, b), std::max(a, b));
    };
    add(m - 1, r);
    for (int k = 1; k < m / 2; ++k) add((r + k) % (m - 1), (r - k + m - 1) % (m - 1));
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
  }
  return rounds;
}

}  // namespace horde
