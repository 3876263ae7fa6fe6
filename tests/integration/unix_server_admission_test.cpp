// SPDX-License-Identifier: BSL-1.0
// Admission control of corows::unix_server: squatters on a Unix domain socket are shed as on
// TCP (admission_test.cpp), and an honest client is served at once. Linux only here
// (tests/meson.build: linux_only): Windows has no corows::unix_server (detail/platform.hpp:
// COROWS_HAS_UNIX_SOCKETS), and no other POSIX system is built.
// The case belongs to the admission suite, whose other cases are in admission_test.cpp.

#include <corows/connect_unix.hpp>
#include <corows/server.hpp>

#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::test::run_clients;

} // namespace

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(a_unix_server_sheds_squatters_too) {
    std::string dir = "/tmp/corows-adm-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(dir.data()) != nullptr);
    const std::string path = dir + "/ws.sock";
    struct cleanup {
        std::string dir;
        ~cleanup() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleaner{dir};
    using unix_socket = asio::local::stream_protocol::socket;
    corows::server_options o;
    o.max_handshakes = 4;
    o.connection.handshake_timeout = 10s;
    corows::unix_server srv(o);
    srv.listen(asio::local::stream_protocol::endpoint(path));
    std::thread runner([&] {
        srv.run([](corows::websocket<unix_socket>& ws) -> asio::awaitable<void> {
            corows::message m;
            while (co_await ws.read_message(m)) co_await ws.write_message(m);
        });
    });
    std::chrono::milliseconds took{};
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        std::vector<unix_socket> held;
        for (int i = 0; i < 40; ++i) {
            unix_socket s(ex);
            co_await s.async_connect(asio::local::stream_protocol::endpoint(path), asio::use_awaitable);
            held.push_back(std::move(s));
        }
        co_await corows::test::sleep(200ms);
        auto start = std::chrono::steady_clock::now();
        auto ws = co_await corows::connect_unix("ws+unix://" + path + ":/");
        co_await ws.write_text("honest");
        auto m = co_await ws.read_message();
        if (!m || m->text() != "honest") throw std::runtime_error("no echo");
        took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    }, 5s);
    const auto shed = srv.shed();
    srv.stop(0ms);
    runner.join();
    BOOST_TEST(ok == 1u);
    BOOST_TEST((took < 2000ms), "an honest client waited " << took.count() << " ms");
    // Every squatter beyond the hard cap of twice max_handshakes was shed as it came.
    BOOST_TEST(shed >= 32u);
}

BOOST_AUTO_TEST_SUITE_END()
