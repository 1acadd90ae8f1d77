#pragma once

#include <functional>

#include "horde/torch.h"

namespace horde_test {

// The status of the horde::Error that `f` throws; Ok if it throws none.
inline horde::Status ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const horde::Error& e) {
    return e.status();
  }
  return horde::Status::Ok();
}

// True when `t` holds the same values on every rank.
inline bool SameOnAllRanks(const at::Tensor& t) {
  at::Tensor gathered = horde::torch::allgather(t.detach().reshape({1, -1}));
  for (int r = 1; r < gathered.size(0); ++r) {
    if (!gathered[r].equal(gathered[0])) return false;
  }
  return true;
}

}  // namespace horde_test
