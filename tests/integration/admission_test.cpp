// SPDX-License-Identifier: BSL-1.0
// Admission control of corows::server (server_options' max_connections,
// max_connections_per_address, max_handshakes; the idle timeout and keepalive on by default):
// each limit holds against a peer that tries to take everything, and service comes back once
// the squatters leave. The cases that need Linux (the acceptor out of descriptors, a Unix
// domain socket server) are in descriptor_limit_test.cpp and unix_server_admission_test.cpp.

#include <corows/detail/admission.hpp>
#include <corows/detail/listener.hpp>
#include <corows/server.hpp>

#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::test::connect_raw_to;
using corows::test::connect_ws_to;
using corows::test::raw_peer;
using corows::test::run_clients;
using corows::test::server_thread;
using corows::test::wait_until;
using tcp = asio::ip::tcp;
using tcp_ws = corows::websocket<tcp::socket>;

asio::awaitable<void> echo(tcp_ws& ws) {
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

// A socket connected from `source` (a loopback address) to 127.0.0.1:`port`.
asio::awaitable<tcp::socket> connect_from(unsigned short port, const char* source) {
    tcp::socket sock(co_await asio::this_coro::executor);
    sock.open(tcp::v4());
    sock.bind({asio::ip::make_address(source), 0});
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    co_return sock;
}

// Runs `client` as a test's one client, which must finish within `limit` without an error.
void as_one_client(const std::function<asio::awaitable<void>()>& client, std::chrono::milliseconds limit) {
    auto ok = run_clients(1, [&](std::size_t) { return client(); }, limit);
    BOOST_TEST(ok == 1u);
}

// The answer to an upgrade from `source` (a loopback address) to 127.0.0.1:`port`: 101, or
// the refusal's status.
struct upgrade_result {
    unsigned status = 0;
    std::string retry_after;
    std::optional<tcp_ws> ws;
};

asio::awaitable<upgrade_result> try_upgrade(unsigned short port, const char* source = "127.0.0.1") {
    upgrade_result r;
    r.ws.emplace(co_await connect_from(port, source));
    corows::http_response res;
    corows::error_code ec;
    std::tie(ec) = co_await r.ws->handshake("127.0.0.1:" + std::to_string(port), "/", corows::handshake_request{}, res, corows::use_tuple);
    r.status = res.status;
    if (auto v = res.find("Retry-After")) r.retry_after = std::string(*v);
    if (ec) {
        if (ec != corows::error::bad_status) throw corows::system_error(ec);
        r.ws.reset();
    }
    co_return r;
}

// The first upgrade within `limit` that is not refused.
asio::awaitable<tcp_ws> upgrade_when_admitted(unsigned short port, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
        auto r = co_await try_upgrade(port);
        if (r.ws) co_return std::move(*r.ws);
        if (std::chrono::steady_clock::now() > end) throw std::runtime_error("still refused");
        co_await corows::test::sleep(20ms);
    }
}

asio::awaitable<void> expect_echo(tcp_ws& ws, std::string text) {
    co_await ws.write_text(text);
    auto m = co_await ws.read_message();
    if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
}

// `n` upgraded connections to 127.0.0.1:`port`, held open.
asio::awaitable<std::vector<tcp_ws>> hold(unsigned short port, int n) {
    std::vector<tcp_ws> held;
    for (int i = 0; i < n; ++i) held.push_back(co_await connect_ws_to(port, corows::options{}));
    co_return held;
}

// The newest of `held` leaves; a new client is then admitted within 2 s and echoes `text`.
asio::awaitable<void> one_leaves_and_another_is_served(std::vector<tcp_ws>& held, unsigned short port,
                                                       std::string text) {
    co_await held.back().close(1000, "");
    held.pop_back();
    auto again = co_await upgrade_when_admitted(port, 2s);
    co_await expect_echo(again, std::move(text));
}

// Opens `n` connections from `source` that never finish a request (every other one sends
// half a head, as a trickling attacker's first bytes), and holds them in `held`.
asio::awaitable<void> squat(unsigned short port, std::size_t n, std::vector<tcp::socket>& held,
                            const char* source = "127.0.0.1") {
    static constexpr std::string_view half = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (std::size_t i = 0; i < n; ++i) {
        tcp::socket sock = co_await connect_from(port, source);
        if (i % 2) co_await asio::async_write(sock, asio::buffer(half.data(), half.size()), asio::use_awaitable);
        held.push_back(std::move(sock));
    }
}

// A raw peer connected from `source` to 127.0.0.1:`port`.
asio::awaitable<raw_peer> connect_raw_from(unsigned short port, const char* source) {
    co_return raw_peer(co_await connect_from(port, source));
}

// An upgrade request for `target`, as a raw peer sends it.
std::string upgrade_head(std::string_view target) {
    return "GET " + std::string(target) +
           " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

// Reads until the peer ends the connection or `limit` passes; true if it ended.
asio::awaitable<bool> ended_within(raw_peer& p, std::chrono::milliseconds limit) {
    p.set_timeout(limit);
    for (;;) {
        const bool more = co_await p.fill();
        if (!more) break;
    }
    const bool ended = p.last_error() != asio::error::timed_out;
    co_return ended;
}

// How long an honest client takes to connect, upgrade and get an echo.
asio::awaitable<std::chrono::milliseconds> honest_round(unsigned short port) {
    auto start = std::chrono::steady_clock::now();
    auto ws = co_await connect_ws_to(port, corows::options{});
    co_await expect_echo(ws, "honest");
    co_return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

// An honest client's round must take less than `limit`; `waited` begins the message if not.
asio::awaitable<void> expect_honest_round_within(unsigned short port, std::chrono::milliseconds limit,
                                                 const char* waited) {
    auto took = co_await honest_round(port);
    BOOST_TEST((took < limit), waited << took.count() << " ms");
}

// 16 handshake slots and a 10 s handshake timeout, for hundreds of squatters (whose descriptors
// the raised limit allows): the timeout cuts none of them while a test runs.
corows::server_options against_squatters() {
    corows::test::raise_fd_limit();
    corows::server_options o;
    o.max_handshakes = 16;
    o.connection.handshake_timeout = 10s;
    return o;
}


} // namespace

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(the_counters_keep_each_limit_and_give_back_what_they_took) {
    corows::detail::admission a({.connections = 3, .per_address = 2, .handshakes = 2});
    using corows::detail::refusal;
    BOOST_TEST((a.admit("a") == refusal::none));
    BOOST_TEST((a.admit("a") == refusal::none));
    BOOST_TEST((a.admit("a") == refusal::per_address));
    BOOST_TEST((a.admit("b") == refusal::none));
    BOOST_TEST((a.admit("c") == refusal::connections));
    BOOST_TEST(a.open() == 3u);
    BOOST_TEST(a.addresses() == 2u);
    a.release("a");
    BOOST_TEST((a.admit("c") == refusal::none));
    a.release("a");
    a.release("b");
    a.release("c");
    BOOST_TEST(a.open() == 0u);
    BOOST_TEST(a.addresses() == 0u, "an address without connections is forgotten");

    BOOST_TEST(a.try_begin_handshake());
    BOOST_TEST(a.try_begin_handshake());
    BOOST_TEST(!a.try_begin_handshake(), "a third handshake counted beyond 2");
    BOOST_TEST(a.handshaking() == 2u);
    a.begin_handshake(); // a thread with nothing to shed counts beyond, another gives one back
    BOOST_TEST(a.handshaking() == 3u);
    a.end_handshake();
    a.end_handshake();
    BOOST_TEST(a.try_begin_handshake());
    a.end_handshake();
    a.end_handshake();
    BOOST_TEST(a.handshaking() == 0u);

    // The automatic limit keeps a reserve of descriptors for refusals and the process.
    BOOST_TEST(corows::detail::descriptor_reserve(1024) == 102u);
    BOOST_TEST(corows::detail::descriptor_reserve(100) == 32u);
    const auto limit = corows::test::os_descriptor_limit();
    BOOST_TEST(corows::detail::connections_for_descriptor_limit() ==
               limit - corows::detail::descriptor_reserve(limit));
}

BOOST_AUTO_TEST_CASE(beyond_max_connections_a_client_gets_503_until_one_leaves) {
    corows::server_options o;
    o.max_connections = 3;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        auto held = co_await hold(port, 3);
        auto refused = co_await try_upgrade(port);
        BOOST_TEST(refused.status == 503u);
        BOOST_TEST(refused.retry_after == "1");
        // The ones admitted are served as before.
        for (auto& ws : held) co_await expect_echo(ws, "still here");
        co_await one_leaves_and_another_is_served(held, port, "admitted");
    }, 20s);
}

BOOST_AUTO_TEST_CASE(beyond_max_connections_per_address_that_address_gets_429) {
    corows::server_options o;
    o.max_connections_per_address = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        auto held = co_await hold(port, 2);
        auto refused = co_await try_upgrade(port);
        BOOST_TEST(refused.status == 429u);
        // Another address (all of 127/8 is loopback) is admitted.
        auto other = co_await try_upgrade(port, "127.0.0.2");
        BOOST_TEST(other.status == 101u);
        BOOST_REQUIRE(other.ws);
        co_await expect_echo(*other.ws, "from elsewhere");
        co_await one_leaves_and_another_is_served(held, port, "admitted again");
    }, 20s);
}

BOOST_AUTO_TEST_CASE(with_every_handshake_slot_taken_the_oldest_handshake_is_shed) {
    // Two peers connect and say nothing, taking both slots: a third is accepted at once, and
    // the one that has waited longest gives up its slot to it and is cut.
    corows::server_options o;
    o.max_handshakes = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        raw_peer a = co_await connect_raw_to(port);
        co_await corows::test::sleep(50ms); // a accepted before b
        raw_peer b = co_await connect_raw_to(port);
        // Both accepted, and older than the age below which a handshake is not shed while
        // fewer than twice max_handshakes are in progress (an honest burst's round trip).
        co_await corows::test::sleep(1100ms);
        co_await expect_honest_round_within(port, 1000ms, "the third client waited ");
        const bool a_ended = co_await ended_within(a, 1000ms);
        BOOST_TEST(a_ended, "the oldest squatter kept its slot");
        const bool b_ended = co_await ended_within(b, 100ms);
        BOOST_TEST(!b_ended, "the newer squatter was cut too");
        BOOST_TEST(st.server().shed() == 1u);
    }, 8s);
}

BOOST_AUTO_TEST_CASE(hundreds_of_squatters_do_not_delay_an_honest_client) {
    // 200 connections that never finish a request, held open, against 16 slots and a 10 s
    // handshake timeout (on two threads, so that one thread sheds for the other): an
    // honest client is served at once, not after rounds of timeouts.
    corows::server_options o = against_squatters();
    o.threads = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        std::vector<tcp::socket> held;
        co_await squat(port, 200, held);
        co_await corows::test::sleep(200ms);
        for (int round = 0; round < 3; ++round)
            co_await expect_honest_round_within(port, 2000ms, "an honest client waited ");
        // 184 when every extra connection found one to shed; a thread whose peer held none at
        // that moment counts one beyond the limit instead.
        BOOST_TEST((st.server().shed() >= 100u), "shed " << st.server().shed());
    }, 8s);
}

BOOST_AUTO_TEST_CASE(squatters_from_many_addresses_meet_the_per_address_limit_at_accept) {
    // 100 source addresses with two squatters each (the limit), 16 slots: a third connection
    // from the last of them is answered 429 at once although every slot is taken, and an
    // honest client from yet another address is served at once.
    corows::server_options o = against_squatters();
    o.max_connections_per_address = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        std::vector<tcp::socket> held;
        std::vector<std::string> sources;
        for (int i = 2; i < 102; ++i) sources.push_back("127.0.0." + std::to_string(i));
        for (const auto& src : sources) co_await squat(port, 2, held, src.c_str());
        co_await corows::test::sleep(200ms);
        // The newest squatters hold the slots (the older ones were shed and their count
        // given back): a third from their address is refused, not accepted into a slot.
        raw_peer extra = co_await connect_raw_from(port, sources.back().c_str());
        extra.set_timeout(1000ms);
        co_await extra.fill();
        BOOST_TEST(extra.buffered().starts_with("HTTP/1.1 429"), "got: " << extra.buffered());
        co_await expect_honest_round_within(port, 2000ms, "an honest client waited ");
        BOOST_TEST(st.server().shed() > 0u);
    }, 8s);
}

BOOST_AUTO_TEST_CASE(ipv6_peers_count_by_their_64_and_mapped_ipv4_as_ipv4) {
    auto key = [](const char* a) { return corows::detail::address_key(asio::ip::make_address(a)); };
    BOOST_TEST(key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "one /64, two keys");
    BOOST_TEST(key("2001:db8:1:2::1") != key("2001:db8:1:3::1"), "two /64s, one key");
    BOOST_TEST(key("::ffff:192.0.2.7") == "192.0.2.7");
    BOOST_TEST(key("192.0.2.7") == "192.0.2.7");
    BOOST_TEST(key("192.0.2.7") != key("192.0.2.8"));
    BOOST_TEST(key("::ffff:192.0.2.7") != key("::ffff:192.0.2.8"), "IPv4-mapped cut to a /64");
    corows::detail::admission a({.connections = 0, .per_address = 1, .handshakes = 0});
    BOOST_TEST((a.admit(key("2001:db8::1")) == corows::detail::refusal::none));
    BOOST_TEST((a.admit(key("2001:db8::2")) == corows::detail::refusal::per_address));
}

asio::awaitable<void> raw_router(tcp_ws& ws) {
    auto req = co_await ws.read_request();
    while (req.target == "/answer") {
        corows::http_response res;
        res.status = 200;
        res.body = "ok";
        co_await ws.write_response(res);
        req = co_await ws.read_request();
    }
    if (req.target == "/wait") {
        // Decides slowly (an authentication service that hangs, say).
        asio::steady_timer t(co_await asio::this_coro::executor, 3s);
        co_await t.async_wait(asio::use_awaitable);
    }
    co_await ws.accept(std::move(req));
    co_await echo(ws);
}

BOOST_AUTO_TEST_CASE(a_raw_handler_holds_its_slot_until_it_accepts_refuses_or_answers) {
    // One slot. A request whose handler has not decided yet holds it, and is shed by the next
    // connection; a handler that answered plain HTTP, or accepted, holds none any more.
    corows::server_options o;
    o.max_handshakes = 1;
    o.connection.handshake_timeout = 10s;
    server_thread st(o, raw_router, corows::test::raw_handler{});
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        const std::string wait_head = upgrade_head("/wait");
        const std::string answer_head = "GET /answer HTTP/1.1\r\nHost: x\r\n\r\n";
        raw_peer waiting = co_await connect_raw_to(port);
        co_await waiting.send_text(wait_head);
        co_await corows::test::sleep(1100ms); // past the age from which a handshake may be shed
        co_await expect_honest_round_within(port, 1000ms, "waited "); // accepted: its slot ends with the 101
        const bool shed = co_await ended_within(waiting, 1000ms);
        BOOST_TEST(shed, "an undecided raw handshake kept its slot");
        raw_peer answered = co_await connect_raw_to(port);
        co_await answered.send_text(answer_head);
        answered.set_timeout(1000ms);
        co_await answered.fill();
        BOOST_TEST(answered.buffered().starts_with("HTTP/1.1 200"));
        answered.buffered().clear();
        co_await expect_honest_round_within(port, 1000ms, "waited ");
        co_await answered.send_text(answer_head);
        co_await answered.fill();
        BOOST_TEST(answered.buffered().starts_with("HTTP/1.1 200"), "an answered connection was shed");
        BOOST_TEST(st.server().shed() == 1u);
    }, 8s);
}

BOOST_AUTO_TEST_CASE(a_raw_handlers_decision_counts_within_the_handshake_deadline) {
    // read_request() pauses a bare websocket's handshake timer, but a server's deadline from
    // accept still holds while its raw handler decides.
    corows::server_options o;
    o.connection.handshake_timeout = 1000ms;
    server_thread st(o, raw_router, corows::test::raw_handler{});
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        auto start = std::chrono::steady_clock::now();
        const std::string wait_head = upgrade_head("/wait");
        raw_peer waiting = co_await connect_raw_to(port);
        co_await waiting.send_text(wait_head);
        const bool ended = co_await ended_within(waiting, 2500ms);
        BOOST_TEST(ended, "still open");
        auto took = std::chrono::steady_clock::now() - start;
        BOOST_TEST((took >= 900ms && took < 1500ms),
                   "closed after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
        BOOST_TEST(!waiting.buffered().starts_with("HTTP/1.1 101"));
    }, 5s);
}



BOOST_AUTO_TEST_CASE(a_quiet_honest_client_stays_and_a_squatter_is_cut) {
    // The keepalive keeps a client that answers pings; one that completed its handshake,
    // sent half a frame and went quiet is closed by the idle timeout.
    const corows::options defaults;
    BOOST_TEST((defaults.idle_timeout > 0ms), "the idle timeout is off by default");
    BOOST_TEST((defaults.ping_interval > 0ms && defaults.ping_interval < defaults.idle_timeout));
    BOOST_TEST((defaults.ping_interval < 60s), "pings must come inside common proxies' 60 s timeouts");
    const auto scale = defaults.idle_timeout / defaults.ping_interval;

    corows::server_options o;
    o.connection.ping_interval = 250ms;
    o.connection.idle_timeout = o.connection.ping_interval * scale;
    server_thread st(o, echo);
    const auto port = st.port();
    as_one_client([&]() -> asio::awaitable<void> {
        auto honest = co_await connect_ws_to(port, corows::options{});
        raw_peer squatter = co_await connect_raw_to(port);
        co_await squatter.send_text(upgrade_head("/"));
        const std::uint8_t half_header[] = {0x81};
        co_await squatter.send(half_header);
        auto start = std::chrono::steady_clock::now();
        // The honest client only reads (which answers the pings) for three idle timeouts.
        asio::steady_timer stop(co_await asio::this_coro::executor, 3 * o.connection.idle_timeout);
        using namespace asio::experimental::awaitable_operators;
        auto r = co_await (honest.read_message() || stop.async_wait(asio::use_awaitable));
        BOOST_TEST(r.index() == 1u, "the honest client's connection ended");
        co_await expect_echo(honest, "still open");
        // The squatter saw its 101, then the close (or the end) once idle.
        squatter.set_timeout(100ms);
        while (co_await squatter.fill()) {}
        BOOST_TEST(squatter.buffered().starts_with("HTTP/1.1 101"));
        BOOST_TEST((squatter.last_error() == asio::error::eof || squatter.last_error() == asio::error::connection_reset),
                   "squatter still open: " << squatter.last_error().message());
        (void)start;
    }, 20s);
}

BOOST_AUTO_TEST_SUITE_END()
