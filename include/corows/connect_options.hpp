// SPDX-License-Identifier: BSL-1.0
// Everything connect() and connect_unix() take beyond the URL and the completion token: the
// connection's own settings, and the settings only a client's connect uses (route, TLS
// context, request fields), which a server's connections need not carry.
#pragma once

#include <corows/asio.hpp>
#include <corows/connect_failure.hpp>
#include <corows/options.hpp>
#include <corows/protocol/shared_connection_counters.hpp>
#include <corows/websocket.hpp>

#include <chrono>
#include <string>
#include <vector>

// Declared rather than included: connect_unix() needs no TLS, and a build without OpenSSL
// has no ssl headers.
#if defined(COROWS_USE_BOOST_ASIO)
namespace boost::asio::ssl {
class context;
}
#else
namespace asio::ssl {
class context;
}
#endif

namespace corows {

/// How connect() (and connect_unix(), which uses connection, request, failure and executor)
/// opens a client connection.
struct connect_options {
    // Declared so that `connect_options{}` is not aggregate initialisation, which g++ 12 gets
    // wrong inside a co_await expression (each member destroyed twice).
    /// The defaults below.
    connect_options() = default;

    /// The connection's settings (limits, timeouts, compression, the subprotocols offered).
    /// connection.handshake_timeout bounds resolving, TCP connect, the proxy exchange and the TLS
    /// handshake together (error::timeout), then the WebSocket handshake again.
    options connection{};
    /// Fields added to the upgrade request: Origin, Authorization, cookies.
    handshake_request request{};
    /// wss://: the TLS context the server is verified against (a private CA, a client
    /// certificate), which must outlive the operation; nullptr: default_tls_context(). Peer
    /// verification and the host name check are on whatever the context's own settings.
    asio::ssl::context* tls = nullptr;
    /// TCP connection attempts to a name's addresses race (Happy Eyeballs, RFC 8305): the next
    /// address is tried this long after the one before unless that one connected (at once if it
    /// failed), families alternating. 250 ms is RFC 8305 §5's recommendation; 0: one address at
    /// a time.
    std::chrono::milliseconds happy_eyeballs_delay{250};
    /// The addresses (IP literals, "[::1]" or "::1") dialled for the URL's host instead of asking
    /// the resolver, as curl's --resolve; Host, SNI and the certificate check still use the
    /// URL's name. Not used through a proxy. Empty: resolve.
    std::vector<std::string> resolve{};
    /// The proxy to go through: http://[user:password@]host[:port] (an HTTP CONNECT tunnel),
    /// socks5://... (the client resolves the target) or socks5h://... (the proxy does); no
    /// scheme means http://, no port 1080 (as curl); user and password are percent-decoded.
    /// Empty: none (or the environment's, see below).
    std::string proxy{};
    /// With `proxy` empty, take it from the environment as curl does: https_proxy or
    /// HTTPS_PROXY for wss://, http_proxy (lower case only) for ws://, then all_proxy or
    /// ALL_PROXY; no_proxy or NO_PROXY (comma-separated hosts and domains, "*" for all) exempts
    /// a host.
    bool proxy_from_environment = false;
    /// Filled on failure (phase, peer, detail, a refusal's answer) for the tokens that report
    /// only an error_code; must outlive the operation. nullptr: not reported.
    connect_failure* failure = nullptr;
    /// Where the connection counts what it does (opened, ended and why, messages, frames,
    /// bytes, pings, bytes queued), from before its handshake; shared by any number of
    /// connections on any threads, it must outlive them. nullptr: not counted.
    shared_connection_counters* counters = nullptr;
    /// Where the operation runs for a token that has no executor of its own (a plain callback,
    /// use_future); empty: the completion handler's associated executor. use_awaitable,
    /// as_tuple(use_awaitable) and an awaited deferred run on the awaiting coroutine's.
    asio::any_io_executor executor{};
};

} // namespace corows
