// SPDX-License-Identifier: BSL-1.0
// Completion tokens (detail/initiate.hpp): every operation of websocket and connect() with
// Asio's tokens other than use_awaitable, against a real corows server on its own thread.
#include "server_thread.hpp"

#if defined(COROWS_HAS_TLS)
#include <corows/connect.hpp>
#endif

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace corows::test;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> echo(corows::websocket<asio::ip::tcp::socket>& ws) {
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

/// An io_context run by a thread of its own while the test's thread waits on futures.
struct background_context {
    asio::io_context ctx;
    asio::executor_work_guard<asio::io_context::executor_type> work{ctx.get_executor()};
    std::thread thread{[this] { ctx.run(); }};
    ~background_context() {
        work.reset();
        ctx.stop();
        thread.join();
    }
};

/// Client settings that outlive every operation started with them.
const corows::options client_options;

// Runs `ctx` until `f` is ready: an open connection's keepalive timer keeps run() from
// returning by itself.
template <class T>
T run_for_result(asio::io_context& ctx, std::future<T>& f) {
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) ctx.run_one();
    return f.get();
}

/// Runs `ctx` until `done()` or for at most `limit`.
template <class Done>
void run_until(asio::io_context& ctx, Done done, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && ctx.run_one_until(end) > 0) {
    }
}

/// A connected, handshaken client on `ctx` (built with the awaitable forms, tested elsewhere).
tcp_ws client_of(asio::io_context& ctx, unsigned short port) {
    auto f = asio::co_spawn(ctx, connect_ws_to(port, client_options), asio::use_future);
    return f.get();
}

} // namespace

BOOST_AUTO_TEST_SUITE(completion_tokens)

BOOST_AUTO_TEST_CASE(use_future_writes_reads_and_closes) {
    server_thread srv(corows::server_options(), echo);
    background_context bg;
    tcp_ws ws = client_of(bg.ctx, srv.port());
    // Each operation starts on the connection's thread (a websocket is not thread-safe); the
    // test's thread waits on the future.
    std::future<void> w = asio::post(bg.ctx, asio::use_future([&] { return ws.write_text("through a future", asio::use_future); })).get();
    w.get();
    corows::message m;
    std::future<bool> r = asio::post(bg.ctx, asio::use_future([&] { return ws.read_message(m, asio::use_future); })).get();
    BOOST_TEST(r.get());
    BOOST_TEST(m.text() == "through a future");
    std::future<void> c = asio::post(bg.ctx, asio::use_future([&] { return ws.close(1000, "done", asio::use_future); })).get();
    c.get();
    BOOST_TEST(ws.close_code() == 1000);
}

BOOST_AUTO_TEST_CASE(use_future_reports_a_failure_as_an_exception) {
    server_thread srv(corows::server_options(), echo);
    background_context bg;
    tcp_ws ws = client_of(bg.ctx, srv.port());
    std::future<void> c = asio::post(bg.ctx, asio::use_future([&] { return ws.close(1000, {}, asio::use_future); })).get();
    c.get();
    std::future<void> w = asio::post(bg.ctx, asio::use_future([&] { return ws.write_text("too late", asio::use_future); })).get();
    BOOST_CHECK_EXCEPTION(w.get(), corows::system_error,
                          [](const corows::system_error& e) { return e.code() == corows::error::closed; });
}

BOOST_AUTO_TEST_CASE(callbacks_chain_on_the_connection_thread) {
    server_thread srv(corows::server_options(), echo);
    asio::io_context ctx;
    tcp_ws ws = [&] {
        auto f = asio::co_spawn(ctx, connect_ws_to(srv.port(), client_options), asio::use_future);
        return run_for_result(ctx, f);
    }();
    corows::message m;
    corows::error_code write_ec = corows::error::timeout, read_ec = corows::error::timeout, close_ec = corows::error::timeout;
    bool got = false;
    std::string first;
    std::optional<corows::message> owned;
    ws.write_text("first", [&](corows::error_code ec) {
        write_ec = ec;
        ws.read_message(m, [&](corows::error_code ec, bool g) {
            read_ec = ec;
            got = g;
            first = m.text(); // borrowed from the receive buffer until the next read
            ws.write_text("second", [&](corows::error_code) {
                ws.read_message([&](corows::error_code, std::optional<corows::message> o) {
                    owned = std::move(o);
                    ws.close(1000, "bye", [&](corows::error_code ec) { close_ec = ec; });
                });
            });
        });
    });
    run_until(ctx, [&] { return close_ec != corows::error::timeout; }, 10s);
    BOOST_TEST(!write_ec, write_ec.message());
    BOOST_TEST(!read_ec, read_ec.message());
    BOOST_TEST(got);
    BOOST_TEST(first == "first");
    BOOST_REQUIRE(owned.has_value());
    BOOST_TEST(owned->text() == "second");
    BOOST_TEST(!close_ec);
    BOOST_TEST(ws.close_code() == 1000);
}

/// An echo server, a client connected to it on a context of the test's own, and a strand of
/// that context.
struct client_and_strand {
    server_thread srv{corows::server_options(), echo};
    asio::io_context ctx;
    tcp_ws ws = connect();
    asio::strand<asio::io_context::executor_type> strand = asio::make_strand(ctx);

    tcp_ws connect() {
        auto f = asio::co_spawn(ctx, connect_ws_to(srv.port(), client_options), asio::use_future);
        return run_for_result(ctx, f);
    }
};

BOOST_AUTO_TEST_CASE(a_callback_runs_on_its_bound_executor) {
    client_and_strand c;
    bool in_strand = false;
    bool done = false;
    c.ws.write_text("x", asio::bind_executor(c.strand, [&](corows::error_code) {
        in_strand = c.strand.running_in_this_thread();
        done = true;
    }));
    run_until(c.ctx, [&] { return done; }, 10s);
    BOOST_TEST(in_strand);
}

// read_message() waits for the socket through its own completion handler, not Asio's
// use_awaitable one: a coroutine on a strand must still be resumed on that strand.
BOOST_AUTO_TEST_CASE(a_read_awaited_on_a_strand_resumes_on_it) {
    client_and_strand c;
    bool in_strand = false;
    bool got = false;
    bool done = false;
    corows::message m;
    asio::co_spawn(c.strand, [&]() -> asio::awaitable<void> {
        got = co_await c.ws.read_message(m); // nothing has been sent yet: this waits for the socket
        in_strand = c.strand.running_in_this_thread();
        done = true;
    }, asio::detached);
    asio::steady_timer later(c.ctx, 50ms);
    later.async_wait([&](corows::error_code) { c.ws.write_text("later", asio::detached); });
    run_until(c.ctx, [&] { return done; }, 10s);
    BOOST_TEST(got);
    BOOST_TEST(m.text() == "later");
    BOOST_TEST(in_strand);
}

BOOST_AUTO_TEST_CASE(deferred_as_tuple_redirect_error_and_detached) {
    server_thread srv(corows::server_options(), echo);
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await connect_ws_to(srv.port(), corows::options());
        // deferred: nothing happens until the operation is launched.
        auto later = ws.write_text("deferred", tokens::deferred);
        BOOST_TEST(ws.queued_bytes() == 0u);
        co_await std::move(later)(asio::use_awaitable);
        corows::message m;
        auto [ec, got] = co_await ws.read_message(m, tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec);
        BOOST_TEST(got);
        BOOST_TEST(m.text() == "deferred");
        // detached: fire and forget; the echo proves it went.
        ws.write_text("detached", asio::detached);
        corows::error_code rec;
        bool again = co_await ws.read_message(m, asio::redirect_error(asio::use_awaitable, rec));
        BOOST_TEST(!rec);
        BOOST_TEST(again);
        BOOST_TEST(m.text() == "detached");
        co_await ws.close();
        // A failure through as_tuple and redirect_error: an error code, no exception.
        auto [wec] = co_await ws.write_text("closed", tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(wec == corows::error::closed);
        corows::error_code fec;
        co_await ws.ping({}, asio::redirect_error(asio::use_awaitable, fec));
        BOOST_TEST(fec == corows::error::closed);
    });
    BOOST_TEST(l.run(30s));
}

BOOST_AUTO_TEST_CASE(server_side_operations_take_tokens) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(corows::options());
        auto [rec, req] = co_await ws.read_request(tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!rec);
        BOOST_TEST(req.path() == "/tokens");
        auto [aec] = co_await ws.accept(std::move(req), corows::accept_decision(),
                                        tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!aec);
        auto [pec] = co_await ws.write_prepared(corows::prepared_message::make(corows::as_bytes("prepared"),
                                                                               corows::message_kind::text),
                                                tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!pec);
        auto [fec] = co_await ws.flush(tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!fec);
        corows::message m;
        while (co_await ws.read_message(m)) {
        }
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(corows::options());
        auto [hec] = co_await ws.handshake(l.host(), "/tokens", tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!hec);
        auto [m_ec, m] = co_await ws.read_message(tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!m_ec);
        BOOST_REQUIRE(m.has_value());
        BOOST_TEST(m->text() == "prepared");
        auto [pec] = co_await ws.pong({}, tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!pec);
        co_await ws.close(1000, {}, tokens::as_tuple(asio::use_awaitable));
    });
    BOOST_TEST(l.run(30s));
}

BOOST_AUTO_TEST_CASE(refuse_takes_a_token) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(corows::options());
        auto req = co_await ws.read_request();
        (void)req;
        auto [ec] = co_await ws.refuse(403, "no", {}, tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(corows::options());
        corows::error_code ec;
        std::string host = l.host();
        std::tie(ec) = co_await ws.handshake(host, "/", corows::handshake_request(), corows::use_tuple);
        BOOST_TEST(ec == corows::error::bad_status);
    });
    BOOST_TEST(l.run(30s));
}

// The operations that take a token but were tested only awaited: each with deferred and a
// callback (as_tuple and use_awaitable are in the cases above and in websocket_test).
BOOST_AUTO_TEST_CASE(the_remaining_operations_take_deferred_and_callbacks) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(corows::options());
        corows::http_request req = co_await ws.read_request();
        corows::upgrade_request up;
        BOOST_REQUIRE(!corows::validate_upgrade_request(req, up));
        auto [aec] = co_await ws.accept(std::move(up), corows::accept_decision(), corows::use_tuple);
        BOOST_TEST(!aec);
        const std::vector<std::uint8_t> bytes{0x00, 0xff};
        auto binary = ws.write_binary(bytes, tokens::deferred);
        BOOST_TEST(ws.queued_bytes() == 0u);
        co_await std::move(binary)(asio::use_awaitable);
        auto prepared = ws.write_prepared(
            corows::prepared_message::make(corows::as_bytes("prepared"), corows::message_kind::text), tokens::deferred);
        co_await std::move(prepared)(asio::use_awaitable);
        corows::error_code text_ec = corows::error::timeout, pong_ec = corows::error::timeout;
        ws.write_text("text", [&](corows::error_code ec) { text_ec = ec; });
        ws.pong(corows::as_bytes("unasked"), [&](corows::error_code ec) { pong_ec = ec; });
        // The callbacks' operations run as coroutines of their own, after this one yields.
        while (text_ec == corows::error::timeout || pong_ec == corows::error::timeout)
            co_await asio::post(ws.get_executor(), asio::use_awaitable);
        BOOST_TEST(!text_ec);
        BOOST_TEST(!pong_ec);
        corows::error_code prepared_ec = corows::error::timeout;
        ws.write_prepared(corows::prepared_message::make(corows::as_bytes("last"), corows::message_kind::text),
                          [&](corows::error_code ec) { prepared_ec = ec; });
        while (prepared_ec == corows::error::timeout) co_await asio::post(ws.get_executor(), asio::use_awaitable);
        BOOST_TEST(!prepared_ec);
        co_await ws.pong({}, tokens::deferred)(asio::use_awaitable);
        auto [bec] = co_await ws.write_binary(bytes, corows::use_tuple);
        BOOST_TEST(!bec);
        corows::message m;
        while (co_await ws.read_message(m)) {
        }
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(corows::options());
        co_await ws.handshake(l.host(), "/");
        std::string pongs;
        ws.on_pong([&](std::span<const std::uint8_t> p) { pongs += std::string(p.begin(), p.end()) + ";"; });
        for (const char* want : {"\x00\xff", "prepared", "text", "last", "\x00\xff"}) {
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->size() == (want[0] ? std::strlen(want) : 2u));
            if (want[0]) BOOST_TEST(m->text() == want);
            else BOOST_TEST((m->kind() == corows::message_kind::binary));
        }
        BOOST_TEST(pongs == "unasked;;");
        co_await ws.close();
    });
    BOOST_TEST(l.run(30s));
}

BOOST_AUTO_TEST_CASE(refuse_takes_deferred_and_a_callback) {
    for (bool callback : {false, true}) {
        loop l;
        l.spawn("server", [&]() -> asio::awaitable<void> {
            tcp_ws ws = co_await l.accept_ws(corows::options());
            auto req = co_await ws.read_request();
            (void)req;
            if (callback) {
                corows::error_code done = corows::error::timeout;
                ws.refuse(403, "no", {}, [&](corows::error_code ec) { done = ec; });
                while (done == corows::error::timeout) co_await asio::post(ws.get_executor(), asio::use_awaitable);
                BOOST_TEST(!done);
            } else {
                co_await ws.refuse(404, "none", {}, tokens::deferred)(asio::use_awaitable);
            }
        });
        l.spawn("client", [&]() -> asio::awaitable<void> {
            tcp_ws ws = co_await l.connect_ws(corows::options());
            corows::http_response res;
            auto [ec] = co_await ws.handshake(l.host(), "/", corows::handshake_request(), res, corows::use_tuple);
            BOOST_TEST(ec == corows::error::bad_status);
            BOOST_TEST((ec == corows::condition::handshake_refused));
            BOOST_TEST(res.status == (callback ? 403u : 404u));
        });
        BOOST_TEST(l.run(30s));
    }
}

#if defined(COROWS_HAS_TLS)
BOOST_AUTO_TEST_CASE(connect_with_tokens_and_co_spawn) {
    server_thread srv(corows::server_options(), echo);
    std::string url = "ws://" + srv.host() + "/";
    background_context bg;
    // co_spawn of the awaitable connect(), with a future and with a callback.
    corows::client_websocket a = asio::co_spawn(bg.ctx, corows::connect(url), asio::use_future).get();
    std::promise<bool> opened;
    asio::co_spawn(bg.ctx, corows::connect(url), [&](std::exception_ptr e, corows::client_websocket ws) {
        opened.set_value(!e && ws.is_open());
        auto ex = ws.get_executor();
        asio::co_spawn(ex, [ws = std::move(ws)]() mutable -> asio::awaitable<void> { co_await ws.close(); },
                       asio::detached);
    });
    BOOST_TEST(opened.get_future().get());
    // connect(url, connect_options, token): use_future brings no executor, the options do.
    corows::connect_options on_bg;
    on_bg.executor = bg.ctx.get_executor();
    corows::client_websocket b = corows::connect(url, on_bg, asio::use_future).get();
    BOOST_TEST(b.is_open());
    auto refused = corows::connect("ws://127.0.0.1:1/", on_bg, asio::use_future);
    BOOST_CHECK_THROW(refused.get(), corows::system_error);
    asio::post(bg.ctx, asio::use_future([&] {
        a.abort();
        b.abort();
    })).get();
}
#endif

BOOST_AUTO_TEST_SUITE_END()
