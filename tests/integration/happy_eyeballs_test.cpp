// SPDX-License-Identifier: BSL-1.0
// Happy Eyeballs (include/corows/detail/happy_eyeballs.hpp): an address that drops SYNs costs
// the connection attempt delay, not the handshake timeout; a refusing one costs nothing.
//
// The address that drops SYNs is local: a listener with a backlog of 0 whose queue is filled
// by connections it never accepts. The kernel then drops further SYNs to it (Linux, and
// gVisor), so a connect there hangs as to a blackholed address. Off-host addresses are no
// use for this: a sandbox's network stack may answer them (10.255.255.1 connects here) or
// refuse them at once (192.0.2.1, this machine's gateway).
#include "loopback.hpp"

#include <corows/connect.hpp>
#include <corows/detail/happy_eyeballs.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using corows::detail::happy_eyeballs;
using clock_type = std::chrono::steady_clock;

// (Endpoint lists are named variables: g++ 12 rejects a braced list inside co_await.)

// A listening port (on 127.0.0.1 unless given) that takes no more connections: its SYNs go
// unanswered.
class blackhole {
public:
    explicit blackhole(asio::io_context& ctx, tcp::endpoint at = {asio::ip::make_address("127.0.0.1"), 0})
        : acceptor_(ctx) {
        acceptor_.open(at.protocol());
        acceptor_.bind(at);
        acceptor_.listen(0);
        // Fill the queue until a connect hangs: how many it holds depends on the kernel.
        for (int i = 0; i < 16; ++i) {
            auto& s = fillers_.emplace_back(ctx);
            s.open(tcp::v4());
            s.native_non_blocking(true);
            const auto ep = endpoint();
            if (::connect(s.native_handle(), ep.data(), static_cast<socklen_t>(ep.size())) == 0) continue;
            pollfd p{s.native_handle(), POLLOUT, 0};
            if (::poll(&p, 1, 300) == 0) {
                hanging_ = true;
                return;
            }
        }
    }
    /// True if connects to endpoint() hang.
    bool hanging() const noexcept { return hanging_; }
    tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }

private:
    tcp::acceptor acceptor_;
    std::list<tcp::socket> fillers_;
    bool hanging_ = false;
};

// A port on 127.0.0.1 that nobody listens on.
tcp::endpoint closed_port(asio::io_context& ctx) {
    tcp::acceptor a(ctx, {asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint();
}

double elapsed_ms(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(happy_eyeballs_race)

BOOST_AUTO_TEST_CASE(a_blackholed_first_address_costs_the_attempt_delay) {
    loop l;
    blackhole hole(l.ctx());
    BOOST_REQUIRE_MESSAGE(hole.hanging(), "could not make a listener that drops SYNs");
    l.spawn("server", [&]() -> asio::awaitable<void> {
        auto s = co_await l.acceptor().async_accept(asio::use_awaitable);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        happy_eyeballs race(co_await asio::this_coro::executor);
        tcp::socket sock(co_await asio::this_coro::executor);
        const auto start = clock_type::now();
        std::vector<tcp::endpoint> addresses{hole.endpoint(), l.endpoint()};
        auto ec = co_await race.connect(std::move(addresses), 250ms, sock);
        const double took = elapsed_ms(start);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(took >= 250.0);
        BOOST_TEST(took < 2000.0); // handshake_timeout would be 10 s
        BOOST_TEST(sock.is_open());
        corows::error_code e;
        BOOST_TEST((sock.remote_endpoint(e) == l.endpoint()));
        BOOST_TEST((race.last() == l.endpoint()));
        BOOST_TEST(race.tried() == corows::detail::endpoint_text(hole.endpoint()) + ", " + l.host());
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(without_racing_the_blackhole_holds_everything_up) {
    loop l;
    blackhole hole(l.ctx());
    BOOST_REQUIRE_MESSAGE(hole.hanging(), "could not make a listener that drops SYNs");
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        happy_eyeballs race(ex);
        tcp::socket sock(ex);
        // What connect()'s deadline does: cancel the race.
        asio::steady_timer deadline(ex, 1s);
        deadline.async_wait([&](corows::error_code e) {
            if (!e) race.cancel();
        });
        const auto start = clock_type::now();
        std::vector<tcp::endpoint> addresses{hole.endpoint(), l.endpoint()};
        auto ec = co_await race.connect(std::move(addresses), 0ms, sock);
        const double took = elapsed_ms(start);
        BOOST_TEST((ec == asio::error::operation_aborted), ec.message());
        BOOST_TEST(took >= 1000.0);
        BOOST_TEST(took < 3000.0);
        BOOST_TEST(race.attempts() == 1u); // delay 0: the live address never got its turn
        BOOST_TEST(!sock.is_open());
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(a_refused_address_starts_the_next_at_once) {
    // "localhost" as ::1 and 127.0.0.1 with the server on 127.0.0.1 only: ::1 refuses (or this
    // host has no IPv6 and the socket does not open), and 127.0.0.1 follows without the delay.
    loop l;
    const tcp::endpoint v6_closed(asio::ip::make_address("::1"), closed_port(l.ctx()).port());
    l.spawn("server", [&]() -> asio::awaitable<void> {
        auto s = co_await l.acceptor().async_accept(asio::use_awaitable);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        happy_eyeballs race(co_await asio::this_coro::executor);
        tcp::socket sock(co_await asio::this_coro::executor);
        const auto start = clock_type::now();
        std::vector<tcp::endpoint> addresses{v6_closed, l.endpoint()};
        auto ec = co_await race.connect(std::move(addresses), 5s, sock);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(elapsed_ms(start) < 1000.0);
        BOOST_TEST((race.last() == l.endpoint()));
        BOOST_TEST(race.attempts() == 2u);
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(a_failure_starts_the_next_while_an_older_attempt_hangs) {
    // blackhole at 0 s, a refusing port at 1 s, the live one at once after that refusal: about
    // 1 s in all, where waiting out the delay again would take 2 s.
    loop l;
    blackhole hole(l.ctx());
    BOOST_REQUIRE_MESSAGE(hole.hanging(), "could not make a listener that drops SYNs");
    const auto closed = closed_port(l.ctx());
    l.spawn("server", [&]() -> asio::awaitable<void> {
        auto s = co_await l.acceptor().async_accept(asio::use_awaitable);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        happy_eyeballs race(co_await asio::this_coro::executor);
        tcp::socket sock(co_await asio::this_coro::executor);
        const auto start = clock_type::now();
        std::vector<tcp::endpoint> addresses{hole.endpoint(), closed, l.endpoint()};
        auto ec = co_await race.connect(std::move(addresses), 1s, sock);
        const double took = elapsed_ms(start);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(took >= 1000.0);
        BOOST_TEST(took < 1800.0);
        BOOST_TEST((race.last() == l.endpoint()));
        BOOST_TEST(race.attempts() == 3u);
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(all_failing_gives_the_last_error_and_names_every_address) {
    loop l;
    const auto a = closed_port(l.ctx());
    const auto b = closed_port(l.ctx());
    l.spawn("client", [&]() -> asio::awaitable<void> {
        happy_eyeballs race(co_await asio::this_coro::executor);
        tcp::socket sock(co_await asio::this_coro::executor);
        std::vector<tcp::endpoint> addresses{a, b};
        auto ec = co_await race.connect(std::move(addresses), 250ms, sock);
        BOOST_TEST((ec == asio::error::connection_refused), ec.message());
        BOOST_TEST(race.tried() == corows::detail::endpoint_text(a) + ", " + corows::detail::endpoint_text(b));
        BOOST_TEST((race.last() == b));
        BOOST_TEST(!sock.is_open());
        happy_eyeballs none(co_await asio::this_coro::executor);
        std::vector<tcp::endpoint> no_addresses;
        ec = co_await none.connect(std::move(no_addresses), 250ms, sock);
        BOOST_TEST((ec == asio::error::not_found), ec.message());
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(cancel_closes_every_attempt_in_flight) {
    loop l;
    blackhole hole(l.ctx());
    BOOST_REQUIRE_MESSAGE(hole.hanging(), "could not make a listener that drops SYNs");
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        happy_eyeballs race(ex);
        tcp::socket sock(ex);
        asio::steady_timer deadline(ex, 500ms);
        deadline.async_wait([&](corows::error_code e) {
            if (!e) race.cancel();
        });
        const auto start = clock_type::now();
        std::vector<tcp::endpoint> addresses{hole.endpoint(), hole.endpoint(), hole.endpoint()};
        auto ec = co_await race.connect(std::move(addresses), 100ms, sock);
        BOOST_TEST((ec == asio::error::operation_aborted), ec.message());
        BOOST_TEST(elapsed_ms(start) < 1500.0);
        BOOST_TEST(race.attempts() == 3u); // all three raced before the deadline
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(connect_races_a_names_addresses) {
    // Through the public connect(): localhost (whatever it resolves to here) with a delay far
    // above the test's limit still connects at once, and the peer names the winner.
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        auto ws = co_await l.accept_ws(corows::options{});
        co_await ws.accept();
        corows::message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options opts;
        opts.happy_eyeballs_delay = 30s;
        const auto start = clock_type::now();
        auto ws = co_await corows::connect("ws://localhost:" + std::to_string(l.endpoint().port()) + "/", opts);
        BOOST_TEST(elapsed_ms(start) < 2000.0);
        co_await ws.write_text("hi");
        auto m = co_await ws.read_message();
        BOOST_TEST((m && m->text() == "hi"));
        co_await ws.close(1000, "");
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(a_name_whose_first_address_drops_syns_connects_after_the_delay) {
    // connect_options::resolve pins "eyeballs.test" to 127.0.0.2 (dropping SYNs on the server's port)
    // then 127.0.0.1 (the server): what a name with a dead first address does, without DNS.
    loop l;
    blackhole hole(l.ctx(), {asio::ip::make_address("127.0.0.2"), l.endpoint().port()});
    BOOST_REQUIRE_MESSAGE(hole.hanging(), "could not make a listener that drops SYNs");
    const std::string host = "eyeballs.test:" + std::to_string(l.endpoint().port());
    std::string host_seen;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        auto ws = co_await l.accept_ws(corows::options{});
        co_await ws.accept([&](const corows::http_request& req) {
            host_seen = std::string(req.find("Host").value_or(""));
            return corows::upgrade_answer{};
        });
        corows::message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options opts;
        opts.resolve = {"127.0.0.2", "127.0.0.1"};
        const auto start = clock_type::now();
        auto ws = co_await corows::connect("ws://" + host + "/", opts);
        const double took = elapsed_ms(start);
        BOOST_TEST(took >= 250.0);
        BOOST_TEST(took < 2000.0); // the handshake timeout would be 10 s
        BOOST_TEST(host_seen == host);
        co_await ws.write_text("hi");
        auto m = co_await ws.read_message();
        BOOST_TEST((m && m->text() == "hi"));
        co_await ws.close(1000, "");
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(a_pinned_address_that_is_no_address_is_named) {
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options opts;
        opts.resolve = {"[::1]", "localhost"};
        try {
            co_await corows::connect("ws://eyeballs.test:9/", opts);
            BOOST_ERROR("no exception");
        } catch (const corows::connect_error& e) {
            BOOST_TEST((e.phase() == corows::connect_phase::resolve));
            BOOST_TEST((e.code() == std::errc::invalid_argument), e.code().message());
            BOOST_TEST(e.failure().detail == "connect_options::resolve: not an IP address: localhost");
        }
    });
    l.run(10s);
}

BOOST_AUTO_TEST_SUITE_END()
