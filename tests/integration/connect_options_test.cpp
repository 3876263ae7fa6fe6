// SPDX-License-Identifier: BSL-1.0
// connect(url, connect_options, token): every kind of completion token, the client-only
// fields that moved out of options, and the deprecated overloads that still read them there.
// Proxies are covered by proxy_test.cpp and Happy Eyeballs by happy_eyeballs_test.cpp, both
// through connect_options.
#include "client_connect.hpp"
#include "proxy_servers.hpp"
#include "server_thread.hpp"

#include <corows/connect.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;

asio::awaitable<void> echo(corows::websocket<asio::ip::tcp::socket>& ws) {
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

// Sends "ping" over `ws`, returns the echo's text, and closes.
asio::awaitable<std::string> ping(corows::client_websocket& ws) {
    co_await ws.write_text("ping");
    auto m = co_await ws.read_message();
    co_await ws.close();
    co_return m ? m->text() : std::string("(nothing)");
}

std::string refused_url() { return "ws://127.0.0.1:" + std::to_string(free_loopback_port()) + "/"; }

} // namespace

BOOST_AUTO_TEST_SUITE(connect_options_forms)

BOOST_AUTO_TEST_CASE(use_awaitable_deferred_and_as_tuple_in_a_coroutine) {
    server_thread srv(corows::server_options(), echo);
    const std::string url = "ws://" + srv.host() + "/";
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options co;
        co.connection.max_message_size = 12345;
        auto a = co_await corows::connect(url, co, asio::use_awaitable);
        BOOST_TEST(a.is_open());
        BOOST_TEST(a.get_options().max_message_size == 12345u); // `connection` is the websocket's
        BOOST_TEST(co_await ping(a) == "ping");

        auto op = corows::connect(url, co, tokens::deferred); // nothing starts until awaited
        auto b = co_await std::move(op)(asio::use_awaitable);
        BOOST_TEST(co_await ping(b) == "ping");

        auto [ec, c] = co_await corows::connect(url, co, tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(co_await ping(c) == "ping");

        corows::connect_failure why;
        co.failure = &why;
        const std::string dead = refused_url();
        auto [refused, d] = co_await corows::connect(dead, co, tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST((refused == asio::error::connection_refused), refused.message());
        BOOST_TEST(!d.is_open());
        BOOST_TEST((why.phase == corows::connect_phase::tcp_connect));
        BOOST_TEST(why.message.find("TCP connect to 127.0.0.1:") != std::string::npos, why.message);

        // use_awaitable throws the same failure, with failure() filled as the pointer was.
        try {
            co_await corows::connect(dead, co, asio::use_awaitable);
            BOOST_ERROR("no exception");
        } catch (const corows::connect_error& e) {
            BOOST_TEST((e.code() == asio::error::connection_refused));
            BOOST_TEST(e.failure().message == why.message);
        }
    });
    BOOST_TEST(l.run(30s));
}

BOOST_AUTO_TEST_CASE(a_callback_runs_on_the_options_executor_or_its_own) {
    server_thread srv(corows::server_options(), echo);
    const std::string url = "ws://" + srv.host() + "/";
    asio::io_context ctx;
    auto work = asio::make_work_guard(ctx);
    std::thread runner([&] { ctx.run(); });

    // A plain callback: the operation runs on connect_options::executor.
    corows::connect_options co;
    co.executor = ctx.get_executor();
    std::promise<bool> opened;
    corows::connect(url, co, [&](corows::error_code ec, corows::client_websocket ws) {
        opened.set_value(!ec && ws.is_open() && ctx.get_executor().running_in_this_thread());
        ws.abort();
    });
    BOOST_TEST(opened.get_future().get());

    // A callback bound to an executor needs none in the options; a refused port is its code.
    std::promise<corows::error_code> refused;
    corows::connect(refused_url(), corows::connect_options(),
                    asio::bind_executor(ctx, [&](corows::error_code ec, corows::client_websocket ws) {
                        refused.set_value(ws.is_open() ? corows::error_code() : ec);
                    }));
    const auto second = refused.get_future().get();
    BOOST_TEST((second == asio::error::connection_refused), second.message());

    // Neither: nowhere to run, said at once rather than on a hidden thread.
    BOOST_CHECK_THROW(corows::connect(url, corows::connect_options(), [](corows::error_code, corows::client_websocket) {}),
                      std::invalid_argument);

    // use_future brings no executor of its own either.
    auto f = corows::connect(url, co, asio::use_future);
    corows::client_websocket ws = f.get();
    BOOST_TEST(ws.is_open());
    asio::post(ctx, asio::use_future([&] { ws.abort(); })).get();
    work.reset();
    runner.join();
}

BOOST_AUTO_TEST_CASE(resolve_pins_the_address_and_the_host_keeps_the_name) {
    server_thread srv(corows::server_options(), echo);
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options co;
        co.resolve = {"127.0.0.1"};
        // No resolver knows this name: only the pinned address can make it connect.
        auto ws = co_await corows::connect("ws://pinned.invalid:" + std::to_string(srv.port()) + "/", co,
                                           asio::use_awaitable);
        BOOST_TEST(co_await ping(ws) == "ping");
    });
    BOOST_TEST(l.run(30s));
}

// Exists to check that the deprecated overloads still honour options' deprecated fields for
// one release: the warnings are expected here and only here.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
BOOST_AUTO_TEST_CASE(the_deprecated_overloads_read_the_fields_options_still_has) {
    server_thread srv(corows::server_options(), echo);
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::options o;
        o.resolve = {"127.0.0.1"};
        o.happy_eyeballs_delay = 0ms;
        auto ws = co_await corows::connect("ws://pinned.invalid:" + std::to_string(srv.port()) + "/", o);
        BOOST_TEST(co_await ping(ws) == "ping");

        corows::options bad;
        bad.proxy = "ftp://proxy:21";
        corows::error_code ec;
        corows::connect_failure why;
        co_await corows::connect("ws://" + srv.host() + "/", bad, ec, why);
        BOOST_TEST((ec == corows::proxy_url_error::bad_scheme), ec.message());
        BOOST_TEST(why.detail == "from connect_options::proxy");
    });
    BOOST_TEST(l.run(30s));
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

BOOST_AUTO_TEST_CASE(clients_on_several_threads_count_into_one_shared_counters) {
    server_thread srv(corows::server_options(), echo);
    const std::string url = "ws://" + srv.host() + "/";
    corows::shared_connection_counters counts;
    constexpr std::size_t clients = 4;
    std::vector<std::future<std::string>> echoes;
    {
        asio::io_context ctx;
        for (std::size_t i = 0; i < clients; ++i)
            echoes.push_back(asio::co_spawn(asio::make_strand(ctx), [&]() -> asio::awaitable<std::string> {
                corows::connect_options co;
                co.counters = &counts;
                auto ws = co_await corows::connect(url, co, asio::use_awaitable);
                co_return co_await ping(ws);
            }, asio::use_future));
        std::thread other([&ctx] { ctx.run(); });
        ctx.run();
        other.join();
    } // every connection is gone with the context
    for (auto& e : echoes) BOOST_TEST(e.get() == "ping");
    const auto m = counts.snapshot();
    BOOST_TEST(counts.parts() == 0u);
    BOOST_TEST(m.opened == clients);
    BOOST_TEST(m.closed() == clients);
    BOOST_TEST(m.closed_by[static_cast<std::size_t>(corows::ended_by::local)] == clients);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1000)] == clients);
    BOOST_TEST(m.messages_sent == clients);
    BOOST_TEST(m.messages_received == clients);
    BOOST_TEST(m.payload_bytes_sent == 4 * clients);
    // Masked: "ping" in 2 + 4 + 4 bytes, the close (1000) in 2 + 4 + 2; back unmasked, 6 and 4.
    BOOST_TEST(m.wire_bytes_sent == (10u + 8u) * clients);
    BOOST_TEST(m.wire_bytes_received == (6u + 4u) * clients);
    BOOST_TEST(m.frames_sent == 2 * clients);
    BOOST_TEST(m.frames_received == 2 * clients);
    BOOST_TEST(m.queued_output_bytes == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
