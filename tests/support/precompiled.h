// The headers most test files include, compiled once per build into a precompiled header
// (tests/CMakeLists.txt: target_precompile_headers). Only third-party and standard headers: a
// change to spillway's own headers never rebuilds it. Every test file still includes what it
// uses; this only saves the compiler from parsing these ~90 times.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <expected>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>
