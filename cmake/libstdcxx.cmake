# horde's libraries must share the process's libstdc++. A GCC that has no shared
# libstdc++ (only libstdc++.a beside it, as a toolchain built for static linking has)
# copies libstdc++'s code into each library; beside the shared one torch loads, the two
# copies' locale tables mix and hvd.init() crashes formatting its first number (seen
# with a GPU image's /opt/gcc). Refuse such a compiler at configure time instead.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                  OUTPUT_VARIABLE HORDE_SHARED_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${HORDE_SHARED_LIBSTDCXX}" OR NOT EXISTS "${HORDE_SHARED_LIBSTDCXX}")
    message(FATAL_ERROR
      "horde: the C++ compiler ${CMAKE_CXX_COMPILER} has no shared libstdc++ (its "
      "-print-file-name=libstdc++.so finds none): it would copy libstdc++ into horde's "
      "libraries, and they crash beside torch's. Build with a compiler that has one, in a "
      "fresh build tree (CMake keeps the first compiler it found), e.g. "
      "CXX=/usr/bin/g++ HORDE_BUILD_DIR=/tmp/horde-build pip install --no-build-isolation .")
  endif()
endif()
