// SPDX-License-Identifier: BSL-1.0
#include "loopback.hpp"

#include <random>
#include <vector>

namespace {

using corows::message;
using corows::message_kind;
using corows::test::tcp_ws;

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng() % 64 + 32); // printable: valid text too
    return v;
}

// Server side that echoes until the peer closes.
asio::awaitable<void> echo(tcp_ws& ws) {
    message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

corows::options with_deflate(corows::options o) {
    o.deflate.enabled = true;
    o.deflate.threshold = 0;
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(websocket)

BOOST_AUTO_TEST_CASE(echo_sizes_kinds_and_deflate) {
    for (bool deflate : {false, true}) {
        for (std::size_t frame_size : {std::size_t{0}, std::size_t{1000}}) {
            corows::options so, co;
            so.max_message_size = co.max_message_size = 32 * 1024 * 1024;
            so.frame_size = co.frame_size = frame_size;
            if (deflate) { so = with_deflate(so); co = with_deflate(co); }
            std::vector<std::size_t> sizes{0, 1, 125, 126, 65535, 65536};
            if (frame_size == 0) sizes.push_back(16 * 1024 * 1024);
            corows::test::run_pair(so, co, echo, [&](tcp_ws& ws) -> asio::awaitable<void> {
                BOOST_TEST(ws.deflate().has_value() == deflate);
                for (std::size_t n : sizes) {
                    for (auto kind : {message_kind::text, message_kind::binary}) {
                        auto payload = pattern(n, static_cast<std::uint32_t>(n));
                        co_await ws.write_message(payload, kind);
                        auto m = co_await ws.read_message();
                        BOOST_REQUIRE(m.has_value());
                        BOOST_TEST((m->kind() == kind));
                        BOOST_TEST(m->size() == n);
                        BOOST_TEST((std::equal(payload.begin(), payload.end(), m->data().begin(), m->data().end())));
                        BOOST_TEST(m->compressed() == deflate);
                    }
                }
                co_await ws.close(1000, "bye");
                BOOST_TEST(ws.close_code() == 1000);
                BOOST_TEST(!ws.is_open());
            });
        }
    }
}

BOOST_AUTO_TEST_CASE(server_initiated_close_reports_code_and_reason) {
    corows::test::run_pair({}, {},
        [](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.write_text("hello");
            co_await ws.close(4001, "going");
            BOOST_TEST(ws.close_code() == 4001);
        },
        [](tcp_ws& ws) -> asio::awaitable<void> {
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "hello");
            auto end = co_await ws.read_message();
            BOOST_TEST(!end.has_value());
            BOOST_TEST(ws.close_code() == 4001);
            BOOST_TEST(ws.close_reason() == "going");
        });
}

BOOST_AUTO_TEST_CASE(send_text_and_send_binary_keep_their_kinds) {
    corows::test::run_pair({}, {}, echo, [](tcp_ws& ws) -> asio::awaitable<void> {
        const std::vector<std::uint8_t> bytes{0x00, 0xff, 0x80};
        BOOST_TEST(ws.send_binary(bytes));
        BOOST_TEST(ws.send_text("text"));
        auto bin = co_await ws.read_message();
        BOOST_REQUIRE(bin.has_value());
        BOOST_TEST((bin->kind() == message_kind::binary));
        BOOST_TEST((std::vector<std::uint8_t>(bin->data().begin(), bin->data().end()) == bytes));
        auto text = co_await ws.read_message();
        BOOST_REQUIRE(text.has_value());
        BOOST_TEST((text->kind() == message_kind::text));
        BOOST_TEST(text->text() == "text");
        co_await ws.close();
    });
}

BOOST_AUTO_TEST_CASE(ping_gets_pong_with_same_payload) {
    corows::test::run_pair({}, {}, echo, [](tcp_ws& ws) -> asio::awaitable<void> {
        std::string got;
        ws.on_pong([&](std::span<const std::uint8_t> p) { got.assign(p.begin(), p.end()); });
        const std::string payload = "are you there";
        co_await ws.ping(corows::as_bytes(payload));
        co_await ws.write_text("after ping");
        auto m = co_await ws.read_message();
        BOOST_REQUIRE(m.has_value());
        BOOST_TEST(got == payload);
        co_await ws.close();
    });
}

BOOST_AUTO_TEST_SUITE_END()
