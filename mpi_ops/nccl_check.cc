#include "mpi_ops/nccl_check.h"

namespace horde {
namespace mpi {

Status CheckNccl(ncclResult_t code, const char* call, const std::string& operation) {
  if (code == ncclSuccess) return Status::Ok();
  return Status::Internal(operation + ": " + call + " failed: " + ncclGetErrorString(code));
}

std::string OperationName(const char* op, const std::vector<std::string>& names) {
  if (names.size() == 1) return std::string(op) + " '" + names[0] + "'";
  std::string text = std::string(op) + " of " + std::to_string(names.size()) + " tensors (";
  for (size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", '" : "'") + names[i] + "'";
  return text + (names.size() > 3 ? ", ...)" : ")");
}

}  // namespace mpi
}  // namespace horde
