#pragma once

#include <string>
#include <vector>

namespace horde {

// "allreduce 'name'" or "allreduce of 3 tensors ('a', ...)": how errors name a response.
std::string OperationName(const char* op, const std::vector<std::string>& names);

}  // namespace horde
