// SPDX-License-Identifier: BSL-1.0
// corows::tls_stream against OpenSSL through Asio's own ssl::stream (both roles), under a
// corows server, and against peers that trickle, send garbage, or leave without close_notify.
#include "certs.hpp"
#include "forged_records.hpp"
#include "client_connect.hpp"
#include "loopback.hpp"

#include <corows/connect.hpp>
#include <corows/server.hpp>
#include <corows/detail/tls13_records.hpp>
#include <corows/tls_stream.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using corows::test::client_context;
using corows::test::forged_records;
using corows::test::log_traffic_secret;
using corows::test::client_options;
using corows::test::loop;
using corows::test::loopback_cert;
using corows::test::sealed;
using corows::test::server_context;
using tcp = asio::ip::tcp;
using asio_tls = asio::ssl::stream<tcp::socket>;
using namespace std::chrono_literals;

std::vector<std::uint8_t> noise(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

/// Reads exactly `n` bytes from `s` in reads of at most `chunk` bytes.
template <class Stream>
asio::awaitable<std::vector<std::uint8_t>> read_in_chunks(Stream& s, std::size_t n, std::size_t chunk) {
    std::vector<std::uint8_t> got(n);
    std::size_t at = 0;
    while (at < n) {
        std::size_t k = std::min(chunk, n - at);
        at += co_await s.async_read_some(asio::buffer(got.data() + at, k), asio::use_awaitable);
    }
    co_return got;
}

// Sizes that fall on and around TLS's 16 KiB record boundary, and one of many records.
const std::vector<std::size_t> sizes{1, 100, 16383, 16384, 16385, 70000, 1 << 20};

/// Writes `bytes` to `s` in a coroutine of its own; `done` is set when they are written (the
/// reader must run meanwhile: a megabyte does not fit in the sockets' buffers).
template <class Stream>
void write_beside(Stream& s, const std::vector<std::uint8_t>& bytes, corows::test::event& done) {
    asio::co_spawn(
        s.get_executor(),
        [&]() -> asio::awaitable<void> { co_await asio::async_write(s, asio::buffer(bytes), asio::use_awaitable); },
        [&done](std::exception_ptr e) {
            BOOST_TEST(!e);
            done.set();
        });
}

/// Sends each size from `a` to `b` and back, `b` reading in chunks of `chunk` bytes.
template <class A, class B>
asio::awaitable<void> exchange(A& a, B& b, std::size_t chunk) {
    for (std::size_t n : sizes) {
        auto out = noise(n, static_cast<std::uint32_t>(n + chunk));
        corows::test::event sent, returned;
        write_beside(a, out, sent);
        auto in = co_await read_in_chunks(b, n, chunk);
        co_await sent.wait();
        BOOST_TEST((in == out), n << " bytes from a, read in chunks of " << chunk);
        write_beside(b, in, returned);
        auto back = co_await read_in_chunks(a, n, 65536);
        co_await returned.wait();
        BOOST_TEST((back == out), n << " bytes back");
    }
}

/// A relay between a client and `to` that forwards the client's bytes one at a time (so the
/// server sees every split point of the handshake) and the server's as they come.
asio::awaitable<void> trickle_relay(tcp::acceptor& front, tcp::endpoint to) {
    tcp::socket c = co_await front.async_accept(asio::use_awaitable);
    tcp::socket s(c.get_executor());
    co_await s.async_connect(to, asio::use_awaitable);
    c.set_option(tcp::no_delay(true));
    s.set_option(tcp::no_delay(true));
    auto pump = [](tcp::socket& from, tcp::socket& into, std::size_t step) -> asio::awaitable<void> {
        std::array<std::uint8_t, 4096> buf;
        corows::error_code ec;
        for (;;) {
            std::size_t n = co_await from.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
            for (std::size_t at = 0; at < n && !ec; at += step)
                co_await asio::async_write(into, asio::buffer(buf.data() + at, std::min(step, n - at)),
                                           asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
        }
        into.shutdown(tcp::socket::shutdown_send, ec);
    };
    corows::test::event back_done;
    asio::co_spawn(c.get_executor(), pump(s, c, 65536), [&back_done](std::exception_ptr) { back_done.set(); });
    co_await pump(c, s, 1);
    co_await back_done.wait();
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_stream)

BOOST_AUTO_TEST_CASE(server_role_against_asio_ssl_moves_every_size_both_ways,
                     *boost::unit_test::label("slow")) {
    for (bool release : {false, true})
    for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
        BOOST_TEST_CONTEXT("reads of " << chunk << ", OpenSSL released " << release) {
            loop l;
            auto sctx = server_context(loopback_cert());
            auto cctx = client_context(loopback_cert());
            corows::test::event served;
            std::unique_ptr<corows::tls_stream> server;
            l.spawn("server", [&]() -> asio::awaitable<void> {
                server = std::make_unique<corows::tls_stream>(co_await l.acceptor().async_accept(asio::use_awaitable),
                                                              sctx);
                co_await server->async_handshake(corows::tls_stream::server, asio::use_awaitable);
                if (release) server->release_openssl();
                BOOST_TEST(server->openssl_released() == release);
                BOOST_TEST((server->native_handle() == nullptr) == release);
                served.set();
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                asio_tls c(l.ctx(), cctx);
                c.set_verify_mode(asio::ssl::verify_peer);
                co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
                co_await c.async_handshake(asio_tls::client, asio::use_awaitable);
                co_await served.wait();
                co_await exchange(c, *server, chunk);
                if (release && chunk == 4096) {
                    // The peer rekeys (and asks us to): both directions move to new keys.
                    BOOST_TEST(SSL_key_update(c.native_handle(), SSL_KEY_UPDATE_REQUESTED) == 1);
                    co_await exchange(c, *server, chunk);
                    BOOST_TEST(SSL_key_update(c.native_handle(), SSL_KEY_UPDATE_NOT_REQUESTED) == 1);
                    co_await exchange(c, *server, chunk);
                }
                if (release) {
                    // close_notify each way.
                    co_await server->async_shutdown(asio::use_awaitable);
                    std::array<std::uint8_t, 16> buf;
                    corows::error_code ec;
                    co_await c.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
                    BOOST_TEST((ec == asio::error::eof || ec == asio::ssl::error::stream_truncated), ec.message());
                    co_await c.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
                    co_await server->async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
                    BOOST_TEST(ec == asio::error::eof, ec.message());
                }
                // Everything read: the stream keeps no ciphertext of its own.
                BOOST_TEST(server->held_bytes() == 0u);
            });
            l.run(60s);
        }
    }
}

BOOST_AUTO_TEST_CASE(client_role_verifies_the_server_and_moves_every_size) {
    for (bool release : {false, true}) {
        BOOST_TEST_CONTEXT("OpenSSL released " << release) {
            loop l;
            auto sctx = server_context(loopback_cert());
            auto cctx = client_context(loopback_cert());
            cctx.set_verify_mode(asio::ssl::verify_peer);
            corows::test::event served;
            std::unique_ptr<asio_tls> server;
            l.spawn("server", [&]() -> asio::awaitable<void> {
                server = std::make_unique<asio_tls>(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
                co_await server->async_handshake(asio_tls::server, asio::use_awaitable);
                served.set();
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                corows::tls_stream c(l.ctx().get_executor(), cctx);
                SSL_set_tlsext_host_name(c.native_handle(), "localhost");
                if (release) c.release_openssl(); // before the handshake, as a client must
                co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
                co_await c.async_handshake(corows::tls_stream::client, asio::use_awaitable);
                BOOST_TEST(SSL_get_verify_result(c.native_handle()) == X509_V_OK);
                if (release) {
                    // The server's session tickets come before or after this: skipped either way.
                    c.release_openssl();
                    BOOST_TEST(c.openssl_released());
                }
                co_await served.wait();
                co_await exchange(c, *server, 3000);
                if (release) {
                    // The server rekeys (and asks us to), then only rekeys.
                    BOOST_TEST(SSL_key_update(server->native_handle(), SSL_KEY_UPDATE_REQUESTED) == 1);
                    co_await exchange(c, *server, 3000);
                    BOOST_TEST(SSL_key_update(server->native_handle(), SSL_KEY_UPDATE_NOT_REQUESTED) == 1);
                    co_await exchange(c, *server, 3000);
                }
                // close_notify from us reads as end of stream over there.
                co_await c.async_shutdown(asio::use_awaitable);
                std::array<char, 16> buf;
                corows::error_code ec;
                co_await server->async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
                BOOST_TEST((ec == asio::error::eof), ec.message());
            });
            l.run(60s);
        }
    }
}

BOOST_AUTO_TEST_CASE(an_untrusted_server_fails_the_client_handshake_with_openssls_reason) {
    loop l;
    auto sctx = server_context(corows::test::make_cert("other", "DNS:other"));
    auto cctx = client_context(loopback_cert());
    cctx.set_verify_mode(asio::ssl::verify_peer);
    l.spawn("server", [&]() -> asio::awaitable<void> {
        asio_tls s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
        corows::error_code ec;
        co_await s.async_handshake(asio_tls::server, asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST(!!ec); // the client's alert
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::tls_stream c(l.ctx().get_executor(), cctx);
        co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
        corows::error_code ec;
        co_await c.async_handshake(corows::tls_stream::client, asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
        BOOST_TEST(ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_CERTIFICATE_VERIFY_FAILED);
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(a_handshake_trickled_one_byte_at_a_time_completes) {
    loop l;
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    tcp::acceptor front(l.ctx(), {asio::ip::make_address("127.0.0.1"), 0});
    l.spawn("relay", [&]() -> asio::awaitable<void> { co_await trickle_relay(front, l.endpoint()); });
    l.spawn("server", [&]() -> asio::awaitable<void> {
        corows::tls_stream s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
        co_await s.async_handshake(corows::tls_stream::server, asio::use_awaitable);
        auto got = co_await read_in_chunks(s, 5000, 5000);
        co_await asio::async_write(s, asio::buffer(got), asio::use_awaitable);
        co_await s.async_shutdown(asio::use_awaitable);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        asio_tls c(l.ctx(), cctx);
        co_await c.next_layer().async_connect(front.local_endpoint(), asio::use_awaitable);
        co_await c.async_handshake(asio_tls::client, asio::use_awaitable);
        auto out = noise(5000, 5);
        co_await asio::async_write(c, asio::buffer(out), asio::use_awaitable);
        auto back = co_await read_in_chunks(c, 5000, 5000);
        BOOST_TEST((back == out));
        corows::error_code ec;
        std::array<char, 8> buf;
        co_await c.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
        BOOST_TEST((ec == asio::error::eof), ec.message());
        c.lowest_layer().close();
    });
    l.run(60s);
}

BOOST_AUTO_TEST_CASE(garbage_for_a_client_hello_is_an_ssl_error_and_an_alert) {
    // A malformed handshake record gets OpenSSL's alert; an HTTP request (a client that
    // should have used ws://) gets OpenSSL's "http request" and the end of the connection.
    for (bool http : {false, true}) {
        BOOST_TEST_CONTEXT("http " << http) {
            loop l;
            auto sctx = server_context(loopback_cert());
            l.spawn("server", [&]() -> asio::awaitable<void> {
                corows::tls_stream s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
                corows::error_code ec;
                co_await s.async_handshake(corows::tls_stream::server, asio::redirect_error(asio::use_awaitable, ec));
                BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
                if (http) BOOST_TEST(ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST);
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                tcp::socket c(l.ctx());
                co_await c.async_connect(l.endpoint(), asio::use_awaitable);
                std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
                // A handshake record (22) of 6 bytes: a ClientHello type, then a length past the record.
                std::array<std::uint8_t, 11> record{22, 3, 1, 0, 6, 1, 0xff, 0xff, 0xff, 3, 3};
                if (http) co_await asio::async_write(c, asio::buffer(request), asio::use_awaitable);
                else co_await asio::async_write(c, asio::buffer(record), asio::use_awaitable);
                std::array<std::uint8_t, 64> buf{};
                corows::error_code ec;
                std::size_t n =
                    co_await c.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
                if (http) {
                    BOOST_TEST(n == 0u);
                    BOOST_TEST(!!ec);
                } else {
                    BOOST_TEST(n > 0u);
                    BOOST_TEST(buf[0] == 21); // an alert record
                }
            });
            l.run(30s);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_peer_gone_without_close_notify_is_stream_truncated) {
    // Gone between records, and gone in the middle of one.
    for (bool mid_record : {false, true}) {
        BOOST_TEST_CONTEXT("mid record " << mid_record) {
            loop l;
            auto sctx = server_context(loopback_cert());
            auto cctx = client_context(loopback_cert());
            corows::test::event server_done;
            l.spawn("server", [&]() -> asio::awaitable<void> {
                corows::tls_stream s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
                co_await s.async_handshake(corows::tls_stream::server, asio::use_awaitable);
                std::array<char, 64> buf;
                corows::error_code ec;
                std::size_t n = co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
                BOOST_TEST(n == 0u);
                BOOST_TEST((ec == asio::ssl::error::stream_truncated), ec.message());
                BOOST_TEST(s.held_bytes() == 0u);
                server_done.set();
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                asio_tls c(l.ctx(), cctx);
                co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
                co_await c.async_handshake(asio_tls::client, asio::use_awaitable);
                if (mid_record) {
                    // A record header announcing 100 bytes, and 10 of them.
                    std::array<std::uint8_t, 15> part{23, 3, 3, 0, 100};
                    co_await asio::async_write(c.next_layer(), asio::buffer(part), asio::use_awaitable);
                }
                // A FIN, not a reset: the session tickets the client never read would turn a
                // close() into a reset, which reads as connection_reset instead.
                c.next_layer().shutdown(tcp::socket::shutdown_send);
                co_await server_done.wait();
                c.next_layer().close();
            });
            l.run(30s);
        }
    }
}

BOOST_AUTO_TEST_CASE(servers_over_tls_stream_echo_for_corows_clients) {
    // A coroutine per connection and callbacks, with and without permessage-deflate.
    for (bool events : {false, true}) {
        for (bool deflate : {false, true}) {
            BOOST_TEST_CONTEXT("events " << events << ", deflate " << deflate) {
                auto sctx = server_context(loopback_cert());
                auto cctx = client_context(loopback_cert());
                corows::server_options o;
                o.connection.max_message_size = 2 * 1024 * 1024;
                o.connection.deflate.enabled = deflate;
                using server_type = corows::basic_server<corows::tls_stream>;
                // Once the WebSocket handshake is done, OpenSSL's connection is gone.
                std::atomic<int> unreleased{0};
                server_type srv(o, [&sctx](tcp::socket s) { return corows::tls_stream(std::move(s), sctx); });
                auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
                std::thread runner([&] {
                    if (events) {
                        server_type::event_handlers h;
                        h.on_message = [&unreleased](corows::websocket<corows::tls_stream>& ws,
                                                     const corows::message& m) {
                            if (!ws.next_layer().openssl_released()) ++unreleased;
                            ws.send(m);
                        };
                        srv.run_events(std::move(h));
                    } else {
                        srv.run([&unreleased](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
                            corows::message m;
                            while (co_await ws.read_message(m)) {
                                if (!ws.next_layer().openssl_released()) ++unreleased;
                                co_await ws.write_message(m);
                            }
                        });
                    }
                });
                {
                    loop l;
                    l.spawn("client", [&]() -> asio::awaitable<void> {
                        corows::options co;
                        co.max_message_size = 2 * 1024 * 1024;
                        co.deflate.enabled = deflate;
                        co.deflate.threshold = 0;
                        auto ws = co_await corows::connect("wss://localhost:" + std::to_string(port) + "/", client_options(co, &cctx));
                        BOOST_TEST(ws.deflate().has_value() == deflate);
                        for (std::size_t n : sizes) {
                            auto payload = noise(n, static_cast<std::uint32_t>(n));
                            co_await ws.write_message(payload, corows::message_kind::binary);
                            auto m = co_await ws.read_message();
                            BOOST_REQUIRE(m.has_value());
                            BOOST_TEST((std::equal(payload.begin(), payload.end(), m->data().begin(),
                                                   m->data().end())), n << " bytes");
                        }
                        co_await ws.close(1000, "bye");
                        BOOST_TEST(ws.close_code() == 1000);
                    });
                    l.run(60s);
                }
                srv.stop(1s);
                runner.join();
                BOOST_TEST(unreleased == 0);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_raw_handler_gets_openssl_and_releases_it_itself) {
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    using server_type = corows::basic_server<corows::tls_stream>;
    server_type srv(corows::server_options{}, [&sctx](tcp::socket s) { return corows::tls_stream(std::move(s), sctx); });
    auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    std::atomic<int> sni_seen{0}, released{0};
    std::thread runner([&] {
        srv.run_http([&](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
            // Routing on the TLS connection before the upgrade, as a raw handler may.
            SSL* ssl = ws.next_layer().native_handle();
            const char* sni = ssl ? SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : nullptr;
            if (sni && std::string(sni) == "localhost") ++sni_seen;
            if (!co_await corows::test::read_and_accept(ws)) co_return;
            ws.next_layer().release_openssl();
            if (ws.next_layer().openssl_released()) ++released;
            corows::message m;
            while (co_await ws.read_message(m)) co_await ws.write_message(m);
        });
    });
    {
        loop l;
        l.spawn("client", [&]() -> asio::awaitable<void> {
            auto ws = co_await corows::connect("wss://localhost:" + std::to_string(port) + "/", client_options(corows::options{}, &cctx));
            for (std::size_t n : {std::size_t{5}, std::size_t{70000}}) {
                auto payload = noise(n, 7);
                co_await ws.write_message(payload, corows::message_kind::binary);
                auto m = co_await ws.read_message();
                BOOST_REQUIRE(m.has_value());
                BOOST_TEST((std::equal(payload.begin(), payload.end(), m->data().begin(), m->data().end())));
            }
            co_await ws.close(1000, "bye");
        });
        l.run(30s);
    }
    srv.stop(1s);
    runner.join();
    BOOST_TEST(sni_seen == 1);
    BOOST_TEST(released == 1);
}

BOOST_AUTO_TEST_CASE(a_silent_client_is_dropped_at_the_handshake_timeout) {
    auto sctx = server_context(loopback_cert());
    corows::server_options o;
    o.connection.handshake_timeout = 300ms;
    corows::basic_server<corows::tls_stream> srv(
        o, [&sctx](tcp::socket s) { return corows::tls_stream(std::move(s), sctx); });
    auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    std::thread runner([&] {
        srv.run([](corows::websocket<corows::tls_stream>&) -> asio::awaitable<void> { co_return; });
    });
    {
        loop l;
        l.spawn("silent client", [&]() -> asio::awaitable<void> {
            tcp::socket c(l.ctx());
            co_await c.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
            auto start = std::chrono::steady_clock::now();
            std::array<char, 16> buf;
            corows::error_code ec;
            co_await c.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
            auto took = corows::test::ms_since(start);
            BOOST_TEST(!!ec); // closed by the server
            BOOST_TEST(took >= 250);
            BOOST_TEST(took < 5000);
        });
        l.run(30s);
    }
    srv.stop(1s);
    runner.join();
}

namespace {

using content = corows::detail::tls_content;

/// What a hostile client sends after the handshake: records it seals with its own keys.
using attack = std::function<std::vector<std::uint8_t>(corows::detail::tls13_records&)>;

/// Runs a server tls_stream that gave OpenSSL up against a client that sends what `make`
/// returns on the TCP socket; returns the application bytes the server read and the error
/// its read ended with.
std::pair<std::string, corows::error_code> attacked(const attack& make) {
    loop l;
    auto sctx = server_context(loopback_cert());
    auto cctx = client_context(loopback_cert());
    SSL_CTX_set_keylog_callback(cctx.native_handle(), log_traffic_secret);
    std::string got;
    corows::error_code read_ec;
    corows::test::event served;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        corows::tls_stream s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
        co_await s.async_handshake(corows::tls_stream::server, asio::use_awaitable);
        s.release_openssl();
        BOOST_TEST(s.openssl_released());
        served.set();
        std::array<char, 4096> buf;
        for (;;) {
            std::size_t n = co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, read_ec));
            got.append(buf.data(), n);
            if (read_ec) break;
        }
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        asio_tls c(l.ctx(), cctx);
        co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
        co_await c.async_handshake(asio_tls::client, asio::use_awaitable);
        co_await served.wait();
        auto mine = forged_records(c.native_handle(), 0);
        auto wire = make(*mine);
        corows::error_code ec;
        co_await asio::async_write(c.next_layer(), asio::buffer(wire), asio::redirect_error(asio::use_awaitable, ec));
        c.next_layer().shutdown(tcp::socket::shutdown_send, ec);
        // Stay until the server has made up its mind.
        std::array<std::uint8_t, 4096> sink;
        while (!ec)
            co_await c.next_layer().async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
    });
    l.run(20s);
    return {got, read_ec};
}

int ssl_reason(const corows::error_code& ec) {
    return ec.category() == asio::error::get_ssl_category() ? ERR_GET_REASON(static_cast<unsigned long>(ec.value())) : -1;
}

} // namespace

BOOST_AUTO_TEST_CASE(after_release_records_from_a_hostile_peer_end_in_openssls_errors) {
    using records = corows::detail::tls13_records;
    struct hostile {
        const char* what;
        attack make;
        std::string read;       // application bytes the server gets first
        int reason;             // SSL_R_ reason of the error; 0 for eof
    };
    const auto repeat = [](int n, const attack& one) {
        return [n, one](records& r) {
            std::vector<std::uint8_t> all;
            for (int i = 0; i < n; ++i) {
                auto rec = one(r);
                all.insert(all.end(), rec.begin(), rec.end());
            }
            return all;
        };
    };
    const std::vector<hostile> cases{
        {"a sealed record, then close_notify", [](records& r) {
             auto a = sealed(r, "hello");
             auto b = sealed(r, std::string_view("\x01\x00", 2), content::alert);
             a.insert(a.end(), b.begin(), b.end());
             return a;
         }, "hello", 0},
        {"a flipped bit in the tag", [](records& r) {
             auto a = sealed(r, "hello");
             a.back() ^= 1;
             return a;
         }, "", SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC},
        {"a record sealed out of sequence", [](records& r) {
             (void)sealed(r, "lost");
             return sealed(r, "hello");
         }, "", SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC},
        {"a header announcing more than 2^14 + 256 bytes, and nothing else",
         [](records&) { return std::vector<std::uint8_t>{23, 3, 3, 0x41, 0x01}; }, "",
         SSL_R_ENCRYPTED_LENGTH_TOO_LONG},
        {"a record shorter than its tag", [](records&) { return std::vector<std::uint8_t>{23, 3, 3, 0, 3, 1, 2, 3}; },
         "", SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC},
        {"an unprotected handshake record",
         [](records&) { return std::vector<std::uint8_t>{22, 3, 3, 0, 5, 24, 0, 0, 1, 0}; }, "",
         SSL_R_UNEXPECTED_RECORD},
        {"a record of padding only", [](records& r) { return sealed(r, "", content{0}); }, "", SSL_R_BAD_RECORD_TYPE},
        {"33 empty application data records", repeat(33, [](records& r) { return sealed(r, ""); }), "",
         SSL_R_RECORD_TOO_SMALL},
        {"33 KeyUpdates in a row", repeat(33, [](records& r) {
             auto a = sealed(r, std::string_view("\x18\x00\x00\x01\x00", 5), content::handshake);
             r.update_write_key();
             return a;
         }), "", SSL_R_TOO_MANY_KEY_UPDATES},
        {"a KeyUpdate, then data under the new key", [](records& r) {
             auto a = sealed(r, std::string_view("\x18\x00\x00\x01\x00", 5), content::handshake);
             r.update_write_key();
             auto b = sealed(r, "rekeyed");
             a.insert(a.end(), b.begin(), b.end());
             return a;
         }, "rekeyed", -1},
        {"a KeyUpdate with bytes after it in its record",
         [](records& r) { return sealed(r, std::string_view("\x18\x00\x00\x01\x00\x00", 6), content::handshake); },
         "", SSL_R_NOT_ON_RECORD_BOUNDARY},
        {"a KeyUpdate asking for value 2",
         [](records& r) { return sealed(r, std::string_view("\x18\x00\x00\x01\x02", 5), content::handshake); }, "",
         SSL_R_BAD_KEY_UPDATE},
        {"a NewSessionTicket from the client",
         [](records& r) { return sealed(r, std::string_view("\x04\x00\x00\x00", 4), content::handshake); }, "",
         SSL_R_UNEXPECTED_MESSAGE},
        {"a fatal handshake_failure alert",
         [](records& r) { return sealed(r, std::string_view("\x02\x28", 2), content::alert); }, "",
         SSL_AD_REASON_OFFSET + SSL_AD_HANDSHAKE_FAILURE},
        {"an alert of three bytes",
         [](records& r) { return sealed(r, std::string_view("\x01\x00\x00", 3), content::alert); }, "", SSL_R_BAD_LENGTH},
    };
    for (const auto& h : cases) {
        BOOST_TEST_CONTEXT(h.what) {
            auto [got, ec] = attacked(h.make);
            BOOST_TEST(got == h.read);
            if (h.reason == 0) BOOST_TEST(ec == asio::error::eof, ec.message());
            else if (h.reason == -1) BOOST_TEST(ec == asio::ssl::error::stream_truncated, ec.message());
            else BOOST_TEST(ssl_reason(ec) == h.reason, ec.message());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
