// SPDX-License-Identifier: BSL-1.0
// corows::reconnecting against real servers: it comes back after a restart, spreads a herd
// of clients over its jitter window, honours Retry-After within its bound, ends the loop on
// closes and refusals that retrying cannot mend, and stops at once from any thread.
#include "server_thread.hpp"

#include <corows/reconnect.hpp>
#include <corows/server.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using corows::close_phase;
using corows::ended_by;

long long ms(clock_type::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

// A corows::server on a thread of its own, listening on 127.0.0.1:`port` (0: a free one), so
// that a test can stop it and start another on the same port.
class serving {
public:
    serving(unsigned short port, corows::server::handler_type h, bool raw = false) : srv_(corows::server_options{}) {
        port_ = srv_.listen({asio::ip::make_address("127.0.0.1"), port}).port();
        thread_ = std::thread([this, h = std::move(h), raw]() mutable {
            if (raw) srv_.run_http(std::move(h));
            else srv_.run(std::move(h));
        });
    }
    serving(const serving&) = delete;
    serving& operator=(const serving&) = delete;
    ~serving() {
        srv_.stop(0ms);
        thread_.join();
    }
    corows::server& server() noexcept { return srv_; }
    unsigned short port() const noexcept { return port_; }
    std::string url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/"; }

private:
    corows::server srv_;
    unsigned short port_ = 0;
    std::thread thread_;
};

asio::awaitable<void> echo(tcp_ws& ws) {
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

// Sends `text` and expects it back.
asio::awaitable<void> check_echo(corows::client_websocket& ws, std::string text) {
    co_await ws.write_text(text);
    auto m = co_await ws.read_message();
    if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
}

// Reads until the connection ends (a read error counts as an end: next() judges it).
asio::awaitable<void> read_to_end(corows::client_websocket& ws) {
    corows::message m;
    corows::error_code ec;
    while (!ec) ec = co_await corows::test::read_or_closed(ws, m);
}

// Runs `f` on a fresh io_context on this thread for at most `limit`; it must finish without
// an exception.
void run_client(std::function<asio::awaitable<void>()> f, std::chrono::milliseconds limit) {
    asio::io_context ctx;
    bool done = false;
    std::string failure;
    asio::co_spawn(ctx, f(), [&](std::exception_ptr e) {
        done = true;
        if (e) failure = describe(e);
    });
    ctx.run_for(limit);
    BOOST_TEST(failure.empty(), failure);
    BOOST_TEST(done, "the client did not finish in " << limit.count() << " ms");
}

// A port with no listener: bound, then closed again.
unsigned short closed_port() {
    asio::io_context ctx;
    tcp::acceptor a(ctx, {asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

// run_http handler: refuses the first `refusals` upgrades with `status` and Retry-After
// `retry_after` (none if empty), then echoes; counts the requests in `requests`.
corows::server::handler_type refusing(std::atomic<int>& requests, int refusals, unsigned status, std::string retry_after) {
    return [&requests, refusals, status, retry_after](tcp_ws& ws) -> asio::awaitable<void> {
        auto req = co_await ws.read_request();
        if (requests.fetch_add(1) < refusals) {
            std::vector<corows::http_field> fields;
            if (!retry_after.empty()) fields.emplace_back("Retry-After", retry_after);
            co_await ws.refuse(status, "not now\n", fields);
            co_return;
        }
        co_await ws.accept(std::move(req));
        co_await echo(ws);
    };
}

} // namespace

BOOST_AUTO_TEST_SUITE(reconnect)

BOOST_AUTO_TEST_CASE(a_client_comes_back_after_a_server_restart) {
    // The server is drained with 1012 and started again on the same port: the client is back
    // within its backoff, its on_connect hook ran again, and it is served.
    auto first = std::make_unique<serving>(0, echo);
    const unsigned short port = first->port();
    std::atomic<int> hooks{0};
    std::atomic<bool> restarted{false}, echoed{false};
    clock_type::time_point restarted_at{};
    corows::connect_info second{};
    clock_type::time_point back_at{};

    std::thread restarter([&] {
        if (!wait_until([&] { return echoed.load(); }, 20'000ms)) return; // reported below
        corows::drain_options d;
        d.window = 0ms;
        d.grace = 5s;
        first->server().stop(d);
        first.reset();
        first = std::make_unique<serving>(port, echo);
        restarted_at = clock_type::now();
        restarted = true;
    });
    corows::reconnect_options ro;
    ro.initial_delay = 300ms;
    run_client([&]() -> asio::awaitable<void> {
        corows::reconnecting rc("ws://127.0.0.1:" + std::to_string(port) + "/", corows::options{}, ro);
        rc.on_connect([&](corows::client_websocket& ws, const corows::connect_info& info) -> asio::awaitable<void> {
            if (info.connection == 2) {
                back_at = clock_type::now();
                second = info;
            }
            ++hooks;
            co_await ws.write_text("subscribe"); // what a feed would send again
            auto m = co_await ws.read_message();
            if (!m || m->text() != "subscribe") throw std::runtime_error("no echo of the subscription");
        });
        while (auto* ws = co_await rc.next()) {
            co_await check_echo(*ws, "hello " + std::to_string(rc.connections()));
            if (rc.connections() == 2) {
                co_await ws->close(1000, "done");
            } else {
                echoed = true;
                co_await read_to_end(*ws);
            }
        }
        // The client closed first: close_info says it was us, with our reason.
        const corows::close_info& why = rc.closed_why();
        BOOST_TEST((why.phase == close_phase::open));
        BOOST_TEST(why.code == 1000);
        BOOST_TEST(why.reason == "done");
        BOOST_TEST(!why.remote);
        BOOST_TEST((why.by == ended_by::local));
        BOOST_TEST(!why.stopped());
        // The second connection: the hook's "subscribe" and "hello 2", each echoed.
        BOOST_TEST(why.traffic.messages_sent == 2u);
        BOOST_TEST(why.traffic.payload_bytes_sent == 16u);
        BOOST_TEST(why.traffic.messages_received == 2u);
        BOOST_TEST(why.traffic.payload_bytes_received == 16u);
        BOOST_TEST(why.describe() == "closed by us with 1000 (done); received 2 messages (16 bytes), sent 2 messages (16 bytes)");
    }, 30'000ms);
    restarter.join();
    BOOST_TEST(hooks.load() == 2);
    BOOST_TEST(second.connection == 2u);
    // The first connection carried the hook's "subscribe" and "hello 1" (9 and 7 bytes) each
    // way, then the server's drain closed it.
    const corows::close_info& previous = second.previous_close;
    BOOST_TEST((previous.phase == close_phase::open));
    BOOST_TEST(previous.code == 1012);
    BOOST_TEST(previous.reason == "service restart");
    BOOST_TEST(previous.remote);
    BOOST_TEST((previous.by == ended_by::peer));
    BOOST_TEST(previous.traffic.messages_sent == 2u);
    BOOST_TEST(previous.traffic.payload_bytes_sent == 16u);
    BOOST_TEST(previous.traffic.messages_received == 2u);
    BOOST_TEST(previous.traffic.payload_bytes_received == 16u);
    BOOST_REQUIRE(restarted.load());
    // Waits of at most 300, 600, 1200 ms while the port is closed: back well within 5 s.
    BOOST_TEST_MESSAGE("back " << ms(back_at - restarted_at) << " ms after the restart, after " << second.attempts
                               << " attempt(s) and " << second.waited.count() << " ms of waiting");
    BOOST_TEST(ms(back_at - restarted_at) < 5'000);
    // One wait after the close, one after each failed attempt: 300 ms, then doubling.
    std::chrono::milliseconds bound{0};
    for (unsigned k = 0; k < second.attempts; ++k) bound += 300ms * (1 << k);
    BOOST_TEST((second.waited <= bound), second.waited.count() << " ms > " << bound.count());
}

BOOST_AUTO_TEST_CASE(two_hundred_clients_cut_at_once_come_back_spread_over_the_window) {
    // The server closes every connection with 1012 at one instant and goes on serving. Each
    // client waits a draw from [0, 2 s] before reconnecting: the returns are spread over the
    // window, not bunched at its start as they would be without jitter.
    constexpr std::size_t clients = 200;
    constexpr auto window = 2'000ms;
    std::mutex mutex;
    std::vector<corows::connection_handle> first_connections;
    std::atomic<bool> cut{false};
    serving srv(0, [&](tcp_ws& ws) -> asio::awaitable<void> {
        if (!cut.load()) {
            std::lock_guard<std::mutex> lock(mutex);
            first_connections.push_back(ws.handle());
        }
        co_await echo(ws);
    });

    std::vector<clock_type::time_point> closed_at(clients), back_at(clients);
    std::vector<std::chrono::milliseconds> waited(clients);
    std::vector<std::uint16_t> codes(clients);
    std::atomic<std::size_t> connected{0}, returned{0};
    std::thread cutter([&] {
        if (!wait_until([&] { return connected.load() == clients; }, 60'000ms)) return; // reported below
        // Every handler has registered before its client's hook ran (the hook's echo needs it).
        cut = true;
        std::lock_guard<std::mutex> lock(mutex);
        for (auto& h : first_connections) h.start_close(1012, "service restart");
    });

    corows::reconnect_options ro;
    ro.initial_delay = window;
    ro.max_delay = window;
    asio::io_context ctx;
    std::size_t ok = 0;
    std::string failure;
    for (std::size_t i = 0; i < clients; ++i) {
        // Given to co_spawn, which keeps the lambda (and its copy of i) alive as long as the
        // coroutine.
        asio::co_spawn(ctx, [&, i]() -> asio::awaitable<void> {
            corows::reconnecting rc(srv.url(), corows::options{}, ro);
            rc.on_connect([&, i](corows::client_websocket& ws, const corows::connect_info& info) -> asio::awaitable<void> {
                co_await check_echo(ws, "hi");
                if (info.connection == 1) {
                    ++connected;
                } else {
                    back_at[i] = clock_type::now();
                    waited[i] = info.waited;
                    codes[i] = info.previous_close.code;
                    ++returned;
                }
            });
            while (auto* ws = co_await rc.next()) {
                if (rc.connections() == 2) {
                    co_await ws->close(1000, "");
                    continue;
                }
                co_await read_to_end(*ws);
                closed_at[i] = clock_type::now();
            }
        }, [&](std::exception_ptr e) {
            if (!e) ++ok;
            else if (failure.empty()) failure = describe(e);
        });
    }
    ctx.run_for(120s);
    cutter.join();
    BOOST_TEST(failure.empty(), failure);
    BOOST_TEST(first_connections.size() == clients);
    BOOST_REQUIRE(ok == clients);
    BOOST_REQUIRE(returned.load() == clients);
    for (auto c : codes) BOOST_TEST(c == 1012);

    // Each client's own delay, from the close it saw to its hook on the new connection: at
    // least what it says it waited, and spread uniformly over the window by those waits.
    std::vector<long long> delays;
    std::array<std::size_t, 10> tenths{}; // of the window, over the drawn waits
    for (std::size_t i = 0; i < clients; ++i) {
        delays.push_back(ms(back_at[i] - closed_at[i]));
        BOOST_TEST(delays.back() >= waited[i].count() - 1);
        BOOST_TEST((waited[i] <= window));
        ++tenths[std::min<std::size_t>(static_cast<std::size_t>(waited[i].count() * 10 / window.count()), 9)];
    }
    std::sort(delays.begin(), delays.end());
    const auto first_back = *std::min_element(back_at.begin(), back_at.end());
    const auto last_back = *std::max_element(back_at.begin(), back_at.end());
    BOOST_TEST_MESSAGE("200 clients: delays from " << delays.front() << " to " << delays.back() << " ms (median "
                       << delays[clients / 2] << "), returns spread over " << ms(last_back - first_back)
                       << " ms; waits per tenth of the window:" << [&] {
                              std::string s;
                              for (auto n : tenths) s += " " + std::to_string(n);
                              return s;
                          }());
    // Uniform: 20 per tenth (sd about 4); without jitter all 200 would be in one.
    for (auto n : tenths) BOOST_TEST(n <= clients / 4);
    // Observed, whatever the machine's speed: the returns span most of the window, and few
    // come back in its first tenth (without jitter, nearly all would).
    BOOST_TEST(ms(last_back - first_back) >= window.count() / 2);
    const auto early = std::count_if(delays.begin(), delays.end(), [&](long long d) { return d < window.count() / 10; });
    BOOST_TEST(static_cast<std::size_t>(early) <= clients / 4);
    BOOST_TEST(delays[clients / 2] >= window.count() / 4);
}

BOOST_AUTO_TEST_CASE(a_normal_close_or_a_policy_violation_ends_the_loop) {
    // The server closes with the code the client asks for: 1000 and 1008 end the loop, with
    // the code in closed_why(); no reconnection is tried.
    serving srv(0, [](tcp_ws& ws) -> asio::awaitable<void> {
        auto m = co_await ws.read_message();
        if (!m) co_return;
        const auto code = static_cast<std::uint16_t>(std::stoi(std::string(m->text())));
        const std::string reason = "bye " + std::string(m->text());
        co_await ws.close(code, reason);
    });
    for (std::uint16_t code : {1000, 1008}) {
        BOOST_TEST_CONTEXT("code " << code) {
            run_client([&]() -> asio::awaitable<void> {
                corows::reconnect_options ro;
                ro.initial_delay = 10ms;
                corows::reconnecting rc(srv.url(), corows::options{}, ro);
                int rounds = 0;
                while (auto* ws = co_await rc.next()) {
                    ++rounds;
                    co_await ws->write_text(std::to_string(code));
                    co_await read_to_end(*ws);
                }
                BOOST_TEST(rounds == 1);
                BOOST_TEST(rc.connections() == 1u);
                const corows::close_info& why = rc.closed_why();
                BOOST_TEST((why.phase == close_phase::open));
                BOOST_TEST(why.code == code);
                BOOST_TEST(why.reason == "bye " + std::to_string(code));
                BOOST_TEST(why.remote);
                BOOST_TEST((why.by == ended_by::peer));
                BOOST_TEST(why.error == make_error_code(corows::error::closed));
                BOOST_TEST(why.traffic.messages_sent == 1u);
                BOOST_TEST(why.traffic.payload_bytes_sent == 4u);
                BOOST_TEST(why.traffic.messages_received == 0u);
            }, 20'000ms);
        }
    }
}

BOOST_AUTO_TEST_CASE(retry_after_is_honoured_and_bounded) {
    // 503 with Retry-After: 2 makes the client wait 2 s although its backoff is 20 ms; then
    // it connects. A 429 asking for a day is cut to max_retry_after.
    {
        std::atomic<int> requests{0};
        serving srv(0, refusing(requests, 1, 503, "2"), true);
        run_client([&]() -> asio::awaitable<void> {
            corows::reconnect_options ro;
            ro.initial_delay = 20ms;
            ro.max_delay = 20ms;
            // The default decision, recording what it was asked.
            std::vector<corows::close_info> asked;
            ro.should_reconnect = [&](const corows::close_info& r) {
                asked.push_back(r);
                return corows::reconnect_by_default(r);
            };
            corows::reconnecting rc(srv.url(), corows::options{}, ro);
            corows::connect_info got{};
            rc.on_connect([&](corows::client_websocket&, const corows::connect_info& info) -> asio::awaitable<void> {
                got = info;
                co_return;
            });
            const auto start = clock_type::now();
            auto* ws = co_await rc.next();
            const auto took = clock_type::now() - start;
            BOOST_REQUIRE(ws);
            BOOST_TEST_MESSAGE("503 with Retry-After: 2, connected after " << ms(took) << " ms");
            BOOST_TEST(ms(took) >= 1'900);
            BOOST_TEST(ms(took) < 10'000);
            BOOST_TEST(got.attempts == 2u);
            BOOST_TEST((got.waited >= 2'000ms && got.waited <= 2'020ms), got.waited.count());
            BOOST_TEST(!got.previous_close.ended()); // no connection before
            BOOST_REQUIRE(asked.size() == 1u);
            const corows::close_info& refused = asked[0];
            BOOST_TEST((refused.phase == close_phase::handshake));
            BOOST_TEST(refused.never_opened());
            BOOST_TEST(refused.status == 503u);
            BOOST_TEST((refused.retry_after == std::chrono::seconds(2)));
            BOOST_TEST((refused.error == corows::error::bad_status));
            BOOST_TEST(refused.code == 1006);
            BOOST_TEST(refused.remote);
            BOOST_TEST((refused.by == ended_by::peer));
            BOOST_TEST(refused.traffic.messages_received == 0u);
            const std::string told = "failed in the handshake: refused with 503, Retry-After 2 s: corows::connect: ";
            BOOST_TEST(refused.describe().compare(0, told.size(), told) == 0, refused.describe());
            // The last attempt that ended is the refused one.
            BOOST_TEST(rc.closed_why().status == 503u);
            co_await check_echo(*ws, "served");
        }, 30'000ms);
        BOOST_TEST(requests.load() == 2);
    }
    {
        std::atomic<int> requests{0};
        serving srv(0, refusing(requests, 1, 429, "86400"), true);
        run_client([&]() -> asio::awaitable<void> {
            corows::reconnect_options ro;
            ro.initial_delay = 20ms;
            ro.max_retry_after = 300ms;
            corows::reconnecting rc(srv.url(), corows::options{}, ro);
            const auto start = clock_type::now();
            auto* ws = co_await rc.next();
            BOOST_REQUIRE(ws);
            BOOST_TEST_MESSAGE("429 with Retry-After: 86400, connected after " << ms(clock_type::now() - start) << " ms");
            BOOST_TEST(ms(clock_type::now() - start) >= 290);
            BOOST_TEST(ms(clock_type::now() - start) < 10'000);
        }, 30'000ms);
        BOOST_TEST(requests.load() == 2);
    }
}

BOOST_AUTO_TEST_CASE(stop_ends_a_wait_or_a_connection_at_once) {
    // A 503 asking for a minute parks the client; stop() from another thread, then from a
    // coroutine of the client's own thread, ends the wait at once. stop() during a connection
    // closes it and ends the loop.
    std::atomic<int> requests{0};
    serving parking(0, refusing(requests, 1'000'000, 503, "60"), true);
    for (bool same_thread : {false, true}) {
        BOOST_TEST_CONTEXT("same thread " << same_thread) {
            corows::reconnecting rc(parking.url());
            clock_type::time_point stopped_at{};
            std::thread stopper;
            run_client([&]() -> asio::awaitable<void> {
                // The server has refused: the client is about to wait, or waiting.
                const int before = requests.load();
                auto stop_later = [&, before] {
                    wait_until([&] { return requests.load() > before; }, 20'000ms);
                    std::this_thread::sleep_for(200ms);
                    stopped_at = clock_type::now();
                    rc.stop();
                };
                if (same_thread) {
                    auto ex = co_await asio::this_coro::executor;
                    asio::co_spawn(ex, [&, before]() -> asio::awaitable<void> {
                        while (requests.load() == before) co_await sleep(5ms);
                        co_await sleep(200ms);
                        stopped_at = clock_type::now();
                        rc.stop();
                    }, asio::detached);
                } else {
                    stopper = std::thread(stop_later);
                }
                auto* ws = co_await rc.next();
                BOOST_TEST(!ws);
                BOOST_TEST_MESSAGE("next() returned " << ms(clock_type::now() - stopped_at) << " ms after stop()");
                BOOST_TEST(ms(clock_type::now() - stopped_at) < 1'000);
                BOOST_TEST(rc.closed_why().stopped());
                BOOST_TEST(rc.stopped());
                // Stopped stays stopped.
                auto* again = co_await rc.next();
                BOOST_TEST(!again);
            }, 20'000ms);
            if (stopper.joinable()) stopper.join();
        }
    }

    serving srv(0, echo);
    corows::reconnecting rc(srv.url());
    std::atomic<bool> connected{false};
    clock_type::time_point stopped_at{};
    std::thread stopper([&] {
        wait_until([&] { return connected.load(); }, 20'000ms);
        stopped_at = clock_type::now();
        rc.stop();
    });
    run_client([&]() -> asio::awaitable<void> {
        int rounds = 0;
        while (auto* ws = co_await rc.next()) {
            ++rounds;
            co_await check_echo(*ws, "hello");
            connected = true;
            co_await read_to_end(*ws);
            BOOST_TEST(ws->close_code() == 1000); // the server answered the client's close
        }
        BOOST_TEST(rounds == 1);
        BOOST_TEST(ms(clock_type::now() - stopped_at) < 2'000);
        // Stopped, with the close the stop made.
        const corows::close_info& why = rc.closed_why();
        BOOST_TEST(why.stopped());
        BOOST_TEST((why.by == ended_by::local));
        BOOST_TEST((why.error == std::errc::operation_canceled));
        BOOST_TEST((why.phase == close_phase::open));
        BOOST_TEST(why.code == 1000);
        BOOST_TEST(why.reason == "client stopping");
        BOOST_TEST(why.traffic.messages_sent == 1u);
        BOOST_TEST(!corows::reconnect_by_default(why));
    }, 20'000ms);
    stopper.join();
}

BOOST_AUTO_TEST_CASE(a_403_refusal_and_a_bad_url_end_the_loop_at_once) {
    std::atomic<int> requests{0};
    serving srv(0, refusing(requests, 1'000'000, 403, ""), true);
    run_client([&]() -> asio::awaitable<void> {
        corows::reconnect_options ro;
        ro.initial_delay = 10ms;
        corows::reconnecting rc(srv.url(), corows::options{}, ro);
        auto* ws = co_await rc.next();
        BOOST_TEST(!ws);
        const corows::close_info& why = rc.closed_why();
        BOOST_TEST((why.phase == close_phase::handshake));
        BOOST_TEST((why.error == corows::error::bad_status));
        BOOST_TEST(why.status == 403u);
        BOOST_TEST(!why.retry_after.has_value());
        BOOST_TEST(why.reason.find("403") != std::string::npos, why.reason);
        BOOST_TEST(rc.connections() == 0u);

        corows::reconnecting bad("http://127.0.0.1/");
        const auto start = clock_type::now();
        auto* none = co_await bad.next();
        BOOST_TEST(!none);
        BOOST_TEST(ms(clock_type::now() - start) < 1'000);
        BOOST_TEST((bad.closed_why().error == corows::url_error::bad_scheme));
        BOOST_TEST((bad.closed_why().phase == close_phase::connecting));
        BOOST_TEST((bad.closed_why().by == ended_by::error));
    }, 20'000ms);
    BOOST_TEST(requests.load() == 1);
}

// The spelling of the last release, deprecated for this one: a decision taking
// disconnect_reason, reason() and its kinds still compile and tell the same story.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
BOOST_AUTO_TEST_CASE(the_deprecated_disconnect_reason_still_compiles_and_converts) {
    std::atomic<int> requests{0};
    serving srv(0, refusing(requests, 1'000'000, 403, ""), true);
    run_client([&]() -> asio::awaitable<void> {
        corows::reconnect_options ro;
        std::vector<corows::disconnect_reason> asked;
        ro.should_reconnect = [&](const corows::disconnect_reason& r) {
            asked.push_back(r);
            return corows::reconnect_by_default(r);
        };
        corows::reconnecting rc(srv.url(), corows::options{}, ro);
        corows::connect_info never{};
        rc.on_connect([&](corows::client_websocket&, const corows::connect_info& info) -> asio::awaitable<void> {
            never = info;
            co_return;
        });
        BOOST_TEST(!co_await rc.next());
        BOOST_REQUIRE(asked.size() == 1u);
        BOOST_TEST((asked[0].kind == corows::disconnect_kind::connect_failed));
        BOOST_TEST(asked[0].status == 403u);
        BOOST_TEST((asked[0].error == corows::error::bad_status));
        BOOST_TEST(asked[0].message.find("403") != std::string::npos, asked[0].message);
        BOOST_TEST((rc.reason().kind == corows::disconnect_kind::connect_failed));
        BOOST_TEST(rc.reason().status == 403u);
        BOOST_TEST((never.previous.kind == corows::disconnect_kind::none));
    }, 20'000ms);
    BOOST_TEST(requests.load() == 1);
}
#pragma GCC diagnostic pop

BOOST_AUTO_TEST_CASE(an_unreachable_server_is_retried_with_growing_waits_until_it_answers) {
    // Nothing listens at first: connect fails (refused) and is retried, the waits growing
    // within their bounds; once a server listens there, the client connects.
    const unsigned short port = closed_port();
    std::unique_ptr<serving> late;
    std::thread starter([&] {
        std::this_thread::sleep_for(700ms);
        late = std::make_unique<serving>(port, echo);
    });
    run_client([&]() -> asio::awaitable<void> {
        corows::reconnect_options ro;
        ro.initial_delay = 50ms;
        ro.max_delay = 400ms;
        corows::reconnecting rc("ws://127.0.0.1:" + std::to_string(port) + "/", corows::options{}, ro);
        corows::connect_info got{};
        rc.on_connect([&](corows::client_websocket&, const corows::connect_info& info) -> asio::awaitable<void> {
            got = info;
            co_return;
        });
        auto* ws = co_await rc.next();
        BOOST_REQUIRE(ws);
        BOOST_TEST_MESSAGE("connected after " << got.attempts << " attempts, " << got.waited.count() << " ms of waiting");
        BOOST_TEST(got.attempts >= 2u);
        BOOST_TEST(!got.previous_close.ended());
        BOOST_TEST((got.waited >= 500ms)); // nothing listened for 700 ms
        // The last attempt that failed: refused at TCP, before any HTTP.
        const corows::close_info& refused = rc.closed_why();
        BOOST_TEST_MESSAGE("the last failed attempt: " << refused.describe());
        BOOST_TEST((refused.phase == close_phase::connecting));
        BOOST_TEST((refused.error == corows::error_code(asio::error::connection_refused)));
        BOOST_TEST(refused.code == 1006);
        BOOST_TEST(refused.status == 0u);
        BOOST_TEST(refused.remote);
        BOOST_TEST((refused.by == ended_by::peer));
        BOOST_TEST(corows::reconnect_by_default(refused));
        co_await check_echo(*ws, "late");
    }, 30'000ms);
    starter.join();
}

BOOST_AUTO_TEST_SUITE_END()
