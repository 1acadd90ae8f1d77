# HORDE_WITH_CUDA=AUTO builds the GPU path when the CUDA toolkit (with nvcc) and NCCL
# are found; ON makes their absence an error; OFF skips the search. The GPU path is the
# folder gpu_ops/ (library horde_gpu_ops), built from its GPU sources when
# HORDE_CUDA_FOUND and from the stand-in gpu_ops_none.cc otherwise. Nothing is #defined
# for code to branch on.
set(HORDE_CUDA_FOUND OFF)
if(NOT HORDE_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_library(HORDE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(HORDE_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND HORDE_NCCL_LIBRARY AND HORDE_NCCL_INCLUDE_DIR)
    set(HORDE_CUDA_FOUND ON)
  elseif(HORDE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HORDE_WITH_CUDA=ON but the CUDA toolkit (nvcc) or NCCL was not found")
  endif()
endif()

if(HORDE_CUDA_FOUND)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  # Ampere and Hopper as real code, plus PTX for the newest so later GPUs JIT it.
  # (nvcc 13 dropped everything before sm_75.) A variable of horde's own, applied to
  # horde's target: a CUDA build of torch, found first, sets CMAKE_CUDA_ARCHITECTURES
  # to OFF and would otherwise decide it.
  set(HORDE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures of horde's kernels")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${HORDE_CUDA_ARCHITECTURES})
  endif()
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  # The project's warning flags are host-compiler flags: nvcc takes them through -Xcompiler.
  get_directory_property(_horde_options COMPILE_OPTIONS)
  set(_horde_wrapped "")
  foreach(_option IN LISTS _horde_options)
    list(APPEND _horde_wrapped "$<IF:$<COMPILE_LANGUAGE:CUDA>,-Xcompiler=${_option},${_option}>")
  endforeach()
  set_directory_properties(PROPERTIES COMPILE_OPTIONS "${_horde_wrapped}")
  add_library(horde_nccl UNKNOWN IMPORTED)
  set_target_properties(horde_nccl PROPERTIES
    IMPORTED_LOCATION ${HORDE_NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${HORDE_NCCL_INCLUDE_DIR})
endif()
message(STATUS "horde: GPU path (CUDA + NCCL): ${HORDE_CUDA_FOUND}")
