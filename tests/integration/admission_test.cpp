// Admission control of corows::server (server_options' max_connections,
// max_connections_per_address, max_handshakes; the idle timeout and keepalive on by default;
// the acceptor out of descriptors): each limit holds against a peer that tries to take
// everything, and service comes back once the squatters leave.

#include <corows/detail/admission.hpp>
#include <corows/server.hpp>

#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/time.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
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

// The answer to an upgrade from `source` (a loopback address) to 127.0.0.1:`port`: 101, or
// the refusal's status.
struct upgrade_result {
    unsigned status = 0;
    std::string retry_after;
    std::optional<tcp_ws> ws;
};

asio::awaitable<upgrade_result> try_upgrade(unsigned short port, const char* source = "127.0.0.1") {
    tcp::socket sock(co_await asio::this_coro::executor);
    sock.open(tcp::v4());
    sock.bind({asio::ip::make_address(source), 0});
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    upgrade_result r;
    r.ws.emplace(std::move(sock));
    corows::http_response res;
    corows::error_code ec;
    co_await r.ws->handshake("127.0.0.1:" + std::to_string(port), "/", corows::handshake_request{}, res, ec);
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

// Connects (waiting as long as it takes), then says when it was served and echoed.
struct late_client {
    std::chrono::steady_clock::duration waited{};
    bool served = false;
    std::string failure;
};

asio::awaitable<void> connect_late(unsigned short port, std::shared_ptr<late_client> c) {
    auto start = std::chrono::steady_clock::now();
    auto ws = co_await connect_ws_to(port, corows::options{});
    c->waited = std::chrono::steady_clock::now() - start;
    co_await expect_echo(ws, "my turn");
    c->served = true;
}

// Connects `sock` (opened already), upgrades and gets an echo.
asio::awaitable<void> echo_over(tcp::socket sock, unsigned short port, late_client& c) {
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock));
    co_await ws.handshake("127.0.0.1:" + std::to_string(port));
    co_await expect_echo(ws, "after the drought");
    c.served = true;
}

// CPU time of this process so far (every thread), for "the acceptor does not spin".
std::chrono::microseconds process_cpu() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto us = [](const timeval& t) { return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec); };
    return us(u.ru_utime) + us(u.ru_stime);
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

    BOOST_TEST(a.handshake_slot_free());
    a.begin_handshake();
    a.begin_handshake();
    BOOST_TEST(!a.handshake_slot_free());
    BOOST_TEST(a.end_handshake(), "the end that frees a full count wakes the acceptors");
    a.begin_handshake();
    BOOST_TEST(a.end_handshake());
    BOOST_TEST(!a.end_handshake());

    // The automatic limit keeps a reserve of descriptors for refusals and the process.
    BOOST_TEST(corows::detail::descriptor_reserve(1024) == 102u);
    BOOST_TEST(corows::detail::descriptor_reserve(100) == 32u);
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    BOOST_TEST(corows::detail::connections_for_descriptor_limit() ==
               lim.rlim_cur - corows::detail::descriptor_reserve(lim.rlim_cur));
}

BOOST_AUTO_TEST_CASE(beyond_max_connections_a_client_gets_503_until_one_leaves) {
    corows::server_options o;
    o.max_connections = 3;
    server_thread st(o, echo);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        std::vector<tcp_ws> held;
        for (int i = 0; i < 3; ++i) held.push_back(co_await connect_ws_to(port, corows::options{}));
        auto refused = co_await try_upgrade(port);
        BOOST_TEST(refused.status == 503u);
        BOOST_TEST(refused.retry_after == "1");
        // The ones admitted are served as before.
        for (auto& ws : held) co_await expect_echo(ws, "still here");
        co_await held.back().close(1000, "");
        held.pop_back();
        auto again = co_await upgrade_when_admitted(port, 2s);
        co_await expect_echo(again, "admitted");
    }, 20s);
    BOOST_TEST(ok == 1u);
}

BOOST_AUTO_TEST_CASE(beyond_max_connections_per_address_that_address_gets_429) {
    corows::server_options o;
    o.max_connections_per_address = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        std::vector<tcp_ws> held;
        for (int i = 0; i < 2; ++i) held.push_back(co_await connect_ws_to(port, corows::options{}));
        auto refused = co_await try_upgrade(port);
        BOOST_TEST(refused.status == 429u);
        // Another address (all of 127/8 is loopback) is admitted.
        auto other = co_await try_upgrade(port, "127.0.0.2");
        BOOST_TEST(other.status == 101u);
        BOOST_REQUIRE(other.ws);
        co_await expect_echo(*other.ws, "from elsewhere");
        co_await held.back().close(1000, "");
        held.pop_back();
        auto again = co_await upgrade_when_admitted(port, 2s);
        co_await expect_echo(again, "admitted again");
    }, 20s);
    BOOST_TEST(ok == 1u);
}

BOOST_AUTO_TEST_CASE(with_every_handshake_slot_taken_new_clients_wait_their_turn) {
    // Two peers connect and say nothing, taking both slots: a third waits in the kernel's
    // queue (no answer, no refusal), and is served as soon as one squatter leaves.
    corows::server_options o;
    o.max_handshakes = 2;
    server_thread st(o, echo);
    const auto port = st.port();
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        raw_peer a = co_await connect_raw_to(port);
        raw_peer b = co_await connect_raw_to(port);
        co_await corows::test::sleep(100ms); // both accepted
        auto late = std::make_shared<late_client>();
        auto& third = *late;
        // Not co_await inside co_spawn's arguments: g++ 12 builds that call wrongly (with
        // Boost.Asio the spawned coroutine never ran, and the test crashed).
        auto ex = co_await asio::this_coro::executor;
        asio::co_spawn(ex, connect_late(port, late), [late](std::exception_ptr e) {
            if (e) late->failure = corows::test::describe(e);
        });
        co_await corows::test::sleep(400ms);
        BOOST_TEST(!third.served, "a third handshake ran with both slots taken");
        a.socket().close();
        co_await corows::test::sleep(500ms);
        BOOST_TEST(third.served, "the freed slot was not used: " << third.failure);
        BOOST_TEST((third.waited >= 350ms),
                   "served after " << std::chrono::duration_cast<std::chrono::milliseconds>(third.waited).count() << " ms");
        b.socket().close();
    }, 20s);
    BOOST_TEST(ok == 1u);
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
    auto ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        auto honest = co_await connect_ws_to(port, corows::options{});
        raw_peer squatter = co_await connect_raw_to(port);
        co_await squatter.send_text("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                    "Sec-WebSocket-Version: 13\r\n\r\n");
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
    BOOST_TEST(ok == 1u);
}

BOOST_AUTO_TEST_CASE(out_of_descriptors_the_acceptor_idles_and_recovers) {
    // prlimit(2) lowers this process's descriptor limit to what it holds, plus a few: the
    // server cannot accept. It must pause rather than spin on EMFILE, and serve the waiting
    // client by itself once descriptors are free again.
    corows::server_options o;
    o.max_connections = 1'000'000; // the refusal path needs descriptors too: test the acceptor's
    server_thread st(o, echo);
    const auto port = st.port();
    rlimit saved{};
    BOOST_REQUIRE(prlimit(0, RLIMIT_NOFILE, nullptr, &saved) == 0);
    std::vector<int> fillers;
    struct restore {
        rlimit saved;
        std::vector<int>& fillers;
        ~restore() {
            for (int fd : fillers) ::close(fd);
            prlimit(0, RLIMIT_NOFILE, &saved, nullptr);
        }
    } restorer{saved, fillers};

    asio::io_context ctx;
    tcp::socket client(ctx);
    client.open(tcp::v4()); // before the limit: the client needs a descriptor of its own
    rlimit low = saved;
    low.rlim_cur = corows::test::open_fds() + 64;
    BOOST_REQUIRE(prlimit(0, RLIMIT_NOFILE, &low, nullptr) == 0);
    // Takes every free descriptor; returns how many.
    auto fill = [&] {
        std::size_t n = 0;
        for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0; ++n) fillers.push_back(fd);
        return n;
    };
    fill();
    BOOST_REQUIRE(errno == EMFILE);

    // Whatever another part of the process (a sanitizer's runtime, say) closes while the test
    // waits is taken back at once: the acceptor retries every 50 ms, the test every 5 ms, so
    // only the test's own fillers decide that there is no descriptor. What it took back is
    // counted and reported.
    std::size_t taken_back = 0;
    auto starve_for = [&](std::chrono::milliseconds d) {
        for (auto end = std::chrono::steady_clock::now() + d; std::chrono::steady_clock::now() < end;) {
            ctx.run_for(5ms);
            taken_back += fill();
        }
    };
    late_client c;
    asio::co_spawn(ctx, echo_over(std::move(client), port, c), [&](std::exception_ptr e) {
        if (e) c.failure = corows::test::describe(e);
    });
    starve_for(300ms); // connected (the kernel's queue), not accepted
    BOOST_TEST(!c.served, "served without descriptors; " << taken_back << " freed meanwhile by others");
    const auto cpu_before = process_cpu();
    starve_for(1000ms);
    const auto cpu = process_cpu() - cpu_before;
    BOOST_TEST((cpu < 200ms), "a second without descriptors cost " << cpu.count() << " us of CPU");
    BOOST_TEST(!c.served, "served without descriptors; " << taken_back << " freed meanwhile by others");

    for (int fd : fillers) ::close(fd);
    fillers.clear();
    ctx.run_for(3s);
    BOOST_TEST(c.served, "not served once descriptors were free: " << c.failure);
}

BOOST_AUTO_TEST_SUITE_END()
