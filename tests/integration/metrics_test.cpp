// SPDX-License-Identifier: BSL-1.0
// basic_server::metrics() against real connections: what it counts for each way a connection
// is accepted, refused, opened and ended.
#include <corows/metrics.hpp>
#include <corows/server.hpp>

#include "blocking_peer.hpp"
#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using corows::ended_by;
using corows::refusal_reason;

std::uint64_t refused(const corows::server_metrics& m, refusal_reason r) {
    return m.refused[static_cast<std::size_t>(r)];
}
std::uint64_t closed(const corows::server_metrics& m, ended_by e) {
    return m.connections.closed_by[static_cast<std::size_t>(e)];
}

// Sends `head` as a raw peer and reads the status line of the answer (0: none).
asio::awaitable<unsigned> status_for(unsigned short port, std::string head) {
    raw_peer p = co_await connect_raw_to(port);
    co_await p.send_text(head);
    p.set_timeout(5s);
    while (p.buffered().find("\r\n") == std::string::npos && co_await p.fill()) {}
    const std::string& b = p.buffered();
    co_return b.starts_with("HTTP/1.1 ") && b.size() >= 12 ? static_cast<unsigned>(std::stoul(b.substr(9, 3))) : 0u;
}

// Opens a WebSocket to `port`, has `text` echoed, and closes with 1000.
asio::awaitable<void> echo_once(unsigned short port, std::string text) {
    tcp_ws ws = co_await connect_ws_to(port, corows::options{});
    co_await ws.write_text(text);
    auto m = co_await ws.read_message();
    BOOST_TEST((m && m->text() == text));
    co_await ws.close(1000, "");
}

std::string upgrade_to(std::string_view target, std::string_view version = "HTTP/1.1") {
    return "GET " + std::string(target) + " " + std::string(version) +
           "\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

} // namespace

BOOST_AUTO_TEST_SUITE(metrics)

BOOST_AUTO_TEST_CASE(a_server_counts_its_accepts_refusals_handshakes_and_websockets) {
    corows::server_options o;
    o.on_upgrade = [](const corows::http_request& req) {
        return req.target == "/no" ? corows::upgrade_answer::refuse(403) : corows::upgrade_answer{};
    };
    server_thread st(o, echo_messages);
    const auto port = st.port();
    BOOST_TEST(st.server().metrics().accepted == 0u);
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        BOOST_TEST(co_await status_for(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 400u);
        BOOST_TEST(co_await status_for(port, upgrade_to("/", "HTTP/2.0")) == 505u);
        BOOST_TEST(co_await status_for(port, upgrade_to("/no")) == 403u);
        {
            raw_peer gone = co_await connect_raw_to(port); // connects, then leaves without a word
        }
        co_await echo_once(port, "hello");
    }, 20s);
    BOOST_TEST(ok == 1u);
    auto& srv = st.server();
    BOOST_TEST(wait_until([&] {
        auto m = srv.metrics();
        return m.connections.closed() == 1 && refused(m, refusal_reason::abandoned) == 1;
    }, 5s));
    const auto m = srv.metrics();
    BOOST_TEST(m.accepted == 5u);
    BOOST_TEST(refused(m, refusal_reason::bad_request) == 1u);
    BOOST_TEST(refused(m, refusal_reason::http_version) == 1u);
    BOOST_TEST(refused(m, refusal_reason::application) == 1u);
    BOOST_TEST(refused(m, refusal_reason::abandoned) == 1u);
    BOOST_TEST(refused(m, refusal_reason::connection_limit) == 0u);
    BOOST_TEST(m.handshakes_in_progress == 0u);
    BOOST_TEST(m.handshake_duration.count() == 1u);
    BOOST_TEST(m.handshake_duration.sum.count() > 0);
    BOOST_TEST(m.connections.opened == 1u);
    BOOST_TEST(m.connections.open() == 0u);
    BOOST_TEST(closed(m, ended_by::peer) == 1u);
    BOOST_TEST(m.connections.closed_by_code[corows::code_slot(1000)] == 1u);
    BOOST_TEST(m.connections.messages_received == 1u);
    BOOST_TEST(m.connections.messages_sent == 1u);
    BOOST_TEST(m.connections.payload_bytes_received == 5u);
    // The client's frame is masked (6 bytes of header), the server's echo is not (2 bytes);
    // then the close frames, 8 bytes in and 4 out.
    BOOST_TEST(m.connections.wire_bytes_received == 11u + 8u);
    BOOST_TEST(m.connections.wire_bytes_sent == 7u + 4u);
    BOOST_TEST(m.connections.frames_received == 2u); // the text and the close
    BOOST_TEST(m.connections.frames_sent == 2u);
    BOOST_TEST(m.connections.queued_output_bytes == 0u);
    BOOST_TEST(m.tls_handshakes == 0u);
    BOOST_TEST(m.tls_handshake_failures == 0u);
}

BOOST_AUTO_TEST_CASE(limits_refuse_with_their_own_reason) {
    corows::server_options o;
    o.max_connections_per_address = 1;
    server_thread st(o, echo_messages);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws first = co_await connect_ws_to(port, corows::options{});
        BOOST_TEST(co_await status_for(port, upgrade_to("/")) == 429u);
        co_await first.close(1000, "");
    }, 20s);
    BOOST_TEST(ok == 1u);
    const auto m = st.server().metrics();
    BOOST_TEST(m.accepted == 2u);
    BOOST_TEST(refused(m, refusal_reason::address_limit) == 1u);
    BOOST_TEST(m.connections.opened == 1u);
}

BOOST_AUTO_TEST_CASE(an_idle_peer_ends_by_timeout_and_a_silent_handshake_by_handshake_timeout) {
    corows::server_options o;
    o.connection.idle_timeout = 200ms;
    o.connection.ping_interval = 0ms;
    o.connection.handshake_timeout = 200ms;
    server_thread st(o, echo_messages);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        raw_peer quiet = co_await connect_raw_to(port);
        co_await quiet.send_text(upgrade_to("/"));
        raw_peer silent = co_await connect_raw_to(port); // never sends its request
        quiet.set_timeout(5s);
        silent.set_timeout(5s);
        while (co_await quiet.fill()) {}
        while (co_await silent.fill()) {}
    }, 20s);
    BOOST_TEST(ok == 1u);
    auto& srv = st.server();
    // The refusal is counted when the server's handshake coroutine resumes, which may be after
    // the client saw its connection end.
    BOOST_TEST(wait_until([&] {
        const auto m = srv.metrics();
        return m.connections.closed() == 1 && refused(m, refusal_reason::handshake_timeout) == 1;
    }, 5s));
    const auto m = srv.metrics();
    BOOST_TEST(closed(m, ended_by::timeout) == 1u);
    BOOST_TEST(m.connections.closed_by_code[corows::code_slot(1006)] == 1u);
    BOOST_TEST(refused(m, refusal_reason::handshake_timeout) == 1u);
}

BOOST_AUTO_TEST_CASE(queued_output_counts_while_a_peer_does_not_read_and_returns_to_zero_when_it_leaves) {
    // Event mode queues the echo whole (a coroutine's large echo would go out directly).
    corows::server::event_handlers h;
    h.on_message = [](tcp_ws& ws, const corows::message& m) { ws.send(m); };
    server_thread st(corows::server_options{}, std::move(h));
    auto& srv = st.server();
    const bytes big(8 * 1024 * 1024, 'x');
    const std::uint64_t frame = 10 + big.size(); // 0x82, 127, 8 bytes of length, the payload
    {
        blocking_peer peer(st.port(), 16 * 1024);
        peer.upgrade(st.port());
        BOOST_REQUIRE(peer.send(zero_key_frame(0x82, big)));
        // The kernel takes some of it, but the write that holds it is not done: all of it counts.
        BOOST_TEST(wait_until([&] { return srv.metrics().connections.queued_output_bytes == frame; }, 10s),
                   srv.metrics().connections.queued_output_bytes);
        BOOST_TEST(srv.metrics().connections.open() == 1u);
    } // leaves with megabytes unread
    BOOST_TEST(wait_until([&] {
        const auto m = srv.metrics();
        return m.connections.closed() == 1 && m.connections.queued_output_bytes == 0;
    }, 10s), srv.metrics().connections.queued_output_bytes);
}

BOOST_AUTO_TEST_CASE(run_http_counts_the_handshake_its_handler_accepts) {
    server_thread st(corows::server_options{}, [](tcp_ws& ws) -> asio::awaitable<void> {
        auto [ec, req] = co_await ws.read_request(corows::use_tuple);
        if (ec) co_return;
        if (req.target == "/plain") { // answered without an upgrade: no handshake to time
            corows::http_response res;
            res.body = "ok";
            co_await ws.write_response(res, corows::use_tuple);
            co_return;
        }
        auto [aec] = co_await ws.accept(req, corows::accept_decision(), corows::use_tuple);
        if (aec) co_return;
        corows::message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    }, raw_handler{});
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        BOOST_TEST(co_await status_for(port, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n") == 200u);
        co_await echo_once(port, "timed");
    }, 20s);
    BOOST_TEST(ok == 1u);
    auto& srv = st.server();
    BOOST_TEST(wait_until([&] { return srv.metrics().connections.closed() == 1; }, 5s));
    const auto m = srv.metrics();
    BOOST_TEST(m.accepted == 2u);
    BOOST_TEST(m.connections.opened == 1u);
    BOOST_TEST(m.handshake_duration.count() == 1u);
    BOOST_TEST(m.handshake_duration.sum.count() > 0);
    BOOST_TEST(m.handshake_duration.sum < std::chrono::nanoseconds(20s));
}

BOOST_AUTO_TEST_SUITE_END()
