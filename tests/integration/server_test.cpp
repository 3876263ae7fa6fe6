// corows::server on 127.0.0.1: many clients over two threads, raw routing, handler failures,
// and the graceful stop with its deadline.
#include <corows/server.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

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
            if (raw) srv.run_raw(std::move(h));
            else srv.run(std::move(h));
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

asio::awaitable<tcp_ws> connect(unsigned short port, std::string target) {
    asio::ip::tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock));
    co_await ws.handshake("127.0.0.1:" + std::to_string(port), target);
    co_return ws;
}

asio::awaitable<tcp_ws> connect(unsigned short port) { return connect(port, "/"); }

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
        co_await ws.write_text("hello");
        auto m = co_await ws.read_message();
        if (!m || m->text() != "hello") throw std::runtime_error("no echo");
        ++connected;
        auto end = co_await ws.read_message();
        if (end) throw std::runtime_error("message instead of close");
        if (ws.close_code() != 1001) throw std::runtime_error("close code " + std::to_string(ws.close_code()));
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
    corows::server_options o;
    o.threads = 2;
    o.on_error = [&](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::runtime_error& x) {
            if (std::string_view(x.what()) == "boom") ++errors;
        }
    };
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
        if (i % 2 == 0) {
            co_await ws.write_text("boom");
            auto end = co_await ws.read_message();
            if (end) throw std::runtime_error("message instead of close");
            if (ws.close_code() != 1011) throw std::runtime_error("close code " + std::to_string(ws.close_code()));
        } else {
            co_await ws.write_text("still here");
            auto m = co_await ws.read_message();
            if (!m || m->text() != "still here") throw std::runtime_error("no echo");
            co_await ws.close(1000, {});
        }
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
        } catch (const std::system_error& e) {
            refused = e.code() == corows::error::bad_status;
        }
    });
    BOOST_TEST(refused, "a request for /elsewhere was not refused with an HTTP status");
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

BOOST_AUTO_TEST_SUITE_END()
