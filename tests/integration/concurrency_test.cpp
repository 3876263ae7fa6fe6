// SPDX-License-Identifier: BSL-1.0
// Several coroutines on one connection, a peer that stops reading, and a thousand
// connections on one io_context.
#include "loopback.hpp"
#include "server_thread.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace {

using namespace corows::test;
using namespace asio::experimental::awaitable_operators;
using corows::error;
using corows::message;
using corows::message_kind;
using corows::options;
using std::chrono::milliseconds;

// Echoes until the peer closes.
asio::awaitable<void> echo(tcp_ws& ws) {
    message m;
    for (;;) {
        bool got = co_await ws.read_message(m);
        if (!got) break;
        co_await ws.write_message(m);
    }
}

// Message `seq` of writer `id`: "id seq " then filler whose length and bytes depend on both,
// every 997th one large enough to take the direct-write path of the echoing server.
std::string numbered(int id, int seq) {
    std::string s = std::to_string(id) + " " + std::to_string(seq) + " ";
    std::size_t fill = seq % 997 == 0 ? 70'000 : static_cast<std::size_t>((seq * 7 + id) % 300);
    s.append(fill, static_cast<char>('a' + (seq + id) % 26));
    return s;
}

// Resident set size in KiB.

} // namespace

BOOST_AUTO_TEST_SUITE(concurrency)

BOOST_AUTO_TEST_CASE(one_reader_and_four_writers_on_one_connection) {
    constexpr int writers = 4;
    constexpr int per_writer = 10'000;
    int received = 0;
    int out_of_order = 0, corrupt = 0;
    auto t0 = std::chrono::steady_clock::now();
    run_pair({}, {}, echo, [&](tcp_ws& ws) -> asio::awaitable<void> {
        auto writer = [&ws](int id) -> asio::awaitable<void> {
            for (int i = 0; i < per_writer; ++i) co_await ws.write_text(numbered(id, i));
        };
        auto reader = [&]() -> asio::awaitable<void> {
            std::array<int, writers> next{};
            message m;
            while (received < writers * per_writer) {
                bool got = co_await ws.read_message(m);
                BOOST_REQUIRE(got);
                std::string_view t = m.text();
                int id = t[0] - '0';
                auto sp = t.find(' ', 2);
                int seq = std::stoi(std::string(t.substr(2, sp - 2)));
                if (id < 0 || id >= writers || seq != next[static_cast<std::size_t>(id)]) {
                    ++out_of_order;
                } else {
                    ++next[static_cast<std::size_t>(id)];
                    if (t != numbered(id, seq)) ++corrupt;
                }
                ++received;
            }
        };
        co_await (writer(0) && writer(1) && writer(2) && writer(3) && reader());
        co_await ws.close();
    }, std::chrono::seconds(60));
    BOOST_TEST(received == writers * per_writer);
    BOOST_TEST(out_of_order == 0);
    BOOST_TEST(corrupt == 0);
    BOOST_TEST_MESSAGE("40,000 echoed messages in " << ms_since(t0) << " ms");
}

BOOST_AUTO_TEST_CASE(large_and_small_writers_with_fragmentation) {
    // A server with frame_size set: 1 MiB messages go out fragmented from the caller's memory
    // while another coroutine queues small messages and the client pings. No small message
    // may land between the fragments of a large one.
    constexpr int large = 20, small = 2000;
    options so;
    so.frame_size = 16 * 1024;
    int large_ok = 0, small_ok = 0, wrong = 0, pongs = 0;
    run_pair(so, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto big_writer = [&]() -> asio::awaitable<void> {
                bytes big(1024 * 1024);
                for (int i = 0; i < large; ++i) {
                    std::fill(big.begin(), big.end(), static_cast<std::uint8_t>('A' + i));
                    co_await ws.write_binary(big);
                }
            };
            auto small_writer = [&]() -> asio::awaitable<void> {
                for (int i = 0; i < small; ++i) {
                    co_await ws.write_text("small " + std::to_string(i));
                    if (i % 50 == 0) co_await sleep(milliseconds(1));
                }
            };
            // The reader answers the client's pings while the writers run: the pongs go
            // between fragments.
            auto reader = [&]() -> asio::awaitable<void> {
                auto end = co_await ws.read_message();
                BOOST_TEST(!end.has_value());
            };
            co_await (big_writer() && small_writer() && reader());
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            ws.on_pong([&](std::span<const std::uint8_t>) { ++pongs; });
            int next_large = 0, next_small = 0;
            message m;
            while (next_large < large || next_small < small) {
                if ((next_large + next_small) % 100 == 0) co_await ws.ping();
                bool got = co_await ws.read_message(m);
                BOOST_REQUIRE(got);
                if (m.is_text()) {
                    if (m.text() == "small " + std::to_string(next_small)) ++small_ok;
                    else ++wrong;
                    ++next_small;
                } else {
                    auto expected = static_cast<std::uint8_t>('A' + next_large);
                    bool ok = m.size() == 1024 * 1024u &&
                              std::all_of(m.data().begin(), m.data().end(), [&](std::uint8_t b) { return b == expected; });
                    if (ok) ++large_ok;
                    else ++wrong;
                    ++next_large;
                }
            }
            co_await ws.close();
        },
        std::chrono::seconds(60));
    BOOST_TEST(large_ok == large);
    BOOST_TEST(small_ok == small);
    BOOST_TEST(wrong == 0);
    BOOST_TEST(pongs > 0);
}

BOOST_AUTO_TEST_CASE(second_concurrent_read_is_refused) {
    event second_done;
    run_pair({}, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            message m1;
            corows::error_code e1;
            auto first = [&]() -> asio::awaitable<void> { e1 = co_await corows::test::read_or_closed(ws, m1); };
            auto second = [&]() -> asio::awaitable<void> {
                co_await sleep(milliseconds(20));
                message m2;
                corows::error_code e2;
                e2 = co_await corows::test::read_or_closed(ws, m2);
                BOOST_TEST(e2 == err(error::operation_in_progress));
                bool threw = false;
                try {
                    co_await ws.read_message();
                } catch (const corows::system_error& e) {
                    threw = e.code() == err(error::operation_in_progress);
                }
                BOOST_TEST(threw);
                BOOST_TEST(ws.is_open());
                second_done.set();
            };
            co_await (first() && second());
            // The first read was not disturbed.
            BOOST_TEST(!e1);
            BOOST_TEST(m1.text() == "for the first read");
            auto end = co_await ws.read_message();
            BOOST_TEST(!end.has_value());
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await second_done.wait();
            co_await ws.write_text("for the first read");
            co_await ws.close();
        });
}

BOOST_AUTO_TEST_CASE(close_while_another_coroutine_reads) {
    int got = 0;
    run_pair({}, {}, echo,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto reader = [&]() -> asio::awaitable<void> {
                for (;;) {
                    auto m = co_await ws.read_message();
                    if (!m) break;
                    ++got;
                }
                BOOST_TEST(ws.close_code() == 1000);
            };
            auto closer = [&]() -> asio::awaitable<void> {
                for (int i = 0; i < 3; ++i) co_await ws.write_text("x");
                while (got < 3) co_await sleep(milliseconds(2));
                co_await ws.close(1000, "enough");
                BOOST_TEST(!ws.is_open());
            };
            co_await (reader() && closer());
        });
    BOOST_TEST(got == 3);
}

// A peer that does not read while we write 64 MiB: the writer must wait with the queue
// within its limit, then everything arrives intact once the peer reads.
void backpressure(std::size_t message_size) {
    constexpr std::size_t total = 64 * 1024 * 1024;
    const std::size_t count = total / message_size;
    options o;
    o.write_queue_limit = 1024 * 1024;
    std::size_t written = 0, max_queued = 0;
    tcp_ws* server = nullptr;
    bool writer_done = false;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            server = &ws;
            bytes payload(message_size);
            for (std::size_t i = 0; i < count; ++i) {
                std::memcpy(payload.data(), &i, sizeof i);
                payload.back() = static_cast<std::uint8_t>(i);
                co_await ws.write_binary(payload);
                ++written;
                max_queued = std::max(max_queued, ws.queued_bytes());
            }
            writer_done = true;
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await sleep(milliseconds(300));
            std::size_t stalled_at = written;
            co_await sleep(milliseconds(200));
            BOOST_TEST(!writer_done);
            BOOST_TEST(written == stalled_at, "the writer kept going while nobody read");
            BOOST_TEST(written * message_size < total / 2);
            BOOST_REQUIRE(server != nullptr);
            BOOST_TEST(server->queued_bytes() <= o.write_queue_limit + message_size + 16);
            BOOST_TEST_MESSAGE(message_size << "-byte messages: writer stalled after " << written * message_size / 1024
                               << " KiB, queue " << server->queued_bytes() / 1024 << " KiB");
            std::size_t bad = 0;
            for (std::size_t i = 0; i < count; ++i) {
                auto f = co_await p.read_frame();
                BOOST_REQUIRE_MESSAGE(f.has_value(), "frame " << i << ": " << p.last_error().message());
                std::size_t idx = 0;
                if (f->payload.size() == message_size) std::memcpy(&idx, f->payload.data(), sizeof idx);
                if (f->op != 0x2 || f->payload.size() != message_size || idx != i ||
                    f->payload.back() != static_cast<std::uint8_t>(i))
                    ++bad;
            }
            BOOST_TEST(bad == 0u);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        },
        milliseconds(30'000));
    BOOST_TEST(written == count);
    BOOST_TEST(max_queued <= o.write_queue_limit + message_size + 16);
}

BOOST_AUTO_TEST_CASE(backpressure_queued_path) { backpressure(16 * 1024); }

BOOST_AUTO_TEST_CASE(backpressure_direct_write_path) { backpressure(256 * 1024); }

BOOST_AUTO_TEST_CASE(backpressure_client_role) {
    // A corows client masks into its queue: the same limit holds.
    constexpr std::size_t message_size = 16 * 1024, count = 64 * 1024 * 1024 / message_size;
    options o;
    o.write_queue_limit = 512 * 1024;
    std::size_t written = 0, max_queued = 0;
    run_raw_server(o,
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            bytes payload(message_size, 0x5a);
            for (std::size_t i = 0; i < count; ++i) {
                payload[0] = static_cast<std::uint8_t>(i);
                co_await ws.write_binary(payload);
                ++written;
                max_queued = std::max(max_queued, ws.queued_bytes());
            }
            co_await ws.close();
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            co_await sleep(milliseconds(300));
            std::size_t stalled_at = written;
            co_await sleep(milliseconds(100));
            BOOST_TEST(written == stalled_at);
            BOOST_TEST(written < count / 2);
            std::size_t bad = 0;
            for (std::size_t i = 0; i < count; ++i) {
                auto f = co_await p.read_frame();
                BOOST_REQUIRE(f.has_value());
                if (!f->masked || f->payload.size() != message_size || f->payload[0] != static_cast<std::uint8_t>(i) ||
                    f->payload[1] != 0x5a || f->payload.back() != 0x5a)
                    ++bad;
            }
            BOOST_TEST(bad == 0u);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(server_frame(0x8, close_payload(1000)));
            p.socket().close();
        },
        milliseconds(30'000));
    BOOST_TEST(written == count);
    BOOST_TEST(max_queued <= o.write_queue_limit + message_size + 16);
}

BOOST_AUTO_TEST_CASE(a_thousand_simultaneous_connections) {
    constexpr int connections = 1000;
    constexpr int messages = 5;
    // Two sockets per connection plus the listener and the test harness.
    const std::size_t needed = 2 * connections + 64;
    const std::size_t limit = corows::detail::raise_descriptor_limit(std::max<std::size_t>(needed, 4096));
    BOOST_REQUIRE_MESSAGE(limit >= needed, "descriptor limit too low: " << limit);

    const options defaults;
    loop l;
    gate all_connected(l.ctx());
    int handshakes = 0, echoed = 0, closed = 0, sessions_done = 0;
    long rss_before = rss_kib(), rss_connected = 0;
    auto t0 = std::chrono::steady_clock::now();
    l.spawn("acceptor", [&]() -> asio::awaitable<void> {
        for (int i = 0; i < connections; ++i) {
            auto ws = std::make_shared<tcp_ws>(co_await l.accept_ws(defaults));
            l.spawn("session", [&sessions_done, ws]() -> asio::awaitable<void> {
                co_await ws->accept();
                co_await echo(*ws);
                ++sessions_done;
            });
        }
    });
    for (int c = 0; c < connections; ++c) {
        l.spawn("client", [&, c]() -> asio::awaitable<void> {
            tcp_ws ws = co_await l.connect_ws(defaults);
            co_await ws.handshake(l.host());
            if (++handshakes == connections) {
                rss_connected = rss_kib();
                all_connected.open();
            }
            co_await all_connected.wait();
            for (int i = 0; i < messages; ++i) {
                std::string text = "client " + std::to_string(c) + " message " + std::to_string(i);
                co_await ws.write_text(text);
                auto m = co_await ws.read_message();
                BOOST_REQUIRE(m.has_value());
                if (m->text() == text) ++echoed;
            }
            co_await ws.close();
            ++closed;
        });
    }
    l.run(milliseconds(60'000));
    BOOST_TEST(handshakes == connections);
    BOOST_TEST(echoed == connections * messages);
    BOOST_TEST(closed == connections);
    BOOST_TEST(sessions_done == connections);
    BOOST_TEST_MESSAGE(connections << " connections: " << ms_since(t0) << " ms, ~"
                       << (rss_connected - rss_before) * 1024 / (2 * connections)
                       << " bytes RSS per websocket while all were open");
}

BOOST_AUTO_TEST_SUITE_END()
