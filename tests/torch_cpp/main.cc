// The C++ API tests run under mpirun with 2 and 4 ranks; every rank runs every test, in
// the same order, making the same collective calls.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "horde/basics.h"
#include "horde/error.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // process_sets_test.cc adds and removes sets after init(); it changes nothing else.
  setenv("HORDE_DYNAMIC_PROCESS_SETS", "1", 0);
  try {
    horde::init();
  } catch (const horde::Error& e) {
    std::fprintf(stderr, "horde::init() failed: %s\n", e.what());
    return 1;
  }
  const int result = RUN_ALL_TESTS();
  horde::shutdown();
  return result;
}
