// SPDX-License-Identifier: BSL-1.0
// wss:// end to end: corows::connect() against a corows server on an ssl::stream, with a
// certificate made in memory for each test, and the failures TLS must turn into clean errors.
#include "certs.hpp"
#include "client_connect.hpp"
#include "loopback.hpp"

#include <corows/connect.hpp>
#include <corows/protocol/url.hpp>
#include <corows/server.hpp>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using corows::message;
using corows::message_kind;
using corows::test::loop;
using corows::test::client_options;
using corows::test::connect_reporting;
using corows::test::with_request;
using tcp = asio::ip::tcp;
using tls_socket = asio::ssl::stream<tcp::socket>;
using tls_ws = corows::websocket<tls_socket>;
using plain_ws = corows::websocket<tcp::socket>;
using namespace std::chrono_literals;

// Certificates: certs.hpp.
using corows::test::client_context;
using corows::test::loopback_cert;
using corows::test::make_cert;
using corows::test::server_context;
using corows::test::test_cert;

/// True if `ec` is OpenSSL's "certificate verify failed".
bool is_verify_failure(corows::error_code ec) {
    return ec.category() == asio::error::get_ssl_category() &&
           ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_CERTIFICATE_VERIFY_FAILED;
}

// ------------------------------------------------------------------ servers

/// Accepts one TCP connection and completes the TLS handshake on it; ec on failure.
asio::awaitable<tls_socket> accept_tls(tcp::acceptor& acceptor, asio::ssl::context& ctx, corows::error_code& ec) {
    tls_socket s(co_await acceptor.async_accept(asio::use_awaitable), ctx);
    co_await s.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
    co_return s;
}

/// What the server saw of the client.
struct seen_request {
    std::string target;
    std::string host;
    std::string sni; // "(none)" if the client sent no server name
};

/// Echoes every message until the peer closes.
template <class Ws>
asio::awaitable<void> echo(Ws& ws) {
    message m;
    for (;;) {
        bool got = co_await ws.read_message(m);
        if (!got) break;
        co_await ws.write_message(m);
    }
}

/// A TLS WebSocket server for one connection: records the request, accepts, echoes.
asio::awaitable<void> tls_echo_server(loop& l, asio::ssl::context& ctx, const corows::options& opts,
                                      seen_request& seen) {
    corows::error_code ec;
    tls_socket s = co_await accept_tls(l.acceptor(), ctx, ec);
    if (ec) throw corows::system_error(ec, "server TLS handshake");
    const char* sni = SSL_get_servername(s.native_handle(), TLSEXT_NAMETYPE_host_name);
    seen.sni = sni ? sni : "(none)";
    tls_ws ws(std::move(s), opts);
    corows::http_request req = co_await ws.read_request();
    seen.target = req.target;
    seen.host = std::string(req.find("Host").value_or(""));
    co_await ws.accept(req);
    co_await echo(ws);
    BOOST_TEST(ws.close_code() == 1000);
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng() % 64 + 32); // printable: valid text too
    return v;
}

// Arrays, not braced lists: GCC 12 miscompiles initializer lists inside coroutines.
constexpr std::array<message_kind, 2> both_kinds{message_kind::text, message_kind::binary};
const std::vector<std::size_t> all_sizes{0, 1, 125, 126, 65535, 65536, 1024 * 1024};

/// Sends one message of each size and kind and checks the echo.
asio::awaitable<void> echo_round_trips(corows::client_websocket& ws, const std::vector<std::size_t>& sizes,
                                       bool compressed) {
    for (std::size_t n : sizes) {
        for (auto kind : both_kinds) {
            auto payload = pattern(n, static_cast<std::uint32_t>(n));
            co_await ws.write_message(payload, kind);
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST((m->kind() == kind));
            BOOST_TEST(m->size() == n);
            BOOST_TEST((std::equal(payload.begin(), payload.end(), m->data().begin(), m->data().end())));
            BOOST_TEST(m->compressed() == compressed);
        }
    }
}

std::string port_of(loop& l) { return std::to_string(l.endpoint().port()); }

corows::options with_deflate(corows::options o) {
    o.deflate.enabled = true;
    o.deflate.threshold = 0;
    return o;
}

// Sets `at` when `s` yields its first byte, or ends.
asio::awaitable<void> note_end(tls_socket& s, std::shared_ptr<std::optional<std::chrono::steady_clock::time_point>> at) {
    char c;
    corows::error_code ec;
    co_await s.async_read_some(asio::buffer(&c, 1), asio::redirect_error(asio::use_awaitable, ec));
    *at = std::chrono::steady_clock::now();
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(wss_echo_sizes_with_and_without_deflate) {
    for (bool deflate : {false, true}) {
        BOOST_TEST_CONTEXT("deflate " << deflate) {
            loop l;
            auto sctx = server_context(loopback_cert());
            auto cctx = client_context(loopback_cert());
            corows::options opts;
            if (deflate) opts = with_deflate(opts);
            seen_request seen;
            l.spawn("server", [&]() -> asio::awaitable<void> { co_await tls_echo_server(l, sctx, opts, seen); });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                auto ws = co_await corows::connect("wss://LocalHost:" + port_of(l) + "/path?x=1", client_options(opts, &cctx));
                BOOST_TEST(ws.is_open());
                BOOST_TEST(ws.next_layer().is_tls());
                BOOST_TEST(ws.deflate().has_value() == deflate);
                co_await echo_round_trips(ws, all_sizes, deflate);
                co_await ws.close(1000, "bye");
                BOOST_TEST(!ws.is_open());
                BOOST_TEST(ws.close_code() == 1000);
            });
            l.run(60s);
            BOOST_TEST(seen.target == "/path?x=1");
            BOOST_TEST(seen.host == "localhost:" + port_of(l));
            BOOST_TEST(seen.sni == "localhost");
        }
    }
}

BOOST_AUTO_TEST_CASE(event_server_over_tls_echoes_and_reports_the_close) {
    // run_events() over TLS: the same callbacks, driven by a read loop per connection.
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    std::atomic<int> opened{0}, closed_normally{0};
    corows::server_options o;
    o.connection.max_message_size = 2 * 1024 * 1024;
    corows::basic_server<tls_socket> srv(o, [&sctx](tcp::socket s) { return tls_socket(std::move(s), sctx); });
    corows::basic_server<tls_socket>::event_handlers h;
    h.on_open = [&](tls_ws&) { ++opened; };
    h.on_message = [](tls_ws& ws, const message& m) { ws.send(m); };
    h.on_close = [&](tls_ws& ws, corows::error_code why) {
        if (why == corows::error::closed && ws.close_code() == 1000) ++closed_normally;
    };
    auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    std::thread runner([&] { srv.run_events(std::move(h)); });
    {
        loop l;
        l.spawn("client", [&]() -> asio::awaitable<void> {
            auto ws = co_await corows::connect("wss://127.0.0.1:" + std::to_string(port), client_options(corows::options{}, &cctx));
            co_await echo_round_trips(ws, all_sizes, false);
            co_await ws.close(1000, "bye");
        });
        l.run(60s);
    }
    auto end = std::chrono::steady_clock::now() + 5s;
    while (closed_normally == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(2ms);
    srv.stop(1s);
    runner.join();
    BOOST_TEST(opened.load() == 1);
    BOOST_TEST(closed_normally.load() == 1);
}

BOOST_AUTO_TEST_CASE(wss_to_an_ip_literal_checks_the_ip_san_and_sends_no_sni) {
    loop l;
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    corows::options opts;
    seen_request seen;
    const std::vector<std::size_t> sizes(1, 5);
    l.spawn("server", [&]() -> asio::awaitable<void> { co_await tls_echo_server(l, sctx, opts, seen); });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await corows::connect("wss://127.0.0.1:" + port_of(l), client_options(opts, &cctx));
        co_await echo_round_trips(ws, sizes, false);
        co_await ws.close(1000, {});
    });
    l.run(30s);
    BOOST_TEST(seen.sni == "(none)");
    BOOST_TEST(seen.target == "/");
    BOOST_TEST(seen.host == "127.0.0.1:" + port_of(l));
}

BOOST_AUTO_TEST_CASE(default_context_rejects_a_self_signed_certificate) {
    loop l;
    auto sctx = server_context(loopback_cert());
    corows::options opts;
    int server_failures = 0;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 2; ++i) {
            corows::error_code ec;
            co_await accept_tls(l.acceptor(), sctx, ec);
            if (ec) ++server_failures;
        }
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        std::string url = "wss://localhost:" + port_of(l) + "/";
        corows::error_code ec;
        auto ws = co_await connect_reporting(url, client_options(opts), ec);
        BOOST_TEST(is_verify_failure(ec), ec.message());
        BOOST_TEST(!ws.is_open());
        try {
            co_await corows::connect(url);
            BOOST_ERROR("connect() to an untrusted server did not throw");
        } catch (const corows::system_error& e) {
            BOOST_TEST(is_verify_failure(e.code()), e.what());
        }
    });
    l.run(30s);
    BOOST_TEST(server_failures == 2);
}

BOOST_AUTO_TEST_CASE(a_name_the_certificate_does_not_cover_fails_verification) {
    // A trusted certificate for another name, and one without the IP SAN.
    const std::array<std::pair<test_cert, std::string>, 2> cases{
        std::pair{make_cert("example.com", "DNS:example.com"), std::string("localhost")},
        std::pair{make_cert("localhost", "DNS:localhost"), std::string("127.0.0.1")}};
    for (const auto& c : cases) {
        const test_cert& cert = c.first;
        const std::string& host = c.second;
        BOOST_TEST_CONTEXT("connecting to " << host) {
            loop l;
            auto sctx = server_context(cert);
            auto cctx = client_context(cert);
            corows::options opts;
            corows::error_code server_ec;
            l.spawn("server", [&]() -> asio::awaitable<void> {
                co_await accept_tls(l.acceptor(), sctx, server_ec);
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                corows::error_code ec;
                auto ws = co_await connect_reporting("wss://" + host + ":" + port_of(l), client_options(opts, &cctx), ec);
                BOOST_TEST(is_verify_failure(ec), ec.message());
                BOOST_TEST(!ws.is_open());
            });
            l.run(30s);
            BOOST_TEST((server_ec.category() == asio::error::get_ssl_category()), server_ec.message());
        }
    }
}

BOOST_AUTO_TEST_CASE(ws_url_connects_to_a_plain_server) {
    for (bool deflate : {false, true}) {
        BOOST_TEST_CONTEXT("deflate " << deflate) {
            loop l;
            corows::options opts;
            if (deflate) opts = with_deflate(opts);
            seen_request seen;
            l.spawn("server", [&]() -> asio::awaitable<void> {
                plain_ws ws(co_await l.acceptor().async_accept(asio::use_awaitable), opts);
                corows::http_request req = co_await ws.read_request();
                seen.target = req.target;
                seen.host = std::string(req.find("Host").value_or(""));
                co_await ws.accept(req);
                co_await echo(ws);
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                corows::handshake_request extra;
                extra.origin = "http://app.test";
                auto ws = co_await corows::connect("ws://127.0.0.1:" + port_of(l) + "/chat?room=1", with_request(client_options(opts), extra));
                BOOST_TEST(!ws.next_layer().is_tls());
                BOOST_TEST(ws.deflate().has_value() == deflate);
                co_await echo_round_trips(ws, all_sizes, deflate);
                co_await ws.close(1000, {});
                BOOST_TEST(ws.close_code() == 1000);
            });
            l.run(60s);
            BOOST_TEST(seen.target == "/chat?room=1");
            BOOST_TEST(seen.host == "127.0.0.1:" + port_of(l));
        }
    }
}

BOOST_AUTO_TEST_CASE(bad_urls_and_unreachable_servers_give_clean_errors) {
    loop l;
    // A port nobody listens on: bind, read the port, close.
    std::uint16_t dead_port = 0;
    {
        tcp::acceptor a(l.ctx(), {asio::ip::make_address("127.0.0.1"), 0});
        dead_port = a.local_endpoint().port();
    }
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::options opts;
        const std::pair<const char*, corows::url_error> bad[] = {
            {"http://127.0.0.1/", corows::url_error::bad_scheme},
            {"127.0.0.1:80", corows::url_error::bad_scheme},
            {"ws://", corows::url_error::bad_host},
            {"wss://[::1/", corows::url_error::bad_host},
            {"ws://127.0.0.1:70000/", corows::url_error::bad_port},
            {"ws://u:p@127.0.0.1/", corows::url_error::userinfo},
            {"ws://127.0.0.1/#x", corows::url_error::fragment},
            {"ws://127.0.0.1/\r\nX: y", corows::url_error::bad_target},
        };
        for (const auto& [text, expected] : bad) {
            corows::error_code ec;
            auto ws = co_await connect_reporting(text, client_options(opts), ec);
            BOOST_TEST((ec == expected), text << ": " << ec.message());
            BOOST_TEST(!ws.is_open());
            try {
                co_await corows::connect(text);
                BOOST_ERROR(text << ": no exception");
            } catch (const corows::system_error& e) {
                BOOST_TEST((e.code() == expected), text << ": " << e.what());
            }
        }
        const std::array<std::string, 2> schemes{"ws", "wss"};
        for (const auto& scheme : schemes) {
            corows::error_code ec;
            auto ws = co_await connect_reporting(scheme + "://127.0.0.1:" + std::to_string(dead_port), client_options(opts), ec);
            BOOST_TEST((ec == asio::error::connection_refused), scheme << ": " << ec.message());
            BOOST_TEST(!ws.is_open());
        }
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(a_stalled_tls_handshake_times_out) {
    loop l;
    corows::test::event client_done;
    l.spawn("silent server", [&]() -> asio::awaitable<void> {
        // Takes the connection and the ClientHello, and never answers.
        tcp::socket s = co_await l.acceptor().async_accept(asio::use_awaitable);
        std::array<char, 4096> buf;
        for (;;) {
            corows::error_code ec;
            co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
        }
        co_await client_done.wait();
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::options opts;
        opts.handshake_timeout = 300ms;
        auto start = std::chrono::steady_clock::now();
        corows::error_code ec;
        auto ws = co_await connect_reporting("wss://localhost:" + port_of(l) + "/", client_options(opts), ec);
        auto took = corows::test::ms_since(start);
        BOOST_TEST((ec == corows::error::timeout), ec.message());
        BOOST_TEST(took >= 250);
        BOOST_TEST(took < 3000);
        BOOST_TEST(!ws.is_open());
        client_done.set();
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(wss_client_against_a_plain_server_fails_cleanly) {
    loop l;
    corows::error_code server_ec;
    l.spawn("plain server", [&]() -> asio::awaitable<void> {
        plain_ws ws(co_await l.acceptor().async_accept(asio::use_awaitable), corows::options{});
        std::tie(server_ec) = co_await ws.accept(corows::use_tuple);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        auto cctx = client_context(loopback_cert());
        auto ws = co_await connect_reporting("wss://127.0.0.1:" + port_of(l), client_options(corows::options{}, &cctx), ec);
        BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
        BOOST_TEST(!ws.is_open());
    });
    l.run(30s);
    BOOST_TEST(static_cast<bool>(server_ec), "the server took a ClientHello for an upgrade request");
}

BOOST_AUTO_TEST_CASE(ws_client_against_a_tls_server_fails_cleanly) {
    loop l;
    auto sctx = server_context(loopback_cert());
    corows::error_code server_ec;
    l.spawn("TLS server", [&]() -> asio::awaitable<void> {
        co_await accept_tls(l.acceptor(), sctx, server_ec);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        auto ws = co_await connect_reporting("ws://127.0.0.1:" + port_of(l), client_options(corows::options{}), ec);
        BOOST_TEST(static_cast<bool>(ec), "a plain upgrade request was answered by a TLS server");
        BOOST_TEST(!ws.is_open());
    });
    l.run(30s);
    BOOST_TEST((server_ec.category() == asio::error::get_ssl_category()), server_ec.message());
}

BOOST_AUTO_TEST_CASE(full_duplex_over_tls_then_server_close) {
    // Both sides write while they read, so the TLS stream carries a read and a write at once.
    constexpr int count = 2000;
    loop l;
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    corows::options opts = with_deflate(corows::options{});
    using namespace asio::experimental::awaitable_operators;
    auto writer = [](auto& ws, std::string prefix) -> asio::awaitable<void> {
        for (int i = 0; i < count; ++i) co_await ws.write_text(prefix + std::to_string(i) + std::string(300, 'x'));
        co_await ws.flush();
    };
    auto reader = [](auto& ws, std::string prefix) -> asio::awaitable<void> {
        for (int i = 0; i < count; ++i) {
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_REQUIRE(m->text() == prefix + std::to_string(i) + std::string(300, 'x'));
        }
    };
    l.spawn("server", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        tls_socket s = co_await accept_tls(l.acceptor(), sctx, ec);
        if (ec) throw corows::system_error(ec);
        tls_ws ws(std::move(s), opts);
        co_await ws.accept();
        co_await (writer(ws, "s") && reader(ws, "c"));
        co_await ws.close(4000, "done");
        BOOST_TEST(ws.close_code() == 4000);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await corows::connect("wss://localhost:" + port_of(l), client_options(opts, &cctx));
        co_await (writer(ws, "c") && reader(ws, "s"));
        auto end = co_await ws.read_message();
        BOOST_TEST(!end.has_value());
        BOOST_TEST(ws.close_code() == 4000);
        BOOST_TEST(ws.close_reason() == "done");
        BOOST_TEST(!ws.is_open());
    });
    l.run(60s);
}

BOOST_AUTO_TEST_CASE(tls_client_abort_is_seen_as_abnormal_closure) {
    loop l;
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    corows::options opts;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        tls_socket s = co_await accept_tls(l.acceptor(), sctx, ec);
        if (ec) throw corows::system_error(ec);
        tls_ws ws(std::move(s), opts);
        co_await ws.accept();
        auto m = co_await ws.read_message();
        BOOST_REQUIRE(m.has_value());
        BOOST_TEST(m->text() == "last words");
        auto end = co_await ws.read_message();
        BOOST_TEST(!end.has_value());
        BOOST_TEST(ws.close_code() == 1006);
        BOOST_TEST(!ws.is_open());
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await corows::connect("wss://localhost:" + port_of(l), client_options(opts, &cctx));
        co_await ws.write_text("last words");
        co_await ws.flush();
        ws.abort();
        BOOST_TEST(!ws.is_open());
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(client_stream_switches_alternatives) {
    asio::io_context io;
    auto cctx = client_context(loopback_cert());
    corows::client_stream s(io.get_executor());
    BOOST_TEST(!s.is_tls());
    BOOST_TEST(s.plain() != nullptr);
    BOOST_TEST(s.tls() == nullptr);
    s = corows::client_stream(io.get_executor(), cctx);
    BOOST_TEST(s.is_tls());
    BOOST_TEST(s.tls() != nullptr);
    BOOST_TEST(s.plain() == nullptr);
    // TLS over TLS: the replaced stream's SSL object must be freed (ASan/valgrind would see it).
    s = corows::client_stream(io.get_executor(), cctx);
    BOOST_TEST(s.is_tls());
    BOOST_TEST(!s.lowest_layer().is_open());
    BOOST_TEST((&s.lowest_layer() == &s.tls()->lowest_layer()));
    s = corows::client_stream(io.get_executor());
    BOOST_TEST(!s.is_tls());
    BOOST_TEST((s.get_executor() == io.get_executor()));
}

BOOST_AUTO_TEST_SUITE_END()

// The admission case that needs TLS (the rest are in admission_test.cpp): this file is built
// only where OpenSSL is.
BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(a_wss_handshake_has_one_deadline_for_tls_and_the_upgrade) {
    // TLS done near the end of handshake_timeout, then a trickled request: the connection is
    // closed at the deadline from accept, not a second timeout later.
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    corows::server_options o;
    o.connection.handshake_timeout = 1500ms;
    corows::basic_server<tls_socket> srv(o, [&sctx](tcp::socket s) { return tls_socket(std::move(s), sctx); });
    auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    std::thread runner([&] {
        srv.run([](corows::websocket<tls_socket>& ws) -> asio::awaitable<void> {
            corows::message m;
            while (co_await ws.read_message(m)) co_await ws.write_message(m);
        });
    });
    std::chrono::steady_clock::duration took{};
    bool ended = false;
    bool ok = false;
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        tls_socket s(ex, cctx);
        auto start = std::chrono::steady_clock::now();
        co_await s.next_layer().async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
        co_await corows::test::sleep(1000ms);
        co_await s.async_handshake(tls_socket::client, asio::use_awaitable);
        const std::string head = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        // A reader notes when the server ends the connection while the request trickles.
        auto closed_at = std::make_shared<std::optional<std::chrono::steady_clock::time_point>>();
        asio::co_spawn(ex, note_end(s, closed_at), asio::detached);
        corows::error_code ec;
        for (std::size_t i = 0; i < head.size() - 2 && !ec && !*closed_at; ++i) {
            co_await asio::async_write(s, asio::buffer(head.data() + i, 1), asio::redirect_error(asio::use_awaitable, ec));
            co_await corows::test::sleep(50ms);
        }
        while (!*closed_at) co_await corows::test::sleep(10ms);
        took = **closed_at - start;
        ended = true;
        ok = true;
    });
    l.run(6s);
    srv.stop(0ms);
    runner.join();
    BOOST_TEST(ok);
    BOOST_TEST(ended, "the trickled request was still read");
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    BOOST_TEST((ms >= 1400 && ms < 2250), "closed " << ms << " ms after connect; the deadline was 1500 ms");
}

BOOST_AUTO_TEST_SUITE_END()
