# Sanitizer and fuzzer builds, for torch-free trees (-DHORDE_BUILD_TORCH=OFF): LibTorch
# and Python are not instrumented, and mixing instrumented code with them is unsupported.
#
#   -DHORDE_SANITIZE=address,undefined   ASan + UBSan, every report fatal
#   -DHORDE_SANITIZE=thread              TSan
#   -DHORDE_BUILD_FUZZERS=ON             libFuzzer targets (tests/fuzz); clang only,
#                                        implies address,undefined
#
# scripts/hardening.sh builds and runs all three (build/asan, build/tsan, build/fuzz).
set(HORDE_SANITIZE "" CACHE STRING
    "Comma-separated sanitizers to build everything with: address,undefined or thread")
option(HORDE_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)

set(horde_sanitizers "${HORDE_SANITIZE}")
if(HORDE_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "HORDE_BUILD_FUZZERS=ON needs clang (libFuzzer ships with it), but "
      "the C++ compiler is ${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure a "
      "fresh build directory with -DCMAKE_CXX_COMPILER=clang++.")
  endif()
  if(horde_sanitizers STREQUAL "")
    set(horde_sanitizers "address,undefined")
  endif()
endif()

if(NOT horde_sanitizers STREQUAL "")
  if(HORDE_BUILD_TORCH)
    message(FATAL_ERROR "HORDE_SANITIZE/HORDE_BUILD_FUZZERS need a torch-free build: add "
      "-DHORDE_BUILD_TORCH=OFF -DHORDE_WITH_CUDA=OFF")
  endif()
  string(REPLACE "," ";" horde_sanitizer_list "${horde_sanitizers}")
  foreach(sanitizer IN LISTS horde_sanitizer_list)
    if(NOT sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "HORDE_SANITIZE: unknown sanitizer '${sanitizer}' in "
        "'${horde_sanitizers}'; expected address, undefined or thread")
    endif()
  endforeach()
  if("thread" IN_LIST horde_sanitizer_list AND "address" IN_LIST horde_sanitizer_list)
    message(FATAL_ERROR "HORDE_SANITIZE: thread and address cannot be combined; "
      "use separate build directories")
  endif()
  # Readable stacks, and a UBSan finding stops the test instead of scrolling past.
  add_compile_options(-fsanitize=${horde_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  # -O1 and line tables only (after the build type's -O2 -g, so they win): sanitized
  # code compiles 2.5 times faster than with full debug information, where UBSan's
  # checks cost most, and reports still name each frame's file and line.
  add_compile_options(-O1 -g1)
  add_link_options(-fsanitize=${horde_sanitizers})
  if(HORDE_BUILD_FUZZERS)
    # Coverage instrumentation for everything a fuzz target links; the libFuzzer
    # runtime itself is linked into the fuzz targets only.
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
  message(STATUS "horde: building with -fsanitize=${horde_sanitizers}")
endif()
