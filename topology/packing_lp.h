#pragma once

#include <vector>

namespace horde {

// The solution of a packing linear program (MaxPacking).
struct Packing {
  std::vector<double> rates;  // per candidate
  double total = 0;           // their sum
  // Per resource, how much the total would grow per unit more of its capacity (the
  // program's dual): another candidate, using u_i of each resource i, can raise the total
  // only if sum_i u_i * prices[i] < 1.
  std::vector<double> prices;
};

// The largest total of non-negative rates x_j under capacities: for every resource i,
// sum_j usage[j][i] * x_j <= capacity[i]. Exact (to rounding), by the simplex method on
// a dictionary of one row per resource and one column per candidate, so it suits a few
// candidates over many resources: the rates of a handful of spanning trees over a
// network's links. Deterministic (Bland's rule). Every capacity must be > 0 and every
// usage >= 0; `usage` has one vector per candidate, one entry per resource.
Packing MaxPacking(const std::vector<std::vector<double>>& usage,
                   const std::vector<double>& capacity);

}  // namespace horde
