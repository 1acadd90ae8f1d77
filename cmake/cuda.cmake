# HORDE_WITH_CUDA=AUTO builds the GPU path when the CUDA toolkit and NCCL are found;
# ON makes their absence an error; OFF skips the search. The GPU sources themselves
# (mpi_ops/nccl_*.cc, mpi_ops/cuda_*.cu) are added by the GPU issue; until then this
# only reports what the build machine offers.
set(HORDE_CUDA_FOUND OFF)
if(NOT HORDE_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_library(HORDE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND HORDE_NCCL_LIBRARY)
    set(HORDE_CUDA_FOUND ON)
  elseif(HORDE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HORDE_WITH_CUDA=ON but the CUDA toolkit or NCCL was not found")
  endif()
endif()
message(STATUS "horde: CUDA toolkit + NCCL found: ${HORDE_CUDA_FOUND} (GPU collectives not built yet)")
