// corows::connect_unix(): a client connection to a server on a Unix domain socket, from a
// ws+unix: URL (the form of Node's ws library) in one co_await. A function of its own rather
// than a scheme of connect(): connect()'s websocket is over TCP, optionally TLS, and a third
// transport in client_stream would change what its lowest_layer() is for every user.
#pragma once

#include <corows/asio.hpp>
#include <corows/error.hpp>
#include <corows/options.hpp>
#include <corows/protocol/url.hpp>
#include <corows/websocket.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace corows {

/// The connection type connect_unix() returns.
using unix_websocket = websocket<asio::local::stream_protocol::socket>;

namespace detail {

// Everything a connect_unix() call was given, owned by the operation.
struct unix_connect_request {
    std::string url;
    options opts;
    handshake_request extra;
};

inline asio::awaitable<unix_websocket> run_connect_unix(std::shared_ptr<const unix_connect_request> r,
                                                        error_code* out) {
    auto ex = co_await asio::this_coro::executor;
    error_code ec;
    const unix_url u = parse_unix_url(r->url, ec);
    // The URL stays out of the message: its query may carry a token.
    std::string what = ec ? "corows::connect_unix: bad URL" : "";
    asio::local::stream_protocol::socket sock(ex);
    if (!ec) {
        // A listener with a full backlog keeps a connect waiting: handshake_timeout bounds it.
        struct deadline_state {
            asio::steady_timer timer;
            bool fired = false;
        };
        auto d = std::make_shared<deadline_state>(deadline_state{asio::steady_timer(ex)});
        if (r->opts.handshake_timeout.count() > 0) {
            d->timer.expires_after(r->opts.handshake_timeout);
            d->timer.async_wait([d, s = &sock](error_code e) {
                if (e) return;
                d->fired = true;
                s->close(e);
            });
        }
        co_await sock.async_connect(asio::local::stream_protocol::endpoint(u.path),
                                    asio::redirect_error(asio::use_awaitable, ec));
        d->timer.cancel();
        if (d->fired) ec = error::timeout;
        if (ec) what = "corows::connect_unix: connecting to " + u.path;
    }
    unix_websocket ws(std::move(sock), r->opts);
    if (!ec) {
        // RFC 9112 §3.2 wants a Host field; a socket file has no name to put there.
        co_await ws.handshake("localhost", u.target, r->extra, ec);
        if (ec) what = "corows::connect_unix: WebSocket upgrade with " + u.path;
    }
    if (ec && !out) throw system_error(ec, what);
    if (out) *out = ec;
    co_return ws;
}

inline asio::awaitable<unix_websocket> start_connect_unix(std::string url, const options& opts,
                                                          const handshake_request& extra, error_code* ec) {
    auto r = std::make_shared<unix_connect_request>();
    r->url = std::move(url);
    r->opts = opts;
    r->extra = extra;
    return run_connect_unix(std::move(r), ec);
}

} // namespace detail

/// Opens a WebSocket connection to a server on a Unix domain socket named by `url`,
/// "ws+unix:///path/to/socket:/target" (or "ws+unix:/path/to/socket:/target"; no target:
/// "/"), sending "Host: localhost". Throws system_error ("corows::connect_unix: connecting to
/// PATH: ...") with code() url_error, a socket error (ENOENT: no such file; ECONNREFUSED,
/// asio::error::connection_refused: nobody listens on it), error::timeout, or the handshake's error.
inline asio::awaitable<unix_websocket> connect_unix(std::string url) {
    return detail::start_connect_unix(std::move(url), options{}, handshake_request{}, nullptr);
}

/// As connect_unix(url), with `opts`; opts.handshake_timeout bounds the socket connect, then
/// the WebSocket handshake.
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts) {
    return detail::start_connect_unix(std::move(url), opts, handshake_request{}, nullptr);
}

/// As connect_unix(url, opts), adding `extra` (Origin, Authorization...) to the request.
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts,
                                                    const handshake_request& extra) {
    return detail::start_connect_unix(std::move(url), opts, extra, nullptr);
}

/// As connect_unix(url, opts), reporting failure in `ec` instead of throwing; on failure the
/// returned websocket is not open.
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts, error_code& ec) {
    return detail::start_connect_unix(std::move(url), opts, handshake_request{}, &ec);
}

/// As connect_unix(url, opts, extra), reporting failure in `ec`.
inline asio::awaitable<unix_websocket> connect_unix(std::string url, const options& opts,
                                                    const handshake_request& extra, error_code& ec) {
    return detail::start_connect_unix(std::move(url), opts, extra, &ec);
}

} // namespace corows
