// What every integration test file parses: Asio, Boost.Test and corows' public headers,
// compiled once per test program (tests/meson.build) instead of once per file.
#include "../test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <corows/hub.hpp>
#include <corows/server.hpp>
#include <corows/websocket.hpp>
#if defined(COROWS_HAS_TLS)
#include <corows/connect.hpp>
#endif

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
