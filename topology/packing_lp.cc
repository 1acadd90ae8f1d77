#include "topology/packing_lp.h"

#include <algorithm>

namespace horde {
namespace {

// Rates are solved in units of the largest capacity and each resource's row divided by
// its capacity, so the dictionary's numbers are near 1 whatever the units.
constexpr double kTolerance = 1e-9;

// The dictionary: basic variable i = b[i] - sum_j d[i][j] * nonbasic variable j, and the
// objective = z + sum_j cost[j] * nonbasic variable j. Variables 0..k-1 are the rates,
// k..k+m-1 the resources' slacks.
struct Dictionary {
  size_t k = 0, m = 0;
  std::vector<double> d;  // m x k, row-major
  std::vector<double> b, cost;
  std::vector<size_t> basic, nonbasic;

  double& at(size_t i, size_t j) { return d[i * k + j]; }

  // Bland's rule: the entering column of the lowest variable that raises the objective.
  bool Entering(size_t* s) const {
    bool found = false;
    for (size_t j = 0; j < k; ++j) {
      if (cost[j] > kTolerance && (!found || nonbasic[j] < nonbasic[*s])) {
        *s = j;
        found = true;
      }
    }
    return found;
  }

  // The row that bounds column s first (the lowest variable on a tie).
  bool Leaving(size_t s, size_t* r) {
    bool found = false;
    double best = 0;
    for (size_t i = 0; i < m; ++i) {
      if (at(i, s) <= kTolerance) continue;
      const double ratio = b[i] / at(i, s);
      if (!found || ratio < best || (ratio == best && basic[i] < basic[*r])) {
        *r = i;
        best = ratio;
        found = true;
      }
    }
    return found;
  }

  void Pivot(size_t r, size_t s) {
    const double p = at(r, s);
    for (size_t j = 0; j < k; ++j) at(r, j) = j == s ? 1 / p : at(r, j) / p;
    b[r] /= p;
    for (size_t i = 0; i < m; ++i) {
      const double f = at(i, s);
      if (i == r || f == 0) continue;
      for (size_t j = 0; j < k; ++j) at(i, j) = j == s ? -f / p : at(i, j) - f * at(r, j);
      b[i] = std::max(0.0, b[i] - f * b[r]);
    }
    const double c = cost[s];
    for (size_t j = 0; j < k; ++j) cost[j] = j == s ? -c / p : cost[j] - c * at(r, j);
    std::swap(basic[r], nonbasic[s]);
  }
};

}  // namespace

Packing MaxPacking(const std::vector<std::vector<double>>& usage,
                   const std::vector<double>& capacity) {
  Dictionary dict;
  dict.k = usage.size();
  dict.m = capacity.size();
  double scale = 0;
  for (double c : capacity) scale = std::max(scale, c);
  dict.d.resize(dict.m * dict.k);
  for (size_t i = 0; i < dict.m; ++i) {
    for (size_t j = 0; j < dict.k; ++j) dict.at(i, j) = usage[j][i] * scale / capacity[i];
    dict.basic.push_back(dict.k + i);
  }
  dict.b.assign(dict.m, 1.0);
  dict.cost.assign(dict.k, 1.0);
  for (size_t j = 0; j < dict.k; ++j) dict.nonbasic.push_back(j);
  // Bland's rule cannot cycle; the cap only bounds what rounding might do.
  const size_t max_pivots = 50 * (dict.m + dict.k);
  size_t s = 0, r = 0;
  for (size_t pivots = 0; pivots < max_pivots && dict.Entering(&s) && dict.Leaving(s, &r);
       ++pivots) {
    dict.Pivot(r, s);
  }
  Packing packing;
  packing.rates.assign(dict.k, 0.0);
  for (size_t i = 0; i < dict.m; ++i) {
    if (dict.basic[i] < dict.k) packing.rates[dict.basic[i]] = dict.b[i] * scale;
  }
  for (double rate : packing.rates) packing.total += rate;
  // A resource's price is minus its slack's cost while that is nonbasic, in the units
  // of the unscaled program.
  packing.prices.assign(dict.m, 0.0);
  for (size_t j = 0; j < dict.k; ++j) {
    if (dict.nonbasic[j] < dict.k) continue;
    const size_t i = dict.nonbasic[j] - dict.k;
    packing.prices[i] = std::max(0.0, -dict.cost[j]) * scale / capacity[i];
  }
  return packing;
}

}  // namespace horde
