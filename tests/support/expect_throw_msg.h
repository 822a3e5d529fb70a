#pragma once
#include <gtest/gtest.h>

#include <string>

/// EXPECT_THROW_MSG(statement, ExceptionType, "exact what()") — fmt's idiom: the message is part of
/// the contract, so tests pin it exactly.
#define EXPECT_THROW_MSG(statement, exception, expected)                             \
  do {                                                                               \
    bool autotune_thrown_ = false;                                                   \
    try {                                                                            \
      statement;                                                                     \
    } catch (const exception& e) {                                                   \
      autotune_thrown_ = true;                                                       \
      EXPECT_EQ(std::string(expected), std::string(e.what()));                       \
    }                                                                                \
    EXPECT_TRUE(autotune_thrown_) << "expected " #statement " to throw " #exception; \
  } while (0)
