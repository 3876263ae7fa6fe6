// SPDX-License-Identifier: BSL-1.0
// Cancellation with Asio's awaitable operators: `read || timer` must end the read cleanly
// and lose nothing, wherever in a message the cancellation lands.
#include "loopback.hpp"

#include <corows/protocol/deflate_stream.hpp>

#include <boost/test/unit_test.hpp>

namespace {

using namespace corows::test;
using namespace asio::experimental::awaitable_operators;
using corows::error;
using corows::message;
using corows::options;
using std::chrono::milliseconds;

// A timer wait of `d` on the current executor.
asio::awaitable<void> after(milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::use_awaitable);
}

// Reads with the throwing, optional-returning form until a message arrives, cancelling each
// attempt after `slice`; counts the cancellations.
asio::awaitable<std::optional<message>> read_in_slices(tcp_ws& ws, milliseconds slice, int& cancels) {
    for (;;) {
        auto r = co_await (ws.read_message() || after(slice));
        if (r.index() == 0) co_return std::move(std::get<0>(r));
        ++cancels;
        BOOST_REQUIRE(ws.is_open());
    }
}

// As read_in_slices, with the read_message(message&, error_code&) form and one message object.
asio::awaitable<void> read_in_slices_into(tcp_ws& ws, message& m, milliseconds slice, int& cancels) {
    for (;;) {
        corows::error_code ec;
        auto read = [&]() -> asio::awaitable<void> { ec = co_await corows::test::read_or_closed(ws, m); };
        auto r = co_await (read() || after(slice));
        if (r.index() == 0) {
            BOOST_TEST(!ec, ec.message());
            co_return;
        }
        BOOST_TEST(ec == asio::error::operation_aborted);
        ++cancels;
        BOOST_REQUIRE(ws.is_open());
    }
}

// `all` sent by a raw client in pieces of `piece` bytes, `gap` apart.
asio::awaitable<void> trickle(raw_peer& p, const bytes& all, std::size_t piece, milliseconds gap) {
    for (std::size_t at = 0; at < all.size(); at += piece) {
        std::size_t n = std::min(piece, all.size() - at);
        co_await p.send(std::span<const std::uint8_t>(all).subspan(at, n));
        co_await sleep(gap);
    }
}

std::string long_text(std::size_t n) {
    std::string s;
    for (std::size_t i = 0; s.size() < n; ++i) s += "line " + std::to_string(i) + " \xc3\xa9t\xc3\xa9\n";
    s.resize(n);
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cancel)

BOOST_AUTO_TEST_CASE(timer_wins_and_the_next_read_gets_the_next_message) {
    event timer_won;
    run_pair({}, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor);
            timer.expires_after(milliseconds(50));
            auto t0 = std::chrono::steady_clock::now();
            auto r = co_await (ws.read_message() || timer.async_wait(asio::use_awaitable));
            BOOST_TEST(r.index() == 1u, "the timer should have won");
            BOOST_TEST(ms_since(t0) < 1000);
            BOOST_TEST(ws.is_open());
            timer_won.set();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "the next message");
            auto end = co_await ws.read_message();
            BOOST_TEST(!end.has_value());
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await timer_won.wait();
            co_await ws.write_text("the next message");
            co_await ws.close();
        });
}

BOOST_AUTO_TEST_CASE(cancelled_read_reports_operation_aborted) {
    event timer_won;
    run_pair({}, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            message m;
            corows::error_code ec;
            auto read = [&]() -> asio::awaitable<void> { ec = co_await corows::test::read_or_closed(ws, m); };
            auto r = co_await (read() || after(milliseconds(30)));
            BOOST_TEST(r.index() == 1u);
            BOOST_TEST(ec == asio::error::operation_aborted);
            BOOST_TEST(ws.is_open());
            timer_won.set();
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(!ec);
            BOOST_TEST(m.text() == "after the cancellation");
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(ec == err(error::closed));
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await timer_won.wait();
            co_await ws.write_text("after the cancellation");
            co_await ws.close();
        });
}

BOOST_AUTO_TEST_CASE(cancel_inside_a_message_loses_nothing) {
    // First fragment, then half of the second frame; the read is cancelled in between; the
    // rest arrives later and the message is whole.
    bytes first = client_frame(0x1, "Hello, ", false);
    bytes second = client_frame(0x0, "world and more", true);
    bytes second_a(second.begin(), second.begin() + 9), second_b(second.begin() + 9, second.end());
    for (bool optional_form : {true, false}) {
        event cancelled;
        run_raw_client({},
            [&](tcp_ws& ws) -> asio::awaitable<void> {
                co_await ws.accept();
                message m;
                if (optional_form) {
                    auto r = co_await (ws.read_message() || after(milliseconds(100)));
                    BOOST_TEST(r.index() == 1u);
                    cancelled.set();
                    auto got = co_await ws.read_message();
                    BOOST_REQUIRE(got.has_value());
                    m = std::move(*got);
                } else {
                    corows::error_code ec;
                    auto read = [&]() -> asio::awaitable<void> { ec = co_await corows::test::read_or_closed(ws, m); };
                    auto r = co_await (read() || after(milliseconds(100)));
                    BOOST_TEST(r.index() == 1u);
                    BOOST_TEST(ec == asio::error::operation_aborted);
                    cancelled.set();
                    ec = co_await corows::test::read_or_closed(ws, m); // the same message object
                    BOOST_TEST(!ec);
                }
                BOOST_TEST(m.text() == "Hello, world and more");
                co_await ws.close();
            },
            [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
                co_await p.upgrade(l.host(), "");
                co_await p.send(concat(first, second_a));
                co_await cancelled.wait();
                co_await p.send(second_b);
                close_info c = co_await expect_close(p);
                BOOST_TEST(c.code == 1000);
                co_await p.send(client_frame(0x8, close_payload(1000)));
                co_await expect_eof(p);
            });
    }
}

BOOST_AUTO_TEST_CASE(many_cancellations_anywhere_in_a_message) {
    // A fragmented text message with pings between fragments, sent 13 bytes every 2 ms, read
    // by reads that are cancelled every 3 ms: cancellations land in headers, payloads, UTF-8
    // sequences and between frames.
    std::string text = long_text(3000);
    bytes all;
    for (std::size_t at = 0; at < text.size(); at += 500) {
        std::string part = text.substr(at, 500);
        bool fin = at + 500 >= text.size();
        all = concat(all, client_frame(at == 0 ? 0x1 : 0x0, part, fin), client_frame(0x9, "p"));
    }
    for (bool optional_form : {true, false}) {
        int cancels = 0;
        run_raw_client({},
            [&](tcp_ws& ws) -> asio::awaitable<void> {
                co_await ws.accept();
                message m;
                if (optional_form) {
                    auto got = co_await read_in_slices(ws, milliseconds(3), cancels);
                    BOOST_REQUIRE(got.has_value());
                    m = std::move(*got);
                } else {
                    co_await read_in_slices_into(ws, m, milliseconds(3), cancels);
                }
                BOOST_TEST(m.size() == text.size());
                BOOST_TEST((m.text() == text));
                co_await ws.close();
            },
            [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
                co_await p.upgrade(l.host(), "");
                co_await trickle(p, all, 13, milliseconds(2));
                int pongs = 0;
                for (;;) {
                    auto f = co_await p.read_frame();
                    BOOST_REQUIRE(f.has_value());
                    if (f->op == 0x8) break;
                    BOOST_TEST(f->op == 0xA);
                    ++pongs;
                }
                // The ping after the last fragment is read by close(), which sends no pong.
                BOOST_TEST(pongs == 5);
                co_await p.send(client_frame(0x8, close_payload(1000)));
                co_await expect_eof(p);
            },
            milliseconds(20'000));
        BOOST_TEST(cancels > 10);
    }
}

BOOST_AUTO_TEST_CASE(many_cancellations_in_a_compressed_message) {
    std::string text = long_text(20'000);
    corows::deflate_stream d;
    corows::error_code ec;
    auto z = d.compress(corows::as_bytes(text), ec);
    BOOST_REQUIRE(!ec);
    bytes all = encode(raw_frame{0x1, true, 4, true, bytes(z.begin(), z.end())});
    options o;
    o.deflate.enabled = true;
    int cancels = 0;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto got = co_await read_in_slices(ws, milliseconds(3), cancels);
            BOOST_REQUIRE(got.has_value());
            BOOST_TEST(got->compressed());
            BOOST_TEST((got->text() == text));
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "Sec-WebSocket-Extensions: permessage-deflate\r\n");
            co_await trickle(p, all, std::max<std::size_t>(1, all.size() / 60), milliseconds(2));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        },
        milliseconds(20'000));
    BOOST_TEST(cancels > 10);
}

BOOST_AUTO_TEST_CASE(cancelled_write_queues_nothing) {
    // The peer does not read, so a write ends up waiting for room in the queue; cancelling it
    // must leave the queue as it was, and every completed write must arrive whole.
    constexpr std::size_t size = 16 * 1024;
    options o;
    o.write_queue_limit = 256 * 1024;
    std::size_t completed = 0;
    event writer_cancelled;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            bytes payload(size);
            for (;;) {
                payload[0] = static_cast<std::uint8_t>(completed);
                std::size_t before = ws.queued_bytes();
                auto r = co_await (ws.write_binary(payload) || after(milliseconds(200)));
                if (r.index() == 1) {
                    // A wait for room was cancelled: the payload is not in the queue.
                    BOOST_TEST(ws.queued_bytes() <= before);
                    break;
                }
                ++completed;
                BOOST_REQUIRE(completed < 100'000u);
            }
            BOOST_TEST(ws.is_open());
            writer_cancelled.set();
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await writer_cancelled.wait();
            std::size_t bad = 0, frames = 0;
            for (;;) {
                auto f = co_await p.read_frame();
                BOOST_REQUIRE(f.has_value());
                if (f->op == 0x8) {
                    BOOST_TEST(parse_close(*f).code == 1000);
                    break;
                }
                if (f->op != 0x2 || f->payload.size() != size || f->payload[0] != static_cast<std::uint8_t>(frames))
                    ++bad;
                ++frames;
            }
            BOOST_TEST(frames == completed);
            BOOST_TEST(bad == 0u);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        },
        milliseconds(20'000));
    BOOST_TEST(completed > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
