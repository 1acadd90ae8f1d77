#include "mpi_ops/host_name.h"

#include <mpi.h>

namespace horde {
namespace mpi {

std::string HostName() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  if (MPI_Get_processor_name(name, &length) != MPI_SUCCESS) return "unknown-host";
  return std::string(name, length);
}

}  // namespace mpi
}  // namespace horde
