// SPDX-License-Identifier: BSL-1.0
// server_options::log against real connections: what a refusal, an ending and a violation
// write, and a flood of bad requests held to the rate limit with the rest counted.
#include <corows/log.hpp>
#include <corows/server.hpp>

#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using corows::log_category;
using corows::log_level;

// What a sink received, copied (a record's views live during the call only).
struct kept {
    log_level level;
    log_category category;
    std::uint64_t connection;
    std::string peer;
    std::string message;
    std::uint64_t suppressed;
};

struct log_box {
    std::mutex m;
    std::vector<kept> records;

    corows::log_sink sink() {
        return [this](const corows::log_record& r) {
            std::lock_guard<std::mutex> lock(m);
            records.push_back({r.level, r.category, r.connection, std::string(r.peer), std::string(r.message),
                               r.suppressed});
        };
    }
    std::vector<kept> of(log_category c) {
        std::lock_guard<std::mutex> lock(m);
        std::vector<kept> out;
        for (const auto& r : records)
            if (r.category == c) out.push_back(r);
        return out;
    }
};

// Sends `head` as a raw peer and waits for the server to answer and close.
asio::awaitable<void> send_and_wait(unsigned short port, std::string head) {
    raw_peer p = co_await connect_raw_to(port);
    co_await p.send_text(head);
    p.set_timeout(5s);
    while (co_await p.fill()) {}
}

const std::string not_an_upgrade = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string upgrade = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

} // namespace

BOOST_AUTO_TEST_SUITE(server_log)

BOOST_AUTO_TEST_CASE(a_refusal_an_ending_and_a_violation_are_logged_with_their_reasons) {
    log_box box;
    corows::server_options o;
    o.log.sink = box.sink();
    o.log.level = log_level::debug;
    server_thread st(o, echo_messages);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        co_await send_and_wait(port, not_an_upgrade);
        tcp_ws ws = co_await connect_ws_to(port, corows::options{});
        co_await ws.write_text("hi");
        co_await ws.read_message();
        co_await ws.close(1000, "bye");
        // A client frame without a mask breaks RFC 6455 §5.1: the server fails it with 1002.
        raw_peer bad = co_await connect_raw_to(port);
        co_await bad.send_text(upgrade);
        const std::uint8_t unmasked[] = {0x81, 0x01, 'x'};
        co_await bad.send(unmasked);
        bad.set_timeout(5s);
        while (co_await bad.fill()) {}
    }, 20s);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(wait_until([&] { return box.of(log_category::protocol).size() == 1 &&
                                       box.of(log_category::connection).size() >= 3; }, 5s));
    const auto refusals = box.of(log_category::refusal);
    BOOST_REQUIRE(refusals.size() == 1u);
    BOOST_TEST((refusals[0].level == log_level::info));
    BOOST_TEST(refusals[0].message.find("refused: bad_request: ") == 0u, refusals[0].message);
    BOOST_TEST(refusals[0].message.find("(RFC 6455 §4.2.1)") != std::string::npos, refusals[0].message);
    BOOST_TEST(refusals[0].peer.find("127.0.0.1:") == 0u, refusals[0].peer);
    BOOST_TEST(refusals[0].connection == 1u);

    const auto connections = box.of(log_category::connection);
    // The echo client: opened (debug), then its ending (info) with who ended it.
    BOOST_TEST((connections[0].level == log_level::debug));
    BOOST_TEST(connections[0].message == "opened");
    BOOST_TEST(connections[0].connection == 2u);
    BOOST_TEST((connections[1].level == log_level::info));
    // What it carried: "hi" and its echo.
    BOOST_TEST(connections[1].message ==
               "closed by the peer with 1000 (bye); received 1 message (2 bytes), sent 1 message (2 bytes) [peer]");
    BOOST_TEST(connections[1].connection == 2u);
    BOOST_TEST(connections[1].peer == connections[0].peer);

    const auto violations = box.of(log_category::protocol);
    BOOST_TEST((violations[0].level == log_level::warning));
    BOOST_TEST(violations[0].connection == 3u);
    BOOST_TEST(violations[0].message == "protocol error: client frame is not masked (RFC 6455 §5.1); closed with 1002");
}

BOOST_AUTO_TEST_CASE(an_unanswered_close_is_logged_with_its_phase_and_what_it_carried) {
    // The server echoes one message and closes; the peer never answers the close, so the
    // close timeout ends it in the closing phase, which the record says.
    log_box box;
    corows::server_options o;
    o.log.sink = box.sink();
    o.log.level = log_level::info;
    o.connection.close_timeout = 300ms;
    server_thread st(o, [](tcp_ws& ws) -> asio::awaitable<void> {
        corows::message m;
        if (co_await corows::test::read_or_closed(ws, m)) co_return;
        co_await ws.write_message(m);
        (void)ws.start_close(1000, "done");
        while (!co_await corows::test::read_or_closed(ws, m)) {}
    });
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        raw_peer quiet = co_await connect_raw_to(port);
        co_await quiet.send_text(upgrade);
        const std::uint8_t ping[] = {0x81, 0x84, 0, 0, 0, 0, 'p', 'i', 'n', 'g'}; // masked with a zero key
        co_await quiet.send(ping);
        quiet.set_timeout(5s);
        while (co_await quiet.fill()) {}
    }, 20s);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(wait_until([&] { return !box.of(log_category::connection).empty(); }, 5s));
    const auto connections = box.of(log_category::connection);
    BOOST_REQUIRE(connections.size() == 1u);
    BOOST_TEST(connections[0].message == "closed by us with 1000 (done), the peer's close frame never came: " +
                                             make_error_code(corows::error::timeout).message() +
                                             "; received 1 message (4 bytes), sent 1 message (4 bytes) [timeout]");
}

BOOST_AUTO_TEST_CASE(a_flood_of_bad_requests_is_held_to_the_rate_limit_and_counted) {
    log_box box;
    corows::server_options o;
    o.log.sink = box.sink();
    o.log.burst = 5;
    o.log.per_second = 1;
    server_thread st(o, echo_messages);
    const auto port = st.port();
    constexpr int flood = 100;
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        for (int i = 0; i < flood; ++i) co_await send_and_wait(port, not_an_upgrade);
        co_await corows::test::sleep(1100ms); // a token comes back
        co_await send_and_wait(port, not_an_upgrade);
    }, 30s);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(wait_until([&] { return box.of(log_category::refusal).size() >= 6; }, 5s));
    const auto refusals = box.of(log_category::refusal);
    std::uint64_t told = 0;
    for (const auto& r : refusals) told += 1 + r.suppressed;
    // Every refusal is either written or counted in the next one written: none is lost, and
    // the sink saw a handful, not a hundred.
    BOOST_TEST(told == flood + 1u);
    BOOST_TEST(refusals.size() <= 5u + 10u); // the burst, and a token a second of the flood and after
    BOOST_TEST(refusals.back().suppressed > 70u);
}

BOOST_AUTO_TEST_SUITE_END()
