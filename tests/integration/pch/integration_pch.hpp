// SPDX-License-Identifier: BSL-1.0
// What every integration test file parses and corows does not change: Asio and Boost.Test,
// compiled once per test program (tests/meson.build) instead of once per file. corows' own
// headers stay out: with them the header is a quarter larger, slower to load than to parse,
// and rebuilt by every change to them (measured in docs/testing.md).
#include "../test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
