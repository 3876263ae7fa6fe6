// SPDX-License-Identifier: BSL-1.0
// connect() through proxies: real ones (tinyproxy for HTTP CONNECT, microsocks for SOCKS5,
// each started by the test on a free port; skipped when not installed) for ws:// and wss://,
// with and without credentials, taken from options or the environment; and fake ones in the
// test that never answer, answer without end, or answer garbage.
#include "certs.hpp"
#include "client_connect.hpp"
#include "loopback.hpp"
#include "proxy_servers.hpp"

#include <corows/connect.hpp>
#include <corows/protocol/proxy.hpp>

#include <openssl/ssl.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace corows::test;
using corows::connect_failure;
using corows::connect_phase;
using tls_socket = asio::ssl::stream<tcp::socket>;
using namespace std::chrono_literals;

const std::string greeting = "through the proxy";

/// What the target server saw of its client.
struct seen_client {
    unsigned short peer_port = 0; ///< the port the connection came from
    std::string sni;              ///< the TLS server name; "(none)" if none was sent
    std::string host;             ///< the Host field of the upgrade request
};

template <class Ws>
asio::awaitable<void> serve_echo(Ws& ws, seen_client& seen) {
    corows::http_request req = co_await ws.read_request();
    seen.host = std::string(req.find("Host").value_or(""));
    co_await ws.accept(req);
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

/// A ws:// (or, with `tls`, wss://) echo server for one connection on `l`.
asio::awaitable<void> echo_target(loop& l, asio::ssl::context* tls, seen_client& seen) {
    tcp::socket sock = co_await l.acceptor().async_accept(asio::use_awaitable);
    seen.peer_port = sock.remote_endpoint().port();
    if (!tls) {
        corows::websocket<tcp::socket> ws(std::move(sock), corows::options{});
        co_await serve_echo(ws, seen);
        co_return;
    }
    tls_socket s(std::move(sock), *tls);
    co_await s.async_handshake(asio::ssl::stream_base::server, asio::use_awaitable);
    const char* sni = SSL_get_servername(s.native_handle(), TLSEXT_NAMETYPE_host_name);
    seen.sni = sni ? sni : "(none)";
    corows::websocket<tls_socket> ws(std::move(s), corows::options{});
    co_await serve_echo(ws, seen);
}

/// connect() with `tls` for wss://.
asio::awaitable<corows::client_websocket> open_client(std::string url, corows::connect_options opts,
                                                      asio::ssl::context* tls) {
    opts.tls = tls;
    co_return co_await corows::connect(url, opts);
}

/// Connects to an echo target with `opts` (wss:// when `secure`, to "localhost" so that SNI
/// and the name check are the target's), checks one echo, and returns true if the target saw
/// the connection come from another port than the client's: something was in between.
bool echo_through(bool secure, const corows::connect_options& opts, const std::string& host = "localhost") {
    loop l;
    auto server_ctx = server_context(loopback_cert());
    auto client_ctx = client_context(loopback_cert());
    seen_client seen;
    unsigned short client_port = 0;
    l.spawn("target", [&]() -> asio::awaitable<void> { co_await echo_target(l, secure ? &server_ctx : nullptr, seen); });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        const std::string url = (secure ? "wss://" : "ws://") + host + ":" + std::to_string(l.endpoint().port()) + "/";
        auto ws = co_await open_client(url, opts, secure ? &client_ctx : nullptr);
        client_port = ws.next_layer().lowest_layer().local_endpoint().port();
        co_await ws.write_text(greeting);
        auto reply = co_await ws.read_message();
        BOOST_REQUIRE(reply.has_value());
        BOOST_TEST(reply->text() == greeting);
        co_await ws.close();
    });
    BOOST_TEST(l.run(30s));
    BOOST_TEST(seen.host == host + ":" + std::to_string(l.endpoint().port()));
    if (secure) BOOST_TEST(seen.sni == host);
    return seen.peer_port != 0 && seen.peer_port != client_port;
}

corows::connect_options via(const std::string& proxy) {
    corows::connect_options o;
    o.proxy = proxy;
    return o;
}

/// Runs connect(url, opts) that must fail; returns the failure with its code in `ec`.
connect_failure failure_of(const std::string& url, const corows::connect_options& opts, corows::error_code& ec) {
    loop l;
    connect_failure why;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await connect_reporting(url, opts, ec, why);
        BOOST_TEST(!ws.is_open());
    });
    BOOST_TEST(l.run(30s));
    BOOST_TEST(static_cast<bool>(ec), "connect() must fail");
    return why;
}

/// A URL on a port where nothing listens (a free port, probed and released).
std::string closed_url(const std::string& scheme) {
    return scheme + "://127.0.0.1:" + std::to_string(free_loopback_port()) + "/";
}

/// Sets environment variables for a scope and restores what was there before.
class scoped_env {
public:
    scoped_env& set(const std::string& name, const std::string& value) {
        const char* old = std::getenv(name.c_str());
        saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
        ::setenv(name.c_str(), value.c_str(), 1);
        return *this;
    }
    scoped_env() = default;
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;
    ~scoped_env() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
            else ::unsetenv(it->first.c_str());
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// Clears every proxy variable for a scope, so the machine's own settings do not interfere.
struct clean_proxy_env {
    scoped_env env;
    clean_proxy_env() {
        for (const char* name : {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy",
                                 "NO_PROXY"})
            env.set(name, "");
    }
};

/// A fake proxy on `l` for one connection: reads what the client sends, then runs `answer`.
template <class Answer>
void fake_proxy(loop& l, Answer answer) {
    l.spawn("fake proxy", [&l, answer]() -> asio::awaitable<void> {
        raw_peer p = co_await accept_raw(l);
        co_await answer(p);
    });
}

/// connect() to a closed target through the fake proxy on `l`; returns the failure.
connect_failure through_fake(loop& l, const std::string& scheme, corows::error_code& ec,
                             std::chrono::milliseconds limit = 10s) {
    connect_failure why;
    corows::connect_options opts = via(scheme + "://" + l.host());
    opts.connection.handshake_timeout = limit;
    l.spawn("client", [&, opts]() -> asio::awaitable<void> {
        auto ws = co_await connect_reporting("ws://target.example:80/", opts, ec, why);
        BOOST_TEST(!ws.is_open());
    });
    BOOST_TEST(l.run(30s));
    return why;
}

} // namespace

BOOST_AUTO_TEST_SUITE(proxy)

BOOST_AUTO_TEST_CASE(http_connect_through_tinyproxy_for_ws_and_wss) {
    COROWS_SKIP_WITHOUT("tinyproxy");
    auto p = proxy_process::tinyproxy();
    BOOST_TEST(echo_through(false, via("http://" + p.authority())));
    BOOST_TEST(echo_through(true, via("http://" + p.authority())));
    // Without the proxy the same check sees no one in between: the check itself works.
    BOOST_TEST(!echo_through(false, corows::connect_options{}));
}

BOOST_AUTO_TEST_CASE(http_connect_with_basic_credentials) {
    COROWS_SKIP_WITHOUT("tinyproxy");
    auto p = proxy_process::tinyproxy("alice", "s3cret");
    BOOST_TEST(echo_through(false, via("http://alice:s3cret@" + p.authority())));
    BOOST_TEST(echo_through(true, via("http://alice:s3cret@" + p.authority())));
}

BOOST_AUTO_TEST_CASE(missing_or_wrong_credentials_give_407_in_phase_proxy) {
    COROWS_SKIP_WITHOUT("tinyproxy");
    auto p = proxy_process::tinyproxy("alice", "s3cret");
    for (const std::string userinfo : {"", "alice:wrong@"}) {
        corows::error_code ec;
        const std::string target = closed_url("wss");
        const auto why = failure_of(target, via("http://" + userinfo + p.authority()), ec);
        BOOST_TEST((ec == corows::error::proxy_auth_failed), ec.message());
        BOOST_TEST((why.phase == connect_phase::proxy));
        BOOST_REQUIRE(why.response.has_value());
        // tinyproxy 1.11 answers wrong credentials with 401, which is taken as the same refusal.
        if (userinfo.empty()) {
            BOOST_TEST(why.response->status == 407u);
            BOOST_TEST(why.response->find("Proxy-Authenticate").has_value());
            BOOST_TEST(why.detail == "the proxy answered 407 Proxy Authentication Required: credentials needed "
                                     "(user:password@ in the proxy URL)");
        } else {
            BOOST_TEST((why.response->status == 407u || why.response->status == 401u));
            BOOST_TEST(why.detail.ends_with(": it rejected the credentials"), why.detail);
        }
        BOOST_TEST(why.peer.starts_with("proxy " + p.authority() + " for 127.0.0.1:"), why.peer);
        BOOST_TEST(why.message.starts_with("corows::connect: tunnel through proxy " + p.authority()), why.message);
        BOOST_TEST(why.message.find("s3cret") == std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(tinyproxy_refusing_a_closed_target_is_proxy_refused) {
    COROWS_SKIP_WITHOUT("tinyproxy");
    auto p = proxy_process::tinyproxy();
    corows::error_code ec;
    const auto why = failure_of(closed_url("ws"), via("http://" + p.authority()), ec);
    BOOST_TEST((ec == corows::error::proxy_refused), ec.message());
    BOOST_TEST((why.phase == connect_phase::proxy));
    BOOST_REQUIRE(why.response.has_value());
    BOOST_TEST(why.response->status >= 500u);
    BOOST_TEST(why.detail.starts_with("the proxy answered " + std::to_string(why.response->status)), why.detail);
}

BOOST_AUTO_TEST_CASE(socks5_through_microsocks_for_ws_and_wss) {
    COROWS_SKIP_WITHOUT("microsocks");
    auto p = proxy_process::microsocks();
    for (const char* scheme : {"socks5://", "socks5h://"}) {
        BOOST_TEST(echo_through(false, via(scheme + p.authority())), scheme);
        BOOST_TEST(echo_through(true, via(scheme + p.authority())), scheme);
        BOOST_TEST(echo_through(false, via(scheme + p.authority()), "127.0.0.1"), scheme);
    }
}

BOOST_AUTO_TEST_CASE(socks5_with_user_and_password) {
    COROWS_SKIP_WITHOUT("microsocks");
    auto p = proxy_process::microsocks("bob", "pa:ss@");
    BOOST_TEST(echo_through(false, via("socks5h://bob:pa%3Ass%40@" + p.authority())));
    BOOST_TEST(echo_through(true, via("socks5://bob:pa%3Ass%40@" + p.authority())));
}

BOOST_AUTO_TEST_CASE(socks5_bad_or_missing_credentials_fail_with_the_auth_error) {
    COROWS_SKIP_WITHOUT("microsocks");
    auto p = proxy_process::microsocks("bob", "right");
    for (const std::string userinfo : {"bob:wrong@", ""}) {
        corows::error_code ec;
        const auto why = failure_of(closed_url("ws"), via("socks5h://" + userinfo + p.authority()), ec);
        BOOST_TEST((ec == corows::error::proxy_auth_failed), ec.message());
        BOOST_TEST((why.phase == connect_phase::proxy));
        const std::string expected = userinfo.empty()
                                         ? "the SOCKS5 proxy requires authentication: user:password@ in the proxy URL"
                                         : "the SOCKS5 proxy rejected the user name and password";
        BOOST_TEST(why.detail == expected);
    }
}

BOOST_AUTO_TEST_CASE(socks5_reply_codes_reach_the_caller) {
    COROWS_SKIP_WITHOUT("microsocks");
    auto p = proxy_process::microsocks();
    corows::error_code ec;
    const auto why = failure_of(closed_url("ws"), via("socks5://" + p.authority()), ec);
    BOOST_TEST((ec == corows::socks5_reply::connection_refused), ec.message());
    BOOST_TEST((why.phase == connect_phase::proxy));
    BOOST_TEST(why.detail == "the proxy could not open the connection (SOCKS5 reply 5)");
}

BOOST_AUTO_TEST_CASE(proxy_from_the_environment) {
    COROWS_SKIP_WITHOUT("tinyproxy");
    auto p = proxy_process::tinyproxy();
    clean_proxy_env clean;
    corows::connect_options opts;
    opts.proxy_from_environment = true;
    {
        scoped_env env;
        env.set("http_proxy", "http://" + p.authority());
        BOOST_TEST(echo_through(false, opts)); // ws:// reads http_proxy
        // ...and wss:// does not: with no https_proxy it goes direct.
        BOOST_TEST(!echo_through(true, opts));
    }
    {
        scoped_env env;
        env.set("https_proxy", p.authority()); // no scheme: http://, as curl
        BOOST_TEST(echo_through(true, opts));
        BOOST_TEST(!echo_through(false, opts));
    }
    {
        // Off unless asked for.
        scoped_env env;
        env.set("http_proxy", "http://" + p.authority());
        BOOST_TEST(!echo_through(false, corows::connect_options{}));
    }
}

BOOST_AUTO_TEST_CASE(no_proxy_bypasses_a_proxy_that_would_fail) {
    clean_proxy_env clean;
    const std::string dead_proxy = "http://127.0.0.1:" + std::to_string(free_loopback_port());
    corows::connect_options opts;
    opts.proxy_from_environment = true;
    scoped_env env;
    env.set("http_proxy", dead_proxy).set("https_proxy", dead_proxy);
    {
        // The proxy is really dead: without no_proxy the connection fails on it.
        corows::error_code ec;
        const auto why = failure_of(closed_url("ws"), opts, ec);
        BOOST_TEST((why.phase == connect_phase::tcp_connect));
        BOOST_TEST(why.peer.starts_with("proxy 127.0.0.1:"), why.peer);
        BOOST_TEST(why.detail == "proxy from http_proxy");
    }
    env.set("no_proxy", "example.com, .LOCALHOST");
    BOOST_TEST(!echo_through(false, opts));
    BOOST_TEST(!echo_through(true, opts));
    env.set("no_proxy", "[127.0.0.1]");
    BOOST_TEST(!echo_through(false, opts, "127.0.0.1"));
}

BOOST_AUTO_TEST_CASE(a_bad_proxy_url_fails_in_phase_url_without_its_password) {
    corows::error_code ec;
    const auto why = failure_of("ws://example.com/", via("ftp://me:hunter2@proxy:21"), ec);
    BOOST_TEST((ec == corows::proxy_url_error::bad_scheme), ec.message());
    BOOST_TEST((why.phase == connect_phase::url));
    BOOST_TEST(why.message == "corows::connect: bad proxy URL \"ftp://***@proxy:21\" failed: " + ec.message() +
                                  " (from connect_options::proxy)");
}

BOOST_AUTO_TEST_CASE(a_proxy_that_never_answers_hits_handshake_timeout) {
    for (const char* scheme : {"http", "socks5h"}) {
        loop l;
        fake_proxy(l, [](raw_peer& p) -> asio::awaitable<void> { co_await p.read_to_end(); });
        corows::error_code ec;
        const auto start = std::chrono::steady_clock::now();
        const auto why = through_fake(l, scheme, ec, 300ms);
        BOOST_TEST((ec == corows::error::timeout), scheme << ": " << ec.message());
        BOOST_TEST((why.phase == connect_phase::proxy));
        BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
        BOOST_TEST(why.message.find("timed out after 300 ms") != std::string::npos, why.message);
    }
}

BOOST_AUTO_TEST_CASE(an_endless_or_garbage_answer_is_a_bounded_protocol_error) {
    {
        // An endless head: the client gives up at max_head_size, long before the proxy stops.
        loop l;
        std::size_t sent = 0;
        fake_proxy(l, [&sent](raw_peer& p) -> asio::awaitable<void> {
            co_await p.read_request();
            const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
            co_await p.send_text("HTTP/1.1 200 Connection established\r\n");
            while (sent < 64 * 1024 * 1024) {
                if (co_await p.try_send(corows::as_bytes(line))) break;
                sent += line.size();
            }
        });
        corows::error_code ec;
        const auto why = through_fake(l, "http", ec);
        BOOST_TEST((ec == corows::error::proxy_protocol_error), ec.message());
        BOOST_TEST((why.phase == connect_phase::proxy));
        BOOST_TEST(why.detail.find(corows::make_error_code(corows::error::header_too_large).message()) !=
                       std::string::npos, why.detail);
        BOOST_TEST(sent < 64u * 1024 * 1024); // the client hung up instead of reading it all
    }
    for (const char* scheme : {"http", "socks5h"}) {
        loop l;
        fake_proxy(l, [](raw_peer& p) -> asio::awaitable<void> {
            co_await p.fill();
            const std::string garbage = "\x17\x03garbage\r\n\r\n";
            co_await p.try_send(corows::as_bytes(garbage));
            co_await p.read_to_end();
        });
        corows::error_code ec;
        const auto why = through_fake(l, scheme, ec);
        BOOST_TEST((ec == corows::error::proxy_protocol_error), scheme << ": " << ec.message());
        BOOST_TEST((why.phase == connect_phase::proxy));
    }
    {
        // Bytes after the 200 cannot be the target's: neither TLS nor WebSocket servers speak first.
        loop l;
        fake_proxy(l, [](raw_peer& p) -> asio::awaitable<void> {
            co_await p.read_request();
            const std::string answer = "HTTP/1.1 200 OK\r\n\r\nSSH-2.0-x\r\n";
            co_await p.try_send(corows::as_bytes(answer));
            co_await p.read_to_end();
        });
        corows::error_code ec;
        const auto why = through_fake(l, "http", ec);
        BOOST_TEST((ec == corows::error::proxy_protocol_error), ec.message());
        BOOST_TEST(why.detail.starts_with("the proxy sent 11 bytes after its 200 answer"), why.detail);
    }
    {
        // A proxy that hangs up mid-answer.
        loop l;
        fake_proxy(l, [](raw_peer& p) -> asio::awaitable<void> {
            co_await p.read_request();
            const std::string half = "HTTP/1.1 200 OK\r\n";
            co_await p.try_send(corows::as_bytes(half));
        });
        corows::error_code ec;
        const auto why = through_fake(l, "http", ec);
        BOOST_TEST((ec == corows::error::proxy_protocol_error), ec.message());
        BOOST_TEST(why.detail == "the proxy closed the connection before its answer to CONNECT was whole");
    }
}

BOOST_AUTO_TEST_SUITE_END()
