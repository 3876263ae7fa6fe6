// SPDX-License-Identifier: BSL-1.0
// corows::server on 127.0.0.1: many clients over two threads, raw routing, handler failures,
// the graceful stop with its deadline, draining for a rolling restart, and the event mode
// (run_events).
#include <corows/detail/drain_schedule.hpp>
#include <corows/server.hpp>

#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::message;
using tcp_ws = corows::websocket<asio::ip::tcp::socket>;
using clock_type = std::chrono::steady_clock;

// A server running in its own thread; stopped and joined on destruction at the latest.
struct running_server {
    corows::server srv;
    asio::ip::tcp::endpoint endpoint;
    std::atomic<bool> returned{false};
    std::thread thread;

    running_server(corows::server_options o, corows::server::handler_type h, bool raw = false)
        : srv(std::move(o)) {
        endpoint = srv.listen({asio::ip::make_address("127.0.0.1"), 0});
        thread = std::thread([this, h = std::move(h), raw]() mutable {
            if (raw) srv.run_http(std::move(h));
            else srv.run(std::move(h));
            returned = true;
        });
    }
    running_server(corows::server_options o, corows::server::event_handlers h) : srv(std::move(o)) {
        endpoint = srv.listen({asio::ip::make_address("127.0.0.1"), 0});
        thread = std::thread([this, h = std::move(h)]() mutable {
            srv.run_events(std::move(h));
            returned = true;
        });
    }
    running_server(const running_server&) = delete;
    running_server& operator=(const running_server&) = delete;
    ~running_server() {
        srv.stop(0ms);
        thread.join();
    }

    // Waits until run() has returned, at most `limit`; true if it did.
    bool wait_returned(std::chrono::milliseconds limit) {
        auto end = clock_type::now() + limit;
        while (!returned && clock_type::now() < end) std::this_thread::sleep_for(5ms);
        return returned;
    }
};

asio::awaitable<tcp_ws> connect(unsigned short port, std::string target, corows::options o) {
    asio::ip::tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock), o);
    co_await ws.handshake("127.0.0.1:" + std::to_string(port), target);
    co_return ws;
}

asio::awaitable<tcp_ws> connect(unsigned short port, std::string target) {
    return connect(port, std::move(target), corows::options());
}

asio::awaitable<tcp_ws> connect(unsigned short port) { return connect(port, "/"); }

// Throws unless `m` is the echo of `text`.
void check_echo(const std::optional<message>& m, std::string_view text) {
    if (!m || m->text() != text) throw std::runtime_error("no echo of " + std::string(text));
}

// Throws unless the read that returned `m` found the connection closed with `code`.
void check_closed(const tcp_ws& ws, const std::optional<message>& m, std::uint16_t code) {
    if (m) throw std::runtime_error("message instead of close");
    if (ws.close_code() != code) throw std::runtime_error("close code " + std::to_string(ws.close_code()));
}

// Sends "boom", which makes the servers below throw, and expects their 1011.
asio::awaitable<void> boom_closes_with_1011(tcp_ws& ws) {
    co_await ws.write_text("boom");
    auto end = co_await ws.read_message();
    check_closed(ws, end, 1011);
}

// Sends `text` (a literal: it outlives the coroutine), checks its echo and closes.
asio::awaitable<void> echo_once(tcp_ws& ws, const char* text) {
    co_await ws.write_text(text);
    auto echoed = co_await ws.read_message();
    check_echo(echoed, text);
    co_await ws.close(1000, {});
}

// Checks one echo, counts the connection in `connected`, then expects stop()'s 1001.
asio::awaitable<void> echo_then_going_away(tcp_ws& ws, std::atomic<std::size_t>& connected) {
    co_await ws.write_text("hello");
    auto echoed = co_await ws.read_message();
    check_echo(echoed, "hello");
    ++connected;
    auto end = co_await ws.read_message();
    check_closed(ws, end, 1001);
}

// Two threads, and on_error counting the runtime_errors "boom" in `errors`.
corows::server_options counting_booms(std::atomic<int>& errors) {
    corows::server_options o;
    o.threads = 2;
    o.on_error = [&errors](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error& x) {
            if (std::string_view(x.what()) == "boom") ++errors;
        }
    };
    return o;
}

asio::awaitable<void> echo(tcp_ws& ws) {
    message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

// Runs the coroutines `make(i)` for i < n on one client io_context for at most `limit`;
// returns how many finished without an exception (and reports the first failure).
std::size_t run_clients(std::size_t n, const std::function<asio::awaitable<void>(std::size_t)>& make,
                        std::chrono::seconds limit = 30s) {
    asio::io_context ctx;
    std::size_t ok = 0;
    std::string first_error;
    for (std::size_t i = 0; i < n; ++i) {
        asio::co_spawn(ctx, make(i), [&](std::exception_ptr e) {
            if (!e) {
                ++ok;
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                if (first_error.empty()) first_error = x.what();
            }
        });
    }
    ctx.run_for(limit);
    if (!first_error.empty()) BOOST_ERROR("client: " << first_error);
    return ok;
}

void many_clients_echo(bool reuse_port) {
    std::mutex mu;
    std::set<std::thread::id> handler_threads;
    corows::server_options o;
    o.threads = 2;
    o.reuse_port = reuse_port;
    running_server rs(o, [&](tcp_ws& ws) -> asio::awaitable<void> {
        {
            std::lock_guard lock(mu);
            handler_threads.insert(std::this_thread::get_id());
        }
        co_await echo(ws);
    });
    constexpr std::size_t clients = 40, messages = 25;
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(clients, [port](std::size_t i) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        for (std::size_t k = 0; k < messages; ++k) {
            std::string text = "client " + std::to_string(i) + " message " + std::to_string(k);
            co_await ws.write_text(text);
            auto m = co_await ws.read_message();
            if (!m || m->text() != text) throw std::runtime_error("wrong echo for " + text);
        }
        co_await ws.close(1000, "done");
        if (ws.close_code() != 1000) throw std::runtime_error("close code not echoed");
    });
    BOOST_TEST(ok == clients);
    BOOST_TEST(handler_threads.size() == 2u, "connections were not spread over both threads");
    rs.srv.stop(2s);
    BOOST_TEST(rs.wait_returned(3s), "run() did not return after stop()");
}

} // namespace

BOOST_AUTO_TEST_SUITE(server)

BOOST_AUTO_TEST_CASE(many_clients_two_threads_reuse_port) { many_clients_echo(true); }

BOOST_AUTO_TEST_CASE(many_clients_two_threads_round_robin) { many_clients_echo(false); }

BOOST_AUTO_TEST_CASE(graceful_stop_closes_every_client_with_going_away) {
    corows::server_options o;
    o.threads = 2;
    running_server rs(o, echo);
    constexpr std::size_t clients = 30;
    auto port = rs.endpoint.port();
    std::atomic<std::size_t> connected{0};
    clock_type::time_point stop_called{};
    std::thread stopper([&] {
        // Stop from another thread once every client is talking to its handler.
        auto end = clock_type::now() + 20s;
        while (connected < clients && clock_type::now() < end) std::this_thread::sleep_for(2ms);
        stop_called = clock_type::now();
        rs.srv.stop(3s);
    });
    std::size_t ok = run_clients(clients, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        co_await echo_then_going_away(ws, connected);
        if (ws.close_reason() != "server shutting down") throw std::runtime_error("close reason");
    });
    stopper.join();
    BOOST_TEST(ok == clients);
    BOOST_TEST(rs.wait_returned(3s), "run() did not return within the grace period");
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - stop_called);
    BOOST_TEST_MESSAGE("graceful stop of " << clients << " connections took " << took.count() << " ms");
}

BOOST_AUTO_TEST_CASE(stop_deadline_abandons_stuck_handlers_and_silent_clients) {
    // Handlers that never read and never end, clients that never answer the close frame:
    // only the deadline can end this run.
    running_server rs(corows::server_options{}, [](tcp_ws& ws) -> asio::awaitable<void> {
        co_await ws.write_text("ready");
        asio::steady_timer forever(ws.get_executor(), std::chrono::hours(1));
        co_await forever.async_wait(asio::use_awaitable);
    });
    auto port = rs.endpoint.port();
    asio::io_context ctx;
    std::vector<tcp_ws> held;
    std::size_t ready = 0;
    for (int i = 0; i < 5; ++i) {
        asio::co_spawn(ctx, [&]() -> asio::awaitable<void> {
            tcp_ws ws = co_await connect(port);
            auto m = co_await ws.read_message();
            if (m && m->text() == "ready") ++ready;
            held.push_back(std::move(ws)); // connected, never read again
        }, asio::detached);
    }
    auto end = clock_type::now() + 10s;
    while (ready < 5 && clock_type::now() < end) ctx.run_for(10ms);
    BOOST_REQUIRE(ready == 5u);
    auto start = clock_type::now();
    rs.srv.stop(400ms);
    BOOST_TEST(rs.wait_returned(3s), "run() did not return after the deadline");
    auto took = clock_type::now() - start;
    BOOST_TEST((took >= 350ms), "run() returned before the deadline");
    BOOST_TEST((took < 1500ms), "run() returned long after the deadline");
}

BOOST_AUTO_TEST_CASE(throwing_handler_does_not_take_the_server_down) {
    std::atomic<int> errors{0};
    corows::server_options o = counting_booms(errors);
    running_server rs(o, [](tcp_ws& ws) -> asio::awaitable<void> {
        message m;
        while (co_await ws.read_message(m)) {
            if (m.text() == "boom") throw std::runtime_error("boom");
            co_await ws.write_message(m);
        }
    });
    auto port = rs.endpoint.port();
    // Several connections blow up, on both threads; the others keep working.
    std::size_t ok = run_clients(10, [port](std::size_t i) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        if (i % 2 == 0) co_await boom_closes_with_1011(ws);
        else co_await echo_once(ws, "still here");
    });
    BOOST_TEST(ok == 10u);
    BOOST_TEST(errors.load() == 5);
    std::size_t after = run_clients(4, [port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        co_await ws.write_text("after");
        auto m = co_await ws.read_message();
        if (!m || m->text() != "after") throw std::runtime_error("no echo after failures");
        co_await ws.close(1000, {});
    });
    BOOST_TEST(after == 4u);
}

BOOST_AUTO_TEST_CASE(handlers_that_end_before_their_first_wait_close_with_1000_and_1011) {
    // Such a handler ends inside the server's launch of it, before the launch returns.
    std::atomic<int> errors{0}, started{0};
    corows::server_options o = counting_booms(errors);
    running_server rs(o, [&started](tcp_ws&) -> asio::awaitable<void> {
        if (started++ % 2 == 0) throw std::runtime_error("boom");
        co_return;
    });
    auto port = rs.endpoint.port();
    std::mutex m;
    std::multiset<std::uint16_t> codes;
    std::size_t ok = run_clients(6, [&, port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        auto end = co_await ws.read_message();
        if (end) throw std::runtime_error("message instead of close");
        std::lock_guard lock(m);
        codes.insert(ws.close_code());
    });
    BOOST_TEST(ok == 6u);
    BOOST_TEST(codes.count(1000) == 3u);
    BOOST_TEST(codes.count(1011) == 3u);
    BOOST_TEST(errors.load() == 3);
}

BOOST_AUTO_TEST_CASE(raw_handler_routes_requests_itself) {
    running_server rs(corows::server_options{}, [](tcp_ws& ws) -> asio::awaitable<void> {
        corows::http_request req = co_await ws.read_request();
        if (req.path() != "/echo") {
            co_await ws.refuse(404, "no such place");
            co_return;
        }
        co_await ws.accept(req);
        co_await echo(ws);
    }, true);
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(1, [port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port, "/echo?x=1");
        co_await ws.write_text("routed");
        auto m = co_await ws.read_message();
        if (!m || m->text() != "routed") throw std::runtime_error("no echo on /echo");
        co_await ws.close(1000, {});
    });
    BOOST_TEST(ok == 1u);
    bool refused = false;
    run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        try {
            tcp_ws ws = co_await connect(port, "/elsewhere");
        } catch (const corows::system_error& e) {
            refused = e.code() == corows::error::bad_status;
        }
    });
    BOOST_TEST(refused, "a request for /elsewhere was not refused with an HTTP status");
}

// What the client of a_raw_handler_gives_one_connection_its_own_settings saw.
struct own_settings_seen {
    bool default_deflate = false, small_deflate = false, plain_deflate = true;
    std::uint16_t small_code = 0, plain_code = 0;
};

asio::awaitable<void> own_settings_client(unsigned short port, corows::server& srv, own_settings_seen& seen) {
    corows::options offer;
    offer.deflate.enabled = true;
    std::string big(1000, 'b');
    tcp_ws d = co_await connect(port, "/", offer);
    seen.default_deflate = d.deflate().has_value();
    co_await d.write_text(big);
    auto echoed = co_await d.read_message();
    if (!echoed || echoed->size() != big.size()) throw std::runtime_error("no echo on /");
    tcp_ws small = co_await connect(port, "/small", offer);
    seen.small_deflate = small.deflate().has_value();
    co_await small.write_text(big);
    if (co_await small.read_message()) throw std::runtime_error("/small echoed 1000 bytes");
    seen.small_code = small.close_code();
    tcp_ws plain = co_await connect(port, "/plain", offer);
    seen.plain_deflate = plain.deflate().has_value();
    co_await plain.write_text(big);
    if (!co_await plain.read_message()) throw std::runtime_error("no echo on /plain");
    co_await d.close();
    // stop() still reaches a connection with its own settings.
    srv.stop(5s);
    if (co_await plain.read_message()) throw std::runtime_error("a message after stop()");
    seen.plain_code = plain.close_code();
}

asio::awaitable<void> own_settings_handler(tcp_ws& ws) {
    corows::http_request req = co_await ws.read_request();
    corows::options mine = ws.get_options();
    if (req.path() == "/small") mine.max_message_size = 100;
    if (req.path() == "/plain") mine.deflate.enabled = false;
    co_await ws.accept(std::move(req), corows::accept_decision().with_settings(mine));
    co_await echo(ws);
}

BOOST_AUTO_TEST_CASE(a_raw_handler_gives_one_connection_its_own_settings) {
    // The server compresses and takes 1 MiB messages; /small takes 100 bytes, /plain refuses
    // permessage-deflate. Both stay the server's: stop() closes them with 1001.
    corows::server_options so;
    so.connection.deflate.enabled = true;
    so.connection.max_message_size = 1 << 20;
    running_server rs(so, own_settings_handler, true);
    auto port = rs.endpoint.port();
    own_settings_seen seen;
    std::size_t ok = run_clients(1, [&](std::size_t) { return own_settings_client(port, rs.srv, seen); });
    BOOST_TEST(ok == 1u);
    BOOST_TEST(seen.default_deflate);
    BOOST_TEST(seen.small_deflate);
    BOOST_TEST(seen.small_code == 1009);
    BOOST_TEST(!seen.plain_deflate);
    BOOST_TEST(seen.plain_code == 1001);
    BOOST_TEST(rs.wait_returned(10s));
}

// The on_upgrade of on_upgrade_decides_each_connection: own_settings_handler's choices, and
// refusals.
corows::upgrade_answer decide_upgrade(const corows::http_request& req, const corows::options& base) {
    if (req.path() == "/denied") return corows::upgrade_answer::refuse(403, "not here");
    if (req.path() == "/throw") throw std::runtime_error("the decider failed");
    corows::options mine = base;
    if (req.path() == "/small") mine.max_message_size = 100;
    if (req.path() == "/plain") mine.deflate.enabled = false;
    return corows::accept_decision().with_settings(mine);
}

// Expects the upgrade to `target` refused with `status` and `body`.
asio::awaitable<void> expect_refusal(unsigned short port, std::string target, unsigned status, std::string body) {
    asio::ip::tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock));
    const std::string host = "127.0.0.1:" + std::to_string(port);
    const corows::handshake_request extra;
    corows::http_response res;
    try {
        co_await ws.handshake(host, target, extra, res);
    } catch (const corows::handshake_error& e) {
        if (e.response().status != status || e.response().body != body)
            throw std::runtime_error(target + ": refused with " + std::to_string(e.response().status) + " " + e.response().body);
        co_return;
    }
    throw std::runtime_error(target + " was accepted");
}

BOOST_AUTO_TEST_CASE(on_upgrade_decides_each_connection) {
    // run() and run_events() with server_options::on_upgrade: the same choices as
    // a_raw_handler_gives_one_connection_its_own_settings, plus a refusal and a decider that
    // throws (500, reported to on_error); an invalid request never reaches the decider.
    for (bool events : {false, true}) {
        BOOST_TEST_CONTEXT("events " << events) {
            corows::server_options so;
            so.connection.deflate.enabled = true;
            so.connection.max_message_size = 1 << 20;
            const corows::options base = so.connection;
            std::atomic<int> decided{0}, errors{0};
            so.on_upgrade = [&](const corows::http_request& req) {
                ++decided;
                return decide_upgrade(req, base);
            };
            so.on_error = [&](std::exception_ptr e) {
                // The handler's own failures (the 1009 on /small) are reported too.
                try {
                    std::rethrow_exception(e);
                } catch (const std::runtime_error& x) {
                    if (std::string_view(x.what()) == "the decider failed") ++errors;
                } catch (...) {
                }
            };
            corows::server::event_handlers h;
            h.on_message = [](tcp_ws& ws, const message& m) { ws.send(m); };
            std::optional<running_server> rs;
            if (events) rs.emplace(so, std::move(h));
            else rs.emplace(so, [](tcp_ws& ws) { return echo(ws); });
            auto port = rs->endpoint.port();
            own_settings_seen seen;
            std::size_t ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
                co_await expect_refusal(port, "/denied", 403, "not here");
                co_await expect_refusal(port, "/throw", 500, "");
                // Not an upgrade: the RFC's 400 before any decision.
                asio::ip::tcp::socket raw(co_await asio::this_coro::executor);
                co_await raw.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
                const std::string plain_get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
                co_await asio::async_write(raw, asio::buffer(plain_get), asio::use_awaitable);
                std::string answer(12, '\0');
                co_await asio::async_read(raw, asio::buffer(answer), asio::use_awaitable);
                if (answer != "HTTP/1.1 400") throw std::runtime_error("a plain GET got " + answer);
                co_await own_settings_client(port, rs->srv, seen);
            });
            BOOST_TEST(ok == 1u);
            BOOST_TEST(decided.load() == 5); // /denied, /throw, /, /small, /plain
            BOOST_TEST(errors.load() == 1); // the decider's exception
            BOOST_TEST(seen.default_deflate);
            BOOST_TEST(seen.small_deflate);
            BOOST_TEST(seen.small_code == 1009);
            BOOST_TEST(!seen.plain_deflate);
            BOOST_TEST(seen.plain_code == 1001);
            BOOST_TEST(rs->wait_returned(10s));
        }
    }
}

BOOST_AUTO_TEST_CASE(stop_from_a_handler_and_before_run) {
    std::atomic<corows::server*> self{nullptr};
    running_server rs(corows::server_options{}, [&](tcp_ws& ws) -> asio::awaitable<void> {
        message m;
        while (co_await ws.read_message(m)) {
            if (m.text() == "shutdown") self.load()->stop(2s);
        }
    });
    self = &rs.srv;
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(1, [port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        co_await ws.write_text("shutdown");
        auto end = co_await ws.read_message();
        if (end || ws.close_code() != 1001) throw std::runtime_error("not closed with 1001");
    });
    BOOST_TEST(ok == 1u);
    BOOST_TEST(rs.wait_returned(3s));

    // stop() before run(): run() returns at once.
    corows::server early(corows::server_options{});
    early.listen({asio::ip::make_address("127.0.0.1"), 0});
    early.stop(1s);
    auto start = clock_type::now();
    early.run([](tcp_ws&) -> asio::awaitable<void> { co_return; });
    BOOST_TEST((clock_type::now() - start < 500ms));
}

BOOST_AUTO_TEST_CASE(drain_schedule_spreads_each_item_once_evenly_over_the_window) {
    using schedule = corows::detail::drain_schedule<int>;
    std::minstd_rand rng(7);
    const auto start = schedule::clock::now();
    std::vector<int> items(1000);
    std::iota(items.begin(), items.end(), 0);
    schedule s(items, start, 1000ms, rng);
    BOOST_TEST(s.ticks() == corows::detail::max_drain_ticks);
    std::vector<int> taken;
    std::size_t fewest = items.size(), most = 0;
    auto previous = start;
    while (!s.done()) {
        auto due = s.due();
        BOOST_TEST((due >= previous && due < start + 1000ms));
        previous = due;
        auto share = s.take();
        fewest = std::min(fewest, share.size());
        most = std::max(most, share.size());
        taken.insert(taken.end(), share.begin(), share.end());
    }
    BOOST_TEST(most - fewest <= 1u, "shares of " << fewest << " to " << most);
    BOOST_TEST((previous - start > 900ms), "the last share is not near the end of the window");
    BOOST_TEST((taken != items), "the order was not drawn");
    std::sort(taken.begin(), taken.end());
    BOOST_TEST((taken == items));

    // A window of 0 (stop(grace)): everything at once.
    schedule now(items, start, 0ms, rng);
    BOOST_TEST(now.ticks() == 1u);
    BOOST_TEST((now.due() == start));
    BOOST_TEST(now.take().size() == items.size());
    BOOST_TEST(now.done());
    // A tick per item at most, a millisecond per tick at least.
    BOOST_TEST(schedule(std::vector<int>(3), start, 10s, rng).ticks() == 3u);
    BOOST_TEST(schedule(items, start, 5ms, rng).ticks() == 5u);
    BOOST_TEST(schedule(std::vector<int>(), start, 10s, rng).done());
}

// What one client of draining_closes_every_client_with_1012_over_the_window saw.
struct drained_client {
    std::uint16_t code = 0;
    std::string reason;
    clock_type::time_point closed_at{};
};

// What the client that drains the server saw.
struct drain_seen {
    clock_type::time_point stop_called{};
    bool draining_at_once = false;
    clock_type::duration refused_after{};
};

// Suspends the calling coroutine for `d`.
asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Checks one echo, counts the connection in `connected`, then waits for the server's close.
asio::awaitable<void> wait_for_drain(unsigned short port, std::atomic<std::size_t>& connected, drained_client& seen) {
    tcp_ws ws = co_await connect(port);
    co_await ws.write_text("hello");
    auto echoed = co_await ws.read_message();
    check_echo(echoed, "hello");
    ++connected;
    auto end = co_await ws.read_message();
    seen.closed_at = clock_type::now();
    if (end) throw std::runtime_error("message instead of close");
    seen.code = ws.close_code();
    seen.reason = std::string(ws.close_reason());
}

// Drains `srv` once `clients` are connected, then tries an upgrade during the notice.
asio::awaitable<void> drain_when_connected(corows::server& srv, unsigned short port, std::atomic<std::size_t>& connected,
                                           std::size_t clients, const corows::drain_options& d, drain_seen& seen) {
    while (connected < clients) co_await pause(2ms);
    seen.stop_called = clock_type::now();
    srv.stop(d);
    seen.draining_at_once = srv.draining();
    co_await expect_refusal(port, "/", 503, "shutting down\n");
    seen.refused_after = clock_type::now() - seen.stop_called;
}

BOOST_AUTO_TEST_CASE(draining_closes_every_client_with_1012_over_the_window) {
    // Every open connection closes with 1012 at its own moment of the window, none during the
    // notice, while an upgrade during the notice is refused with 503; run() and run_events().
    const corows::drain_options drain{.notice = 300ms, .window = 1500ms, .grace = 2s};
    for (bool events : {false, true}) {
        BOOST_TEST_CONTEXT("events " << events) {
            corows::server_options o;
            o.threads = 2;
            corows::server::event_handlers h;
            h.on_message = [](tcp_ws& ws, const message& m) { ws.send(m); };
            std::optional<running_server> rs;
            if (events) rs.emplace(o, std::move(h));
            else rs.emplace(o, [](tcp_ws& ws) { return echo(ws); });
            constexpr std::size_t clients = 40;
            auto port = rs->endpoint.port();
            std::atomic<std::size_t> connected{0};
            std::vector<drained_client> seen(clients);
            drain_seen drainer;
            std::size_t ok = run_clients(clients + 1, [&](std::size_t i) {
                if (i == clients) return drain_when_connected(rs->srv, port, connected, clients, drain, drainer);
                return wait_for_drain(port, connected, seen[i]);
            });
            BOOST_REQUIRE(ok == clients + 1);
            BOOST_TEST(drainer.draining_at_once);
            BOOST_TEST((drainer.refused_after < drain.notice), "the 503 came after the notice");
            for (const auto& c : seen) {
                BOOST_TEST(c.code == 1012);
                BOOST_TEST(c.reason == "service restart");
            }
            auto [first, last] = std::minmax_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
                return a.closed_at < b.closed_at;
            });
            auto ms = [](clock_type::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
            BOOST_TEST_MESSAGE("closes from " << ms(first->closed_at - drainer.stop_called) << " to "
                               << ms(last->closed_at - drainer.stop_called) << " ms after stop");
            BOOST_TEST((first->closed_at - drainer.stop_called >= drain.notice), "a close during the notice");
            BOOST_TEST((last->closed_at - first->closed_at > drain.window / 3), "the closes were not spread");
            BOOST_TEST((last->closed_at - drainer.stop_called < drain.notice + drain.window + drain.grace));
            BOOST_TEST(rs->wait_returned(5s), "run() did not return after the drain");
        }
    }
}

// The run_http handler of a_raw_handler_answers_healthz_503_while_draining: GET /healthz is
// answered from draining(); anything else becomes an echo WebSocket, even while draining
// (a raw handler decides that itself).
asio::awaitable<void> health_or_echo(tcp_ws& ws, std::atomic<corows::server*>& srv) {
    corows::error_code ec;
    corows::http_request req;
    std::tie(ec, req) = co_await ws.read_request(corows::use_tuple);
    if (ec) co_return;
    if (req.path() != "/healthz") {
        co_await ws.accept(std::move(req));
        co_await echo(ws);
        co_return;
    }
    corows::http_response res;
    res.status = srv.load()->draining() ? 503 : 200;
    res.fields.add("Connection", "close");
    std::tie(ec) = co_await ws.write_response(res, corows::use_tuple);
}

// The status line of GET /healthz on a connection of its own, as a balancer's check sends it.
asio::awaitable<std::string> health_status(unsigned short port) {
    asio::ip::tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    co_await asio::async_write(sock, asio::buffer(get), asio::use_awaitable);
    std::string answer;
    corows::error_code ec; // the end of the stream
    co_await asio::async_read(sock, asio::dynamic_buffer(answer), asio::redirect_error(asio::use_awaitable, ec));
    co_return answer.substr(0, answer.find("\r\n"));
}

BOOST_AUTO_TEST_CASE(a_raw_handler_answers_healthz_503_while_draining) {
    std::atomic<corows::server*> self{nullptr};
    running_server rs(corows::server_options{}, [&self](tcp_ws& ws) { return health_or_echo(ws, self); }, true);
    self = &rs.srv;
    const corows::drain_options drain{.notice = 500ms, .window = 200ms, .grace = 2s};
    auto port = rs.endpoint.port();
    std::string before, during;
    bool draining = false, late_in_notice = false;
    clock_type::duration first_close{};
    std::uint16_t old_code = 0, late_code = 0;
    std::size_t ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        before = co_await health_status(port);
        tcp_ws old = co_await connect(port);
        auto start = clock_type::now();
        rs.srv.stop(drain);
        draining = rs.srv.draining();
        during = co_await health_status(port);
        // A connection opened during the notice is drained like the others.
        tcp_ws late = co_await connect(port);
        late_in_notice = clock_type::now() - start < drain.notice;
        if (co_await old.read_message()) throw std::runtime_error("a message instead of the close");
        first_close = clock_type::now() - start;
        old_code = old.close_code();
        if (co_await late.read_message()) throw std::runtime_error("a message instead of the close");
        late_code = late.close_code();
    });
    BOOST_TEST(ok == 1u);
    BOOST_TEST(before.starts_with("HTTP/1.1 200"), before);
    BOOST_TEST(draining);
    BOOST_TEST(during.starts_with("HTTP/1.1 503"), during);
    BOOST_TEST(late_in_notice);
    BOOST_TEST((first_close >= drain.notice), "closed during the notice");
    BOOST_TEST(old_code == 1012);
    BOOST_TEST(late_code == 1012);
    BOOST_TEST(rs.wait_returned(5s));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// What an event server saw, from its threads.
struct event_log {
    std::mutex mu;
    std::size_t opened = 0;
    std::vector<corows::error_code> closes;
    std::vector<std::uint16_t> close_codes;
    std::size_t refused_sends = 0;
    std::size_t max_queued = 0;

    // Counts on_open and on_close; `on_message` is the test's.
    corows::server::event_handlers handlers(std::function<void(tcp_ws&, const message&)> on_message) {
        corows::server::event_handlers h;
        h.on_open = [this](tcp_ws&) {
            std::lock_guard lock(mu);
            ++opened;
        };
        h.on_message = std::move(on_message);
        h.on_close = [this](tcp_ws& ws, corows::error_code why) {
            std::lock_guard lock(mu);
            closes.push_back(why);
            close_codes.push_back(ws.close_code());
        };
        return h;
    }
    // An echo that records refused sends and the largest queue it saw.
    corows::server::event_handlers echo() {
        return handlers([this](tcp_ws& ws, const message& m) {
            bool sent = ws.send(m);
            std::lock_guard lock(mu);
            if (!sent) ++refused_sends;
            max_queued = std::max(max_queued, ws.queued_bytes());
        });
    }
    // Waits until `n` connections have closed, at most `limit`.
    bool wait_closes(std::size_t n, std::chrono::milliseconds limit = 5000ms) {
        auto end = clock_type::now() + limit;
        for (;;) {
            {
                std::lock_guard lock(mu);
                if (closes.size() >= n) return true;
            }
            if (clock_type::now() >= end) return false;
            std::this_thread::sleep_for(2ms);
        }
    }
};

// Payload `i` of an event-mode run: sizes across the frame length encodings and the read
// buffer's growth, text and binary.
std::string event_payload(std::size_t i) {
    static const std::size_t sizes[] = {0, 1, 125, 126, 4095, 4096, 65535, 65536, 300000};
    std::string s(sizes[i % std::size(sizes)] + i / std::size(sizes), '\0');
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = static_cast<char>('a' + (k * 31 + i) % 26);
    return s;
}

// Sends `count` messages, all before reading any echo, then checks every echo in order.
asio::awaitable<void> send_all_then_check(tcp_ws& ws, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        std::string p = event_payload(i);
        if (i % 2) co_await ws.write_binary(corows::as_bytes(p));
        else co_await ws.write_text(p);
    }
    message m;
    for (std::size_t i = 0; i < count; ++i) {
        if (!co_await ws.read_message(m)) throw std::runtime_error("closed before echo " + std::to_string(i));
        if (m.text() != event_payload(i) || m.is_text() != (i % 2 == 0))
            throw std::runtime_error("echo " + std::to_string(i) + " differs");
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(events)

BOOST_AUTO_TEST_CASE(echo_of_every_size_fragmented_and_compressed_arrives_intact) {
    event_log log;
    corows::server_options o;
    o.threads = 2;
    o.connection.deflate.enabled = true;
    o.connection.max_message_size = 1 << 20;
    running_server rs(o, log.echo());
    auto port = rs.endpoint.port();
    constexpr std::size_t clients = 6, count = 40;
    std::size_t ok = run_clients(clients, [port](std::size_t i) -> asio::awaitable<void> {
        // Plain, fragmenting (100-byte frames) and compressing clients, on both threads.
        corows::options co;
        co.max_message_size = 1 << 20;
        if (i % 3 == 1) co.frame_size = 100;
        if (i % 3 == 2) co.deflate.enabled = true;
        asio::ip::tcp::socket sock(co_await asio::this_coro::executor);
        co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
        tcp_ws ws(std::move(sock), co);
        co_await ws.handshake("127.0.0.1:" + std::to_string(port), "/");
        if ((i % 3 == 2) != ws.deflate().has_value()) throw std::runtime_error("deflate not negotiated as asked");
        co_await send_all_then_check(ws, count);
        co_await ws.close(1000, "done");
    });
    BOOST_TEST(ok == clients);
    BOOST_REQUIRE(log.wait_closes(clients));
    std::lock_guard lock(log.mu);
    BOOST_TEST(log.opened == clients);
    for (std::size_t i = 0; i < clients; ++i) {
        BOOST_TEST(log.closes[i] == corows::error::closed);
        BOOST_TEST(log.close_codes[i] == 1000);
    }
    BOOST_TEST(log.refused_sends == 0u);
}

BOOST_AUTO_TEST_CASE(a_peer_that_does_not_read_pauses_the_reader_and_loses_nothing) {
    event_log log;
    corows::server_options o;
    o.connection.write_queue_limit = 64 * 1024;
    o.connection.max_message_size = 1 << 20;
    running_server rs(o, log.echo());
    auto port = rs.endpoint.port();
    // 200 messages of 16 KiB (3.2 MB) written before reading any: far beyond the queue limit
    // and the socket buffers, so the server must stop reading until the client drains.
    constexpr std::size_t count = 200;
    std::size_t ok = run_clients(1, [port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        std::string big(16 * 1024, 'q');
        asio::co_spawn(ws.get_executor(), [&ws, &big]() -> asio::awaitable<void> {
            for (std::size_t i = 0; i < count; ++i) co_await ws.write_text(big + std::to_string(i));
        }, asio::detached);
        // Let the writer run ahead before reading.
        asio::steady_timer pause(ws.get_executor(), 300ms);
        co_await pause.async_wait(asio::use_awaitable);
        message m;
        for (std::size_t i = 0; i < count; ++i) {
            if (!co_await ws.read_message(m)) throw std::runtime_error("closed early");
            if (m.text() != big + std::to_string(i)) throw std::runtime_error("echo " + std::to_string(i) + " differs");
        }
        co_await ws.close(1000, {});
    });
    BOOST_TEST(ok == 1u);
    BOOST_REQUIRE(log.wait_closes(1));
    std::lock_guard lock(log.mu);
    BOOST_TEST(log.refused_sends == 0u);
    // Reading stops at the limit, so the queue never holds more than it plus one message.
    BOOST_TEST(log.max_queued <= 64u * 1024 + 16 * 1024 + 64);
    BOOST_TEST(log.max_queued >= 64u * 1024, "the queue never reached its limit: the test did not apply pressure");
}

BOOST_AUTO_TEST_CASE(start_close_in_a_callback_finishes_the_close_handshake) {
    event_log log;
    std::atomic<int> sends_after_close{-1};
    running_server rs(corows::server_options{}, log.handlers([&](tcp_ws& ws, const message& m) {
        if (m.text() != "bye") {
            ws.send(m);
            return;
        }
        BOOST_CHECK(!ws.start_close(4000, "as asked"));
        BOOST_CHECK(ws.start_close(999) == corows::error::bad_close_code);
        sends_after_close = ws.send_text("too late") ? 1 : 0;
    }));
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(1, [port](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        co_await ws.write_text("first");
        co_await ws.write_text("bye");
        auto m = co_await ws.read_message();
        if (!m || m->text() != "first") throw std::runtime_error("no echo before the close");
        if (co_await ws.read_message()) throw std::runtime_error("message after the close frame");
        if (ws.close_code() != 4000 || ws.close_reason() != "as asked")
            throw std::runtime_error("close " + std::to_string(ws.close_code()));
    });
    BOOST_TEST(ok == 1u);
    BOOST_REQUIRE(log.wait_closes(1));
    std::lock_guard lock(log.mu);
    BOOST_TEST(log.closes[0] == corows::error::closed);
    BOOST_TEST(log.close_codes[0] == 4000); // the client echoed our code
    BOOST_TEST(sends_after_close.load() == 0);
}

BOOST_AUTO_TEST_CASE(violations_and_throwing_callbacks_fail_only_their_connection) {
    event_log log;
    std::atomic<int> errors{0};
    corows::server_options o = counting_booms(errors);
    running_server rs(o, log.handlers([](tcp_ws& ws, const message& m) {
        if (m.text() == "boom") throw std::runtime_error("boom");
        ws.send(m);
    }));
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(9, [port](std::size_t i) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        if (i % 3 == 0) {
            co_await boom_closes_with_1011(ws);
        } else if (i % 3 == 1) {
            // An unmasked text frame "x" from a client: the server must fail with 1002.
            const std::uint8_t unmasked[] = {0x81, 0x01, 'x'};
            co_await asio::async_write(ws.next_layer(), asio::buffer(unmasked), asio::use_awaitable);
            auto end = co_await ws.read_message();
            check_closed(ws, end, 1002);
        } else {
            co_await echo_once(ws, "fine");
        }
    });
    BOOST_TEST(ok == 9u);
    BOOST_TEST(errors.load() == 3);
    BOOST_REQUIRE(log.wait_closes(9));
    std::lock_guard lock(log.mu);
    std::size_t violations = 0, normal = 0;
    for (auto ec : log.closes) {
        if (ec == corows::error::mask_required) ++violations;
        if (ec == corows::error::closed) ++normal;
    }
    BOOST_TEST(violations == 3u);
    BOOST_TEST(normal == 6u); // the throwing ones closed with 1011 and got the client's answer
}

BOOST_AUTO_TEST_CASE(stop_closes_idle_event_connections_with_going_away) {
    event_log log;
    corows::server_options o;
    o.threads = 2;
    running_server rs(o, log.echo());
    auto port = rs.endpoint.port();
    constexpr std::size_t clients = 20;
    std::atomic<std::size_t> connected{0};
    std::thread stopper([&] {
        auto end = clock_type::now() + 20s;
        while (connected < clients && clock_type::now() < end) std::this_thread::sleep_for(2ms);
        rs.srv.stop(3s);
    });
    std::size_t ok = run_clients(clients, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        co_await echo_then_going_away(ws, connected);
    });
    stopper.join();
    BOOST_TEST(ok == clients);
    BOOST_TEST(rs.wait_returned(3s), "run() did not return within the grace period");
    std::lock_guard lock(log.mu);
    BOOST_TEST(log.opened == clients);
    BOOST_REQUIRE(log.closes.size() == clients);
    for (std::size_t k = 0; k < clients; ++k) {
        BOOST_TEST(log.closes[k] == corows::error::closed);
        BOOST_TEST(log.close_codes[k] == 1001); // the client's answer to our close
    }
}

BOOST_AUTO_TEST_CASE(pings_are_answered_and_silent_peers_time_out) {
    event_log log;
    corows::server_options o;
    o.connection.idle_timeout = 300ms;
    running_server rs(o, log.echo());
    auto port = rs.endpoint.port();
    std::size_t ok = run_clients(2, [port](std::size_t i) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(port);
        bool ponged = false;
        ws.on_pong([&](std::span<const std::uint8_t> p) { ponged = p.size() == 2 && p[0] == 'h'; });
        co_await ws.ping(corows::as_bytes("hi"));
        co_await ws.write_text("hello");
        auto m = co_await ws.read_message();
        // The pong was queued before the echo, so it has arrived by now.
        if (!m || m->text() != "hello" || !ponged) throw std::runtime_error("no pong and echo");
        if (i == 0) {
            // Silent from now on: the server's idle timeout cuts the transport.
            auto start = clock_type::now();
            if (co_await ws.read_message()) throw std::runtime_error("message instead of the cut");
            if (ws.close_code() != 1006) throw std::runtime_error("close code " + std::to_string(ws.close_code()));
            if (clock_type::now() - start > 3s) throw std::runtime_error("the idle timeout took too long");
            co_return;
        }
        // Talks every 100 ms for a second: never idle for 300 ms.
        for (int k = 0; k < 10; ++k) {
            asio::steady_timer pause(ws.get_executor(), 100ms);
            co_await pause.async_wait(asio::use_awaitable);
            co_await ws.write_text("still here");
            if (!co_await ws.read_message(*m)) throw std::runtime_error("cut while talking");
        }
        co_await ws.close(1000, {});
    });
    BOOST_TEST(ok == 2u);
    BOOST_REQUIRE(log.wait_closes(2));
    std::lock_guard lock(log.mu);
    BOOST_TEST((std::count(log.closes.begin(), log.closes.end(), corows::error::timeout) == 1));
    BOOST_TEST((std::count(log.closes.begin(), log.closes.end(), corows::error::closed) == 1));
}

BOOST_AUTO_TEST_SUITE_END()
