// What the SDK's tests share: a refused call's status and message, a call that must succeed, and a
// step result ready to be filled.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "nanscope/nanscope.h"

// The status, and a message that contains `words`.
#define EXPECT_REFUSED(call, status, words)                                \
  do {                                                                     \
    EXPECT_EQ((call), (status)) << #call;                                  \
    EXPECT_NE(std::string(ns_last_error()).find(words), std::string::npos) \
        << #call << " said: " << ns_last_error();                          \
  } while (0)

#define NS_OK_(x) ASSERT_EQ((x), NS_OK) << #x << ": " << ns_last_error()

inline ns_step_result blank_result() {
  ns_step_result r{};
  r.struct_size = sizeof r;
  return r;
}
