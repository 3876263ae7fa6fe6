// SPDX-License-Identifier: BSL-1.0
// Timeouts over loopback: a stalled handshake, a silent peer, and keepalive pings.
#include "loopback.hpp"

#include <boost/test/unit_test.hpp>

namespace {

using namespace corows::test;
using corows::error;
using corows::handshake_request;
using corows::message;
using corows::options;
using std::chrono::milliseconds;

options timeouts(milliseconds handshake, milliseconds idle, milliseconds ping) {
    options o;
    o.handshake_timeout = handshake;
    o.idle_timeout = idle;
    o.ping_interval = ping;
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(timeout)

BOOST_AUTO_TEST_CASE(server_handshake_timeout_on_half_a_request) {
    long long took = -1;
    run_raw_client(timeouts(milliseconds(200), {}, {}),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto t0 = std::chrono::steady_clock::now();
            corows::error_code ec;
            std::tie(ec) = co_await ws.accept(corows::use_tuple);
            took = ms_since(t0);
            BOOST_TEST(ec == err(error::timeout));
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.send_text("GET / HTTP/1.1\r\nHost: " + l.host() + "\r\nUpgrade: websocket\r\n");
            // The transport is dropped at the deadline; nothing is answered.
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 190);
    BOOST_TEST(took < 1000);
}

BOOST_AUTO_TEST_CASE(server_handshake_timeout_on_silence) {
    run_raw_client(timeouts(milliseconds(150), {}, {}),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::http_request req;
            corows::error_code ec;
            std::tie(ec, req) = co_await ws.read_request(corows::use_tuple);
            BOOST_TEST(ec == err(error::timeout));
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

BOOST_AUTO_TEST_CASE(client_handshake_timeout) {
    // A server that reads the request and never answers, then one that answers half.
    for (bool half : {false, true}) {
        long long took = -1;
        run_raw_server(timeouts(milliseconds(200), {}, {}),
            [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
                auto t0 = std::chrono::steady_clock::now();
                corows::error_code ec;
                const handshake_request none;
                std::tie(ec) = co_await ws.handshake(l.host(), "/", none, corows::use_tuple);
                took = ms_since(t0);
                BOOST_TEST(ec == err(error::timeout));
                BOOST_TEST(!ws.is_open());
            },
            [&](raw_peer& p) -> asio::awaitable<void> {
                std::string req = co_await p.read_request();
                BOOST_REQUIRE(!req.empty());
                if (half) co_await p.send_text("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n");
                bool eof = co_await expect_eof(p);
                BOOST_TEST(eof);
            });
        BOOST_TEST(took >= 190);
        BOOST_TEST(took < 1000);
    }
}

BOOST_AUTO_TEST_CASE(idle_timeout_on_a_silent_peer) {
    long long took = -1;
    run_raw_client(timeouts({}, milliseconds(200), {}),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto t0 = std::chrono::steady_clock::now();
            message m;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, m);
            took = ms_since(t0);
            BOOST_TEST(ec == err(error::timeout));
            BOOST_TEST(!ws.is_open());
            BOOST_TEST(ws.close_code() == 1006);
            // Later operations report the same cause.
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(ec == err(error::timeout));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            // No close frame: the server drops TCP (the peer is presumed gone).
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 190);
    BOOST_TEST(took < 1000);
}

BOOST_AUTO_TEST_CASE(traffic_resets_the_idle_timeout) {
    // Pings from the peer every 60 ms for 600 ms keep a 200 ms idle timeout from firing.
    long long took = -1;
    run_raw_client(timeouts({}, milliseconds(200), {}),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto t0 = std::chrono::steady_clock::now();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "still here");
            message rest;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, rest);
            took = ms_since(t0);
            BOOST_TEST(ec == err(error::timeout));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            for (int i = 0; i < 10; ++i) {
                co_await sleep(milliseconds(60));
                co_await p.send(client_frame(0x9, "tick"));
                auto pong = co_await p.read_frame();
                BOOST_REQUIRE(pong.has_value());
                BOOST_TEST(pong->op == 0xA);
            }
            co_await p.send(client_frame(0x1, "still here"));
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 600 + 190);
    BOOST_TEST(took < 600 + 1500);
}

BOOST_AUTO_TEST_CASE(keepalive_pings_then_idle_timeout) {
    // Pings every 50 ms; the peer answers them for 600 ms (so it outlives the 300 ms idle
    // timeout), then goes silent and is dropped about 300 ms later.
    long long took = -1;
    int pings = 0, pings_after_silence = 0;
    run_raw_client(timeouts({}, milliseconds(300), milliseconds(50)),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto t0 = std::chrono::steady_clock::now();
            message m;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, m);
            took = ms_since(t0);
            BOOST_TEST(ec == err(error::timeout));
            BOOST_TEST(ws.close_code() == 1006);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            auto t0 = std::chrono::steady_clock::now();
            while (ms_since(t0) < 600) {
                auto f = co_await p.read_frame();
                BOOST_REQUIRE(f.has_value());
                BOOST_TEST(f->op == 0x9);
                BOOST_TEST(!f->masked);
                ++pings;
                co_await p.send(client_frame(0xA, std::string(f->payload.begin(), f->payload.end())));
            }
            // Silent from now on: the server may keep pinging, then drops TCP.
            for (;;) {
                auto f = co_await p.read_frame();
                if (!f) break;
                BOOST_TEST(f->op == 0x9);
                ++pings_after_silence;
            }
            BOOST_TEST(p.saw_eof());
        });
    BOOST_TEST(pings >= 6);
    BOOST_TEST(pings <= 14);
    BOOST_TEST(pings_after_silence <= 6);
    BOOST_TEST(took >= 600 + 250);
    BOOST_TEST(took < 600 + 1500);
}

BOOST_AUTO_TEST_CASE(client_keepalive_pings_are_masked) {
    int pings = 0;
    run_raw_server(timeouts({}, {}, milliseconds(40)),
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            co_await sleep(milliseconds(300));
            co_await ws.close();
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            for (;;) {
                auto f = co_await p.read_frame();
                BOOST_REQUIRE(f.has_value());
                BOOST_TEST(f->masked);
                if (f->op == 0x8) break;
                BOOST_TEST(f->op == 0x9);
                ++pings;
                co_await p.send(server_frame(0xA, ""));
            }
            co_await p.send(server_frame(0x8, close_payload(1000)));
            p.socket().close();
        });
    BOOST_TEST(pings >= 3);
}

BOOST_AUTO_TEST_SUITE_END()
