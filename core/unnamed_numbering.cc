#include "core/unnamed_numbering.h"

namespace horde {

std::string UnnamedNumbering::Next(const std::string& kind, int32_t* epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  *epoch = epoch_;
  std::string name = kind + ".noname." + std::to_string(counts_[kind]++);
  return epoch_ == 0 ? name : name + ".e" + std::to_string(epoch_);
}

void UnnamedNumbering::StartEpoch() {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  counts_.clear();
}

int32_t UnnamedNumbering::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

}  // namespace horde
