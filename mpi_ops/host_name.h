#pragma once

#include <string>

namespace horde {
namespace mpi {

// The host this process runs on, as MPI names it (MPI_Get_processor_name): what link
// matrix files name their rows by.
std::string HostName();

}  // namespace mpi
}  // namespace horde
