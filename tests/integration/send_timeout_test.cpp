// SPDX-License-Identifier: BSL-1.0
// options::send_timeout and options::send_buffer_size against raw peers on 127.0.0.1: a peer
// that stops reading is closed with 1008 "too slow: send timeout" within the deadline (coroutine
// handlers, event handlers, the hub), and the server's code sees why through closed_why(); a
// peer that reads slowly but steadily is not cut; the send buffer size reaches the socket.
// Deadlines are short and the margins wide: outcomes are asserted, never speed.
#include "blocking_peer.hpp"
#include "server_thread.hpp"

#include <corows/hub.hpp>
#include <corows/server.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using corows::message;
using corows::message_kind;
using std::chrono::milliseconds;

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

using mode = server_mode;

bytes text_frame(std::string_view s) {
    return zero_key_frame(0x81, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

// A client that has upgraded and reads only when the test says so; its small receive buffer
// (SO_RCVBUF) keeps the kernel from soaking up megabytes for a peer that does not read.
struct lazy_peer : blocking_peer {
    lazy_peer(unsigned short port, int receive_buffer) : blocking_peer(port, receive_buffer) { upgrade(port); }
};

// How the server side of one connection ended, as its handler saw it.
struct ending {
    std::mutex m;
    std::optional<corows::close_info> why;
    corows::error_code reported; // what the handler's last operation (or on_close) reported

    void set(const tcp_ws& ws, corows::error_code ec) {
        std::lock_guard<std::mutex> lock(m);
        why = ws.closed_why();
        reported = ec;
    }
    bool seen() {
        std::lock_guard<std::mutex> lock(m);
        return why.has_value();
    }
};

// An echo server in `m` that records how each connection ended in `end`.
std::unique_ptr<server_thread> echo_server(mode m, corows::server_options o, ending& end) {
    if (m == mode::coroutines) {
        return std::make_unique<server_thread>(std::move(o), [&end](tcp_ws& ws) -> asio::awaitable<void> {
            message msg;
            corows::error_code ec;
            for (;;) {
                ec = co_await corows::test::read_or_closed(ws, msg);
                if (ec) break;
                std::tie(ec) = co_await ws.write_message(msg, corows::use_tuple);
                if (ec) break;
            }
            end.set(ws, ec);
        });
    }
    corows::server::event_handlers h;
    h.on_message = [](tcp_ws& ws, const message& msg) { ws.send(msg); };
    h.on_close = [&end](tcp_ws& ws, corows::error_code why) { end.set(ws, why); };
    return std::make_unique<server_thread>(std::move(o), std::move(h));
}

void expect_send_timeout(ending& end) {
    std::lock_guard<std::mutex> lock(end.m);
    BOOST_REQUIRE(end.why.has_value());
    BOOST_TEST_MESSAGE("  server side: " << end.why->describe());
    BOOST_TEST(end.why->code == 1008);
    BOOST_TEST(end.why->reason == "too slow: send timeout");
    BOOST_TEST(end.why->error == make_error_code(corows::error::send_timeout));
    BOOST_TEST(!end.why->remote);
    BOOST_TEST((end.why->by == corows::ended_by::slow_consumer));
    BOOST_TEST((end.why->phase == corows::close_phase::open));
    BOOST_TEST(end.reported == make_error_code(corows::error::send_timeout));
}

// What the connection carried, as closed_why() tells it.
void expect_traffic(const corows::close_info& why, std::uint64_t messages_in, std::uint64_t bytes_in,
                    std::uint64_t messages_out, std::uint64_t bytes_out) {
    BOOST_TEST(why.traffic.messages_received == messages_in);
    BOOST_TEST(why.traffic.payload_bytes_received == bytes_in);
    BOOST_TEST(why.traffic.messages_sent == messages_out);
    BOOST_TEST(why.traffic.payload_bytes_sent == bytes_out);
}

// A peer sends one 8 MiB message and never reads the echo: the echo stalls (a direct write
// from the handler's message in coroutine mode, a queued copy in event mode), and the
// connection must end within the 400 ms deadline, not at the 60 s idle timeout.
void never_reads_the_echo(mode m) {
    BOOST_TEST_MESSAGE("a peer that never reads its echo, " << name(m));
    corows::server_options so;
    so.connection.send_timeout = 400ms;
    ending end;
    auto srv = echo_server(m, so, end);
    lazy_peer peer(srv->port(), 16 * KiB);
    const bytes big(8 * MiB, 'x');
    BOOST_REQUIRE(peer.send(zero_key_frame(0x82, big)));
    BOOST_TEST(wait_until([&] { return end.seen(); }, 10s), "not closed within 10 s");
    expect_send_timeout(end);
    // The message and its echo, which the peer never took, counted as sent all the same.
    std::lock_guard<std::mutex> lock(end.m);
    expect_traffic(*end.why, 1, big.size(), 1, big.size());
}

// A peer reads a 1 MiB message a little at a time, every 100 ms (some 4 s for all of it with
// small buffers on both ends), under a 1 s deadline (ten times the gap between its reads, for
// loaded and sanitized runs): it makes progress, so it is not cut.
// With a `frame_size`, the server sends the message in fragments (a direct write's parts, in
// coroutine mode): progress carries from one part to the next.
void reads_slowly_but_steadily(mode m, std::size_t frame_size = 0) {
    BOOST_TEST_MESSAGE("a slow but steady reader, " << name(m) << (frame_size ? ", fragmented" : ""));
    corows::server_options so;
    so.connection.send_timeout = 1000ms;
    so.connection.send_buffer_size = 16 * KiB;
    so.connection.frame_size = frame_size;
    ending end;
    auto srv = echo_server(m, so, end);
    lazy_peer peer(srv->port(), 16 * KiB);
    const bytes big(1 * MiB, 'y');
    BOOST_REQUIRE(peer.send(zero_key_frame(0x82, big)));
    // Unfragmented: 0x82, 127, an 8-byte length, the payload. In fragments under 64 KiB: a
    // 4-byte header each.
    const std::size_t whole = frame_size ? big.size() / frame_size * (4 + frame_size) : 10 + big.size();
    bytes got;
    auto start = std::chrono::steady_clock::now();
    while (got.size() < whole) {
        std::this_thread::sleep_for(100ms);
        if (peer.read_some(std::min<std::size_t>(32 * KiB, whole - got.size()), got) == 0) break;
    }
    auto took = std::chrono::steady_clock::now() - start;
    BOOST_TEST_MESSAGE("  read " << got.size() << " bytes in "
                                 << std::chrono::duration_cast<milliseconds>(took).count() << " ms");
    BOOST_REQUIRE(got.size() == whole);
    if (frame_size) {
        BOOST_TEST(got[0] == 0x02);                                // binary, more to come
        BOOST_TEST(got[whole - 4 - frame_size] == 0x80);           // the final continuation
    } else {
        BOOST_TEST(got[0] == 0x82);
        BOOST_TEST(std::equal(got.begin() + 10, got.end(), big.begin()));
    }
    // Still open: a small message is echoed.
    BOOST_REQUIRE(peer.send(text_frame("still")));
    bytes echo;
    while (echo.size() < 7 && peer.read_some(7 - echo.size(), echo) > 0) {
    }
    BOOST_TEST(echo == (bytes{0x81, 0x05, 's', 't', 'i', 'l', 'l'}));
    BOOST_TEST(!end.seen(), "the steady reader was closed");
}

} // namespace

BOOST_AUTO_TEST_SUITE(send_timeout)

BOOST_AUTO_TEST_CASE(a_peer_that_never_reads_its_echo_is_closed_with_1008_within_the_deadline) {
    never_reads_the_echo(mode::coroutines);
    never_reads_the_echo(mode::events);
}

BOOST_AUTO_TEST_CASE(a_slow_but_steady_reader_of_a_large_message_is_not_cut,
                     *boost::unit_test::label("slow")) {
    reads_slowly_but_steadily(mode::coroutines);
    reads_slowly_but_steadily(mode::events);
    // Parts smaller than the send buffer: each goes out in one write_some once there is room.
    reads_slowly_but_steadily(mode::coroutines, 4 * KiB);
}

// A hub subscriber that never reads, with small buffers: the publisher's messages stall its
// writes long before its queue reaches write_queue_limit (the hub's own slow-consumer check),
// and the send timeout tells it "too slow" within the deadline.
BOOST_AUTO_TEST_CASE(a_hub_subscriber_that_never_reads_is_told_too_slow) {
    corows::hub hub;
    corows::server_options so;
    so.connection.send_timeout = 400ms;
    so.connection.send_buffer_size = 4 * KiB;
    ending end;
    std::atomic<int> joined{0};
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        hub.subscribe(ws, "feed");
        ++joined;
        message msg;
        corows::error_code ec;
        while (!ec) ec = co_await corows::test::read_or_closed(ws, msg);
        end.set(ws, ec);
    });
    lazy_peer sub(st.port(), 4 * KiB);
    BOOST_REQUIRE(wait_until([&] { return joined == 1; }, 10s));
    // 1 KiB every 2 ms, 700 KiB at most: under the 1 MiB queue limit however it goes.
    const bytes payload(KiB, 'z');
    for (int i = 0; i < 700 && !end.seen(); ++i) {
        hub.publish("feed", payload, message_kind::binary);
        std::this_thread::sleep_for(2ms);
    }
    BOOST_TEST(wait_until([&] { return end.seen(); }, 10s), "the subscriber was not closed");
    std::lock_guard<std::mutex> lock(end.m);
    BOOST_REQUIRE(end.why.has_value());
    BOOST_TEST_MESSAGE("  subscriber: " << end.why->describe());
    BOOST_TEST(end.why->code == 1008);
    BOOST_TEST(end.why->reason == "too slow: send timeout");
    BOOST_TEST(end.why->error == make_error_code(corows::error::send_timeout));
    BOOST_TEST((end.why->by == corows::ended_by::slow_consumer));
    BOOST_TEST((end.why->phase == corows::close_phase::open));
    BOOST_TEST(end.why->traffic.messages_received == 0u);
    BOOST_TEST(end.why->traffic.messages_sent >= 1u);
    BOOST_TEST(end.why->traffic.payload_bytes_sent == end.why->traffic.messages_sent * KiB);
    BOOST_TEST(end.reported == make_error_code(corows::error::send_timeout));
}

// The option reaches the socket in both roles (Linux reports twice the value asked for, its
// bookkeeping included).
BOOST_AUTO_TEST_CASE(a_peers_close_and_an_idle_timeout_are_told_apart_from_a_slow_consumer) {
    // What the handler sees in closed_why().by, in both modes: the peer's close, and our idle
    // timeout (the slow consumer is the cases above).
    for (mode m : {mode::coroutines, mode::events}) {
        BOOST_TEST_MESSAGE("endings, " << name(m));
        {
            // Three messages of 1, 10 and 100 bytes, each echoed, then the peer's 1001.
            ending end;
            auto srv = echo_server(m, corows::server_options{}, end);
            lazy_peer peer(srv->port(), 16 * KiB);
            const std::size_t sizes[] = {1, 10, 100};
            for (std::size_t n : sizes) BOOST_REQUIRE(peer.send(text_frame(std::string(n, 'm'))));
            const bytes going_away{0x03, 0xe9};
            BOOST_REQUIRE(peer.send(zero_key_frame(0x88, going_away)));
            BOOST_REQUIRE(wait_until([&] { return end.seen(); }, 10s));
            std::lock_guard<std::mutex> lock(end.m);
            BOOST_TEST((end.why->by == corows::ended_by::peer));
            BOOST_TEST((end.why->phase == corows::close_phase::open));
            BOOST_TEST(end.why->code == 1001);
            expect_traffic(*end.why, 3, 111, 3, 111);
            BOOST_TEST(end.why->describe() == "closed by the peer with 1001; received 3 messages (111 bytes), sent 3 messages (111 bytes)");
        }
        {
            corows::server_options so;
            so.connection.idle_timeout = 200ms;
            so.connection.ping_interval = 0ms;
            ending end;
            auto srv = echo_server(m, so, end);
            lazy_peer peer(srv->port(), 16 * KiB);
            BOOST_REQUIRE(wait_until([&] { return end.seen(); }, 10s));
            std::lock_guard<std::mutex> lock(end.m);
            BOOST_TEST((end.why->by == corows::ended_by::timeout));
            BOOST_TEST((end.why->phase == corows::close_phase::open));
            BOOST_TEST(end.why->code == 1006);
            expect_traffic(*end.why, 0, 0, 0, 0);
            BOOST_TEST(end.why->describe() == "closed by us with 1006: " + make_error_code(corows::error::timeout).message() +
                                                  "; received 0 messages (0 bytes), sent 0 messages (0 bytes)");
        }
    }
}

BOOST_AUTO_TEST_CASE(send_buffer_size_is_set_on_both_ends) {
    corows::server_options so;
    so.connection.send_buffer_size = 32 * KiB;
    std::atomic<int> server_side{-1};
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        asio::socket_base::send_buffer_size opt;
        ws.next_layer().get_option(opt);
        server_side = opt.value();
        message msg;
        while (co_await ws.read_message(msg)) co_await ws.write_message(msg);
    });
    int client_side = -1, client_default = -1;
    std::size_t ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        corows::options o;
        o.send_buffer_size = 24 * KiB;
        tcp_ws ws = co_await connect_ws_to(st.port(), o);
        asio::socket_base::send_buffer_size opt;
        ws.next_layer().get_option(opt);
        client_side = opt.value();
        tcp_ws plain = co_await connect_ws_to(st.port(), corows::options{});
        plain.next_layer().get_option(opt);
        client_default = opt.value();
        co_await ws.close(1000, "");
        co_await plain.close(1000, "");
    }, 20s);
    BOOST_REQUIRE(ok == 1u);
    BOOST_TEST(wait_until([&] { return server_side != -1; }, 5s));
    // Linux doubles it; other kernels (and gVisor's) report it as set.
    BOOST_TEST((server_side == static_cast<int>(32 * KiB) || server_side == static_cast<int>(2 * 32 * KiB)));
    BOOST_TEST((client_side == static_cast<int>(24 * KiB) || client_side == static_cast<int>(2 * 24 * KiB)));
    BOOST_TEST(client_default != client_side); // 0 leaves the kernel's default
}

BOOST_AUTO_TEST_SUITE_END()
