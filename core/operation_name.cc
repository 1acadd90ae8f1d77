#include "core/operation_name.h"

namespace horde {

std::string OperationName(const char* op, const std::vector<std::string>& names) {
  if (names.size() == 1) return std::string(op) + " '" + names[0] + "'";
  std::string text = std::string(op) + " of " + std::to_string(names.size()) + " tensors (";
  for (size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", '" : "'") + names[i] + "'";
  return text + (names.size() > 3 ? ", ...)" : ")");
}

}  // namespace horde
