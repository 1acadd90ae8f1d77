#pragma once

#include <gtest/gtest.h>

#include <string>

#include "launcher/usage_error.h"

// Expects `statement` to throw UsageError whose message contains `needle`.
#define EXPECT_USAGE_ERROR(statement, needle)                              \
  do {                                                                     \
    try {                                                                  \
      statement;                                                           \
      ADD_FAILURE() << "no UsageError from " #statement;                   \
    } catch (const horde::launcher::UsageError& error) {                   \
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) \
          << "message: " << error.what();                                  \
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos)   \
          << "not one line: " << error.what();                             \
    }                                                                      \
  } while (0)
