// SPDX-License-Identifier: BSL-1.0
// corows::connect_unix(): a client connection to a server on a Unix domain socket, from a
// ws+unix: URL (the form of Node's ws library) in one co_await. A function of its own rather
// than a scheme of connect(): connect()'s websocket is over TCP, optionally TLS, and a third
// transport in client_stream would change what its lowest_layer() is for every user.
#pragma once

#include <corows/asio.hpp>
#include <corows/connect_failure.hpp>
#include <corows/connect_options.hpp>
#include <corows/detail/close_at_deadline.hpp>
#include <corows/detail/launch_connect.hpp>
#include <corows/detail/platform.hpp>
#include <corows/error.hpp>
#include <corows/options.hpp>
#include <corows/protocol/url.hpp>
#include <corows/websocket.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#if !COROWS_HAS_UNIX_SOCKETS
#error "corows/connect_unix.hpp needs Unix domain sockets, which Asio does not have on this platform (Windows)"
#endif

namespace corows {

/// The connection type connect_unix() returns.
using unix_websocket = websocket<asio::local::stream_protocol::socket>;

namespace detail {

// Everything a connect_unix() call was given, owned by the operation.
struct unix_connect_request {
    std::string url;
    connect_options opts;
};

inline asio::awaitable<unix_websocket> run_connect_unix(std::shared_ptr<const unix_connect_request> r,
                                                        error_code* out) {
    auto ex = co_await asio::this_coro::executor;
    const options& o = r->opts.connection;
    error_code ec;
    connect_failure why;
    const unix_url u = parse_unix_url(r->url, ec);
    // The URL stays out of the message: its query may carry a token.
    std::string what = ec ? "corows::connect_unix: bad URL" : "";
    asio::local::stream_protocol::socket sock(ex);
    if (!ec) {
        why.phase = connect_phase::tcp_connect;
        why.peer = u.path;
        // A listener with a full backlog keeps a connect waiting: handshake_timeout bounds it.
        close_at_deadline deadline(ex);
        deadline.arm_after(o.handshake_timeout, [s = &sock] {
            error_code ignored;
            s->close(ignored);
        });
        co_await sock.async_connect(asio::local::stream_protocol::endpoint(u.path),
                                    asio::redirect_error(asio::use_awaitable, ec));
        deadline.disarm();
        if (deadline.fired()) ec = error::timeout;
        if (ec) what = "corows::connect_unix: connecting to " + u.path;
    }
    unix_websocket ws(std::move(sock), o);
    if (r->opts.counters) ws.count_into(*r->opts.counters);
    if (!ec) {
        why.phase = connect_phase::http_upgrade;
        // RFC 9112 §3.2 wants a Host field; a socket file has no name to put there.
        http_response res;
        std::tie(ec) = co_await ws.handshake("localhost", u.target, r->opts.request, res, use_tuple);
        if (ec == error::bad_status) {
            why.detail = "the server answered " + std::to_string(res.status) + " " + res.reason;
            why.response = std::move(res);
        }
        if (ec) what = "corows::connect_unix: WebSocket upgrade with " + u.path;
    }
    if (ec) {
        why.message = what + ": " + ec.message();
        if (!why.detail.empty()) why.message += " (" + why.detail + ")";
        if (r->opts.failure) *r->opts.failure = why;
        if (!out) throw connect_error(ec, std::move(why));
    }
    if (out) *out = ec;
    co_return ws;
}

inline asio::awaitable<unix_websocket> start_connect_unix(std::string url, const connect_options& opts,
                                                          error_code* ec) {
    auto r = std::make_shared<unix_connect_request>();
    r->url = std::move(url);
    r->opts = opts;
    return run_connect_unix(std::move(r), ec);
}

} // namespace detail

/// Opens a WebSocket connection to a server on a Unix domain socket named by `url`,
/// "ws+unix:///path/to/socket:/target" (or "ws+unix:/path/to/socket:/target"; no target:
/// "/"), sending "Host: localhost", with default connect_options. Throws connect_error
/// ("corows::connect_unix: connecting to PATH: ...", phase tcp_connect or http_upgrade, or url)
/// with code() url_error, a socket error (ENOENT: no such file; ECONNREFUSED,
/// asio::error::connection_refused: nobody listens on it), error::timeout, or the handshake's error.
inline asio::awaitable<unix_websocket> connect_unix(std::string url) {
    return detail::start_connect_unix(std::move(url), connect_options(), nullptr);
}

/// As connect_unix(url), with `opts`: opts.connection.handshake_timeout bounds the socket
/// connect, then the WebSocket handshake; opts.request adds fields to the request. The TCP
/// settings (tls, proxy, resolve, happy_eyeballs_delay) do not apply.
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const connect_options& opts) {
    return detail::start_connect_unix(std::move(url), opts, nullptr);
}

/// As connect_unix(url, opts), completing through `token` with (error_code, unix_websocket):
/// use_awaitable throws connect_error, the other tokens give its code() (and a websocket that is
/// not open), opts.failure the rest. A token with no executor of its own (a plain callback,
/// use_future) runs it on opts.executor, and without one throws std::invalid_argument.
template <COROWS_TOKEN_FOR(void(error_code, unix_websocket)) Token>
auto connect_unix(std::string url, connect_options opts, Token&& token) {
    asio::any_io_executor ex = opts.executor;
    return detail::launch_connect(std::move(ex), std::forward<Token>(token),
                                  [url = std::move(url), opts = std::move(opts)]() mutable {
                                      return detail::start_connect_unix(std::move(url), opts, nullptr);
                                  });
}

// The forms before connect_options, for one release.

/// Deprecated: connect_unix(url, connect_options) with connection = opts.
[[deprecated("use connect_unix(url, connect_options, token)")]]
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts) {
    connect_options co;
    co.connection = opts;
    return detail::start_connect_unix(std::move(url), co, nullptr);
}

/// Deprecated: connect_options::request = extra.
[[deprecated("use connect_unix(url, connect_options, token)")]]
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts,
                                                    const handshake_request& extra) {
    connect_options co;
    co.connection = opts;
    co.request = extra;
    return detail::start_connect_unix(std::move(url), co, nullptr);
}

/// Deprecated: as_tuple(use_awaitable).
[[deprecated("use connect_unix(url, connect_options, token)")]]
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts, error_code& ec) {
    connect_options co;
    co.connection = opts;
    return detail::start_connect_unix(std::move(url), co, &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::request = extra.
[[deprecated("use connect_unix(url, connect_options, token)")]]
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts,
                                                    const handshake_request& extra, error_code& ec) {
    connect_options co;
    co.connection = opts;
    co.request = extra;
    return detail::start_connect_unix(std::move(url), co, &ec);
}

} // namespace corows
