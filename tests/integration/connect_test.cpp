// SPDX-License-Identifier: BSL-1.0
// Every failed connect() says where and why: a refusal carries the server's answer, and each
// phase (resolve, TCP connect, TLS, HTTP upgrade, a timeout in any of them) names itself and
// the peer in the message.
#include "certs.hpp"
#include "client_connect.hpp"
#include "loopback.hpp"

#include <corows/connect.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <array>
#include <chrono>
#include <string>

namespace {

using namespace corows::test;
using corows::connect_error;
using corows::connect_failure;
using corows::connect_phase;
using tls_socket = asio::ssl::stream<tcp::socket>;
using namespace std::chrono_literals;

std::string port_of(loop& l) { return std::to_string(l.endpoint().port()); }

const std::string refusal =
    "HTTP/1.1 403 Forbidden\r\nX-Reason: banned\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nnot allowed";

// A raw server that reads one request and answers `answer`, then waits for the client to
// close (it never closes first unless `close_after`).
asio::awaitable<void> answer_once(loop& l, const std::string& answer, bool close_after) {
    raw_peer p = co_await accept_raw(l);
    std::string req = co_await p.read_request();
    BOOST_REQUIRE(!req.empty());
    co_await p.try_send(corows::as_bytes(answer));
    if (close_after) co_return;
    co_await p.read_to_end();
}

// A server that accepts TLS handshakes with `cert` and nothing more.
asio::awaitable<void> tls_accepting(loop& l, const test_cert& cert) {
    auto ctx = server_context(cert);
    tls_socket s(co_await l.acceptor().async_accept(asio::use_awaitable), ctx);
    corows::error_code ec;
    co_await s.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
}

// connect(url, opts, tls, ec, why) must fail with `ec` in the TLS phase, its verify result
// being `detail`.
void tls_refused(const test_cert& served, const test_cert& trusted, const std::string& host,
                 const std::string& detail) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> { co_await tls_accepting(l, served); });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto cctx = client_context(trusted);
        corows::error_code ec;
        connect_failure why;
        const std::string url = "wss://" + host + ":" + port_of(l) + "/";
        auto ws = co_await connect_reporting(url, client_options(corows::options{}, &cctx), ec, why);
        BOOST_TEST(!ws.is_open());
        BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
        BOOST_TEST(ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_CERTIFICATE_VERIFY_FAILED);
        BOOST_TEST((why.phase == connect_phase::tls_handshake));
        BOOST_TEST(why.detail == detail);
        const std::string peer = host == "127.0.0.1" ? host + ":" + port_of(l)
                                                     : host + ":" + port_of(l) + " (127.0.0.1:" + port_of(l) + ")";
        BOOST_TEST(why.peer == peer);
        BOOST_TEST(why.message ==
                   "corows::connect: TLS handshake with " + peer + " failed: " + ec.message() + " (" + detail + ")");
    });
    l.run(30s);
}

} // namespace

BOOST_AUTO_TEST_SUITE(connect_errors)

BOOST_AUTO_TEST_CASE(a_403_carries_status_header_and_body) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) co_await answer_once(l, refusal, false);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        const std::string url = "ws://127.0.0.1:" + port_of(l) + "/private";
        // The throwing form: a connect_error whose response() is the answer.
        try {
            co_await corows::connect(url);
            BOOST_ERROR("a refused connect() did not throw");
        } catch (const connect_error& e) {
            BOOST_TEST((e.code() == corows::error::bad_status));
            BOOST_TEST((e.phase() == connect_phase::http_upgrade));
            BOOST_REQUIRE(e.response() != nullptr);
            BOOST_TEST(e.response()->status == 403u);
            BOOST_TEST(e.response()->reason == "Forbidden");
            BOOST_TEST(e.response()->find("X-Reason").value_or("") == "banned");
            BOOST_TEST(e.response()->body == "not allowed");
            BOOST_TEST(std::string(e.what()) ==
                       "corows::connect: WebSocket upgrade with 127.0.0.1:" + port_of(l) +
                           " failed: server did not answer 101 Switching Protocols (the server answered 403 Forbidden)");
        }
        // The error_code form with the details.
        corows::error_code ec;
        connect_failure why;
        corows::options opts;
        auto ws = co_await connect_reporting(url, client_options(opts), ec, why);
        BOOST_TEST(!ws.is_open());
        BOOST_TEST((ec == corows::error::bad_status));
        BOOST_REQUIRE(why.response.has_value());
        BOOST_TEST(why.response->status == 403u);
        BOOST_TEST(why.response->body == "not allowed");
        BOOST_TEST(why.peer == "127.0.0.1:" + port_of(l));
        // A websocket over the caller's own socket: handshake(..., res) and handshake_error.
        tcp_ws own = co_await l.connect_ws(opts);
        corows::http_response res;
        const corows::handshake_request extra;
        const std::string host = l.host();
        const std::string target = "/private";
        try {
            co_await own.handshake(host, target, extra, res);
            BOOST_ERROR("a refused handshake did not throw");
        } catch (const corows::handshake_error& e) {
            BOOST_TEST((e.code() == corows::error::bad_status));
            BOOST_TEST(e.response().status == 403u);
            BOOST_TEST(e.response().body == "not allowed");
            BOOST_TEST(std::string(e.what()).find("403 Forbidden") != std::string::npos, e.what());
        }
        BOOST_TEST(res.status == 403u);
        BOOST_TEST(res.find("X-Reason").value_or("") == "banned");
        BOOST_TEST(res.body == "not allowed");
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(a_refusal_body_by_close_by_chunks_and_bounded) {
    const std::string big(100 * 1024, 'b');
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        // No Content-Length: the body ends when the server closes.
        const std::string unframed = "HTTP/1.1 500 Internal Server Error\r\n\r\nbroken";
        co_await answer_once(l, unframed, true);
        // Chunked, the connection kept open: the body ends with its last chunk.
        const std::string chunked = "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    "4\r\nnot \r\n7\r\nallowed\r\n0\r\n\r\n";
        co_await answer_once(l, chunked, false);
        // Over the bound: the client keeps max_refusal_body bytes and does not wait for more.
        const std::string huge = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 200000\r\n\r\n" + big;
        co_await answer_once(l, huge, false);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::options opts;
        opts.handshake_timeout = 5s;
        corows::http_response res;
        corows::error_code ec;
        const corows::handshake_request extra;
        const std::string host = l.host();
        const std::string target = "/";
        tcp_ws first = co_await l.connect_ws(opts);
        std::tie(ec) = co_await first.handshake(host, target, extra, res, corows::use_tuple);
        BOOST_TEST((ec == corows::error::bad_status));
        BOOST_TEST(res.status == 500u);
        BOOST_TEST(res.body == "broken");
        tcp_ws chunked = co_await l.connect_ws(opts);
        auto start = std::chrono::steady_clock::now();
        std::tie(ec) = co_await chunked.handshake(host, target, extra, res, corows::use_tuple);
        BOOST_TEST((ec == corows::error::bad_status));
        BOOST_TEST(res.status == 403u);
        BOOST_TEST(res.body == "not allowed");
        BOOST_TEST(ms_since(start) < 2000);
        tcp_ws second = co_await l.connect_ws(opts);
        start = std::chrono::steady_clock::now();
        std::tie(ec) = co_await second.handshake(host, target, extra, res, corows::use_tuple);
        BOOST_TEST((ec == corows::error::bad_status));
        BOOST_TEST(res.status == 401u);
        BOOST_TEST(res.body.size() == corows::max_refusal_body);
        BOOST_TEST(ms_since(start) < 2000);
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(a_name_that_does_not_resolve) {
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        try {
            const std::string url = "ws://no-such-host.invalid:8080/";
            co_await corows::connect(url);
            BOOST_ERROR("no exception");
        } catch (const connect_error& e) {
            BOOST_TEST((e.phase() == connect_phase::resolve));
            BOOST_TEST(e.failure().peer == "no-such-host.invalid:8080");
            BOOST_TEST(std::string(e.what()) ==
                       "corows::connect: resolving no-such-host.invalid:8080 failed: " + e.code().message());
            BOOST_TEST((e.code().category() == asio::error::get_netdb_category()), e.code().message());
        }
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(a_closed_port_names_the_address) {
    loop l;
    std::uint16_t dead_port = 0;
    {
        tcp::acceptor a(l.ctx(), {asio::ip::make_address("127.0.0.1"), 0});
        dead_port = a.local_endpoint().port();
    }
    const std::string port = std::to_string(dead_port);
    l.spawn("client", [&]() -> asio::awaitable<void> {
        try {
            const std::string url = "ws://127.0.0.1:" + port + "/";
            co_await corows::connect(url);
            BOOST_ERROR("no exception");
        } catch (const connect_error& e) {
            BOOST_TEST((e.code() == asio::error::connection_refused));
            BOOST_TEST((e.phase() == connect_phase::tcp_connect));
            BOOST_TEST(std::string(e.what()) ==
                       "corows::connect: TCP connect to 127.0.0.1:" + port + " failed: " + e.code().message());
        }
        corows::error_code ec;
        connect_failure why;
        corows::options opts;
        const std::string url = "wss://localhost:" + port + "/";
        co_await connect_reporting(url, client_options(opts), ec, why);
        BOOST_TEST((ec == asio::error::connection_refused));
        BOOST_TEST((why.phase == connect_phase::tcp_connect));
        BOOST_TEST(why.peer.rfind("localhost:" + port + " (", 0) == 0u, why.peer);
        BOOST_TEST(why.message.rfind("corows::connect: TCP connect to localhost:" + port + " (", 0) == 0u, why.message);
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(ws_to_a_tls_port_says_so) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> { co_await tls_accepting(l, loopback_cert()); });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        connect_failure why;
        corows::options opts;
        const std::string url = "ws://127.0.0.1:" + port_of(l) + "/";
        co_await connect_reporting(url, client_options(opts), ec, why);
        BOOST_TEST((ec == corows::error::handshake_closed), ec.message());
        BOOST_TEST((why.phase == connect_phase::http_upgrade));
        BOOST_TEST(why.message == "corows::connect: WebSocket upgrade with 127.0.0.1:" + port_of(l) +
                                      " failed: the server closed the connection during the HTTP upgrade "
                                      "(is it a TLS port? use wss://)");
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(ws_to_a_port_answering_with_a_tls_alert_says_so) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        // What some TLS stacks send for a record that is not TLS: a fatal protocol_version alert.
        const std::string alert("\x15\x03\x03\x00\x02\x02\x46", 7);
        co_await answer_once(l, alert, true);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::error_code ec;
        connect_failure why;
        corows::options opts;
        const std::string url = "ws://127.0.0.1:" + port_of(l) + "/";
        co_await connect_reporting(url, client_options(opts), ec, why);
        BOOST_TEST((ec == corows::error::tls_answer), ec.message());
        BOOST_TEST(why.message == "corows::connect: WebSocket upgrade with 127.0.0.1:" + port_of(l) +
                                      " failed: the server answered the HTTP upgrade with TLS "
                                      "(is it a TLS port? use wss://)");
    });
    l.run(30s);
}

BOOST_AUTO_TEST_CASE(an_unknown_issuer) {
    const auto ca = make_cert("Test CA", "", corows::test::cert_spec{.ca = true});
    const auto leaf = make_cert("localhost", "DNS:localhost", corows::test::cert_spec{.issuer = &ca});
    const auto other_ca = make_cert("Other CA", "", corows::test::cert_spec{.ca = true});
    tls_refused(leaf, other_ca, "localhost", "unable to get local issuer certificate");
}

BOOST_AUTO_TEST_CASE(a_self_signed_certificate_nobody_trusts) {
    const auto other = make_cert("localhost", "DNS:localhost");
    tls_refused(loopback_cert(), other, "localhost", "self-signed certificate");
}

BOOST_AUTO_TEST_CASE(a_name_mismatch) {
    const auto cert = make_cert("example.com", "DNS:example.com,IP:10.1.2.3");
    tls_refused(cert, cert, "localhost", "hostname mismatch");
    tls_refused(cert, cert, "127.0.0.1", "IP address mismatch");
}

BOOST_AUTO_TEST_CASE(an_expired_certificate) {
    const auto cert = make_cert("localhost", "DNS:localhost", corows::test::cert_spec{.valid_from = -172800,
                                                                                      .valid_to = -86400});
    tls_refused(cert, cert, "localhost", "certificate has expired");
}

BOOST_AUTO_TEST_CASE(a_timeout_names_its_phase) {
    const std::array<std::string, 2> schemes{"ws", "wss"};
    for (const auto& scheme : schemes) {
        BOOST_TEST_CONTEXT(scheme) {
            loop l;
            event done;
            l.spawn("silent server", [&]() -> asio::awaitable<void> {
                raw_peer p = co_await accept_raw(l);
                co_await done.wait();
            });
            l.spawn("client", [&]() -> asio::awaitable<void> {
                corows::options opts;
                opts.handshake_timeout = 300ms;
                corows::error_code ec;
                connect_failure why;
                const std::string url = scheme + "://localhost:" + port_of(l) + "/";
                co_await connect_reporting(url, client_options(opts), ec, why);
                done.set();
                BOOST_TEST((ec == corows::error::timeout), ec.message());
                const std::string phase = scheme == "ws" ? "WebSocket upgrade" : "TLS handshake";
                BOOST_TEST((why.phase == (scheme == "ws" ? connect_phase::http_upgrade : connect_phase::tls_handshake)));
                BOOST_TEST(why.message == "corows::connect: " + phase + " with localhost:" + port_of(l) +
                                              " (127.0.0.1:" + port_of(l) + ") timed out after 300 ms (handshake_timeout)");
            });
            l.run(30s);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
