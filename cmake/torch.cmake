# Torch for horde comes from the Python interpreter that the extension is built for
# (Python3_EXECUTABLE: setup.py passes its own, sys.executable; a plain cmake finds the
# active virtual environment's first), not from the first TorchConfig.cmake on CMake's
# search path. A user with torch from pip or conda may also have Debian's libtorch-dev
# in /usr/lib/x86_64-linux-gnu/cmake/Torch: building against that one would give an
# extension that the interpreter loads next to another libtorch, and, when their C++
# ABIs differ (pip's torch before 2.7 used the old one), one that does not load at all.
#
#   1. The interpreter tells where its torch's CMake package is
#      (torch.utils.cmake_prefix_path), the C++ ABI it was built with
#      (torch._C._GLIBCXX_USE_CXX11_ABI) and its version.
#   2. If that package exists, Torch_DIR is set to it, replacing any other value, and
#      the cache entries that Torch's config files left from another torch are dropped.
#      (Debian's python3-torch ships none there: its package is the system one, which
#      find_package finds as usual.)
#   3. Whatever was found must match the interpreter's torch in version (major.minor)
#      and ABI flag (TORCH_CXX_FLAGS, which every horde target is compiled with), or
#      the configure fails and says which torch is which.
#
# An interpreter without torch is an error with -DHORDE_REQUIRE_PYTHON_TORCH=ON (setup.py
# sets it); otherwise (a LibTorch-only C++ build) find_package(Torch) uses
# CMAKE_PREFIX_PATH / Torch_DIR as usual, unchecked.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
    "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__); print(torch.__file__)"
  RESULT_VARIABLE _horde_torch_probe_result
  OUTPUT_VARIABLE _horde_torch_probe
  ERROR_VARIABLE _horde_torch_probe_error
  OUTPUT_STRIP_TRAILING_WHITESPACE)

set(HORDE_PYTHON_TORCH "")
if(_horde_torch_probe_result EQUAL 0)
  string(REPLACE "\n" ";" _horde_torch_probe "${_horde_torch_probe}")
  list(GET _horde_torch_probe 0 _horde_torch_prefix)
  list(GET _horde_torch_probe 1 HORDE_PYTHON_TORCH_CXX11_ABI)
  list(GET _horde_torch_probe 2 HORDE_PYTHON_TORCH_VERSION)
  list(GET _horde_torch_probe 3 HORDE_PYTHON_TORCH)
  message(STATUS "horde: torch of ${Python3_EXECUTABLE}: ${HORDE_PYTHON_TORCH_VERSION} "
                 "(${HORDE_PYTHON_TORCH}), _GLIBCXX_USE_CXX11_ABI=${HORDE_PYTHON_TORCH_CXX11_ABI}")

  # Another interpreter's torch than at the last configure of this tree: forget what
  # Torch's config files cached for that one.
  if(DEFINED CACHE{HORDE_CONFIGURED_PYTHON_TORCH}
     AND NOT HORDE_CONFIGURED_PYTHON_TORCH STREQUAL HORDE_PYTHON_TORCH)
    message(STATUS "horde: the torch changed (was ${HORDE_CONFIGURED_PYTHON_TORCH}): "
                   "finding Torch again")
    foreach(_horde_var Torch_DIR Caffe2_DIR TORCH_LIBRARY c10_LIBRARY kineto_LIBRARY
                       C10_CUDA_LIBRARY CAFFE2_NVRTC_LIBRARY LIBNVTOOLSEXT
                       HORDE_TORCH_PYTHON_LIBRARY)
      unset(${_horde_var} CACHE)
    endforeach()
  endif()
  set(HORDE_CONFIGURED_PYTHON_TORCH "${HORDE_PYTHON_TORCH}" CACHE INTERNAL
      "the torch (its __init__.py) this tree was last configured for")

  if(EXISTS "${_horde_torch_prefix}/Torch/TorchConfig.cmake")
    if(DEFINED CACHE{Torch_DIR} AND NOT Torch_DIR STREQUAL "${_horde_torch_prefix}/Torch")
      message(STATUS "horde: Torch_DIR ${Torch_DIR} replaced by the interpreter's "
                     "${_horde_torch_prefix}/Torch")
      foreach(_horde_var Caffe2_DIR TORCH_LIBRARY c10_LIBRARY kineto_LIBRARY
                         C10_CUDA_LIBRARY CAFFE2_NVRTC_LIBRARY LIBNVTOOLSEXT
                         HORDE_TORCH_PYTHON_LIBRARY)
        unset(${_horde_var} CACHE)
      endforeach()
    endif()
    set(Torch_DIR "${_horde_torch_prefix}/Torch" CACHE PATH
        "Torch's CMake package: the one of the Python interpreter's torch" FORCE)
  endif()
elseif(HORDE_REQUIRE_PYTHON_TORCH)
  message(FATAL_ERROR "horde: ${Python3_EXECUTABLE} cannot import torch, which the Python "
    "extension is built for: install torch into that environment first "
    "(${_horde_torch_probe_error})")
else()
  message(STATUS "horde: ${Python3_EXECUTABLE} cannot import torch; Torch comes from "
                 "CMAKE_PREFIX_PATH / Torch_DIR and the Python extension may not load")
endif()

find_package(Torch REQUIRED)
message(STATUS "horde: Torch ${Torch_VERSION} from ${Torch_DIR}, flags '${TORCH_CXX_FLAGS}'")

if(HORDE_PYTHON_TORCH)
  set(_horde_torch_mismatch "")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _horde_python_minor "${HORDE_PYTHON_TORCH_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _horde_cmake_minor "${Torch_VERSION}")
  if(NOT _horde_python_minor STREQUAL _horde_cmake_minor)
    string(APPEND _horde_torch_mismatch " version ${Torch_VERSION} (the interpreter's: "
           "${HORDE_PYTHON_TORCH_VERSION});")
  endif()
  string(REGEX MATCH "_GLIBCXX_USE_CXX11_ABI=([01])" _horde_abi_flag "${TORCH_CXX_FLAGS}")
  if(_horde_abi_flag AND NOT CMAKE_MATCH_1 STREQUAL HORDE_PYTHON_TORCH_CXX11_ABI)
    string(APPEND _horde_torch_mismatch " -D_GLIBCXX_USE_CXX11_ABI=${CMAKE_MATCH_1} (the "
           "interpreter's torch: ${HORDE_PYTHON_TORCH_CXX11_ABI});")
  endif()
  if(_horde_torch_mismatch)
    message(FATAL_ERROR "horde: the Torch CMake package found (${Torch_DIR}) is not the "
      "torch of ${Python3_EXECUTABLE} (${HORDE_PYTHON_TORCH}):${_horde_torch_mismatch} "
      "an extension built against it would not work with that interpreter. Build with the "
      "interpreter whose torch you mean (pip install --no-build-isolation . in its "
      "environment), or point -DTorch_DIR= at that torch's share/cmake/Torch.")
  endif()
endif()
