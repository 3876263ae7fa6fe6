// SPDX-License-Identifier: BSL-1.0
// corows::connect(): a client connection from a ws:// or wss:// URL in one co_await — resolve,
// TCP connect, TLS with SNI and certificate verification, WebSocket handshake.
#pragma once

#if !defined(COROWS_HAS_TLS)
#error "corows/connect.hpp needs OpenSSL: build corows with -Dtls=enabled (libssl-dev installed)"
#endif

#include <corows/asio.hpp>
#include <corows/client_stream.hpp>
#include <corows/connect_failure.hpp>
#include <corows/connect_options.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/launch_connect.hpp>
#include <corows/error.hpp>
#include <corows/options.hpp>
#include <corows/protocol/proxy.hpp> // proxy_url_error, which connect() may fail with
#include <corows/protocol/url.hpp>   // url_error, likewise
#include <corows/websocket.hpp>

#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace corows {

/// The connection type connect() returns, for ws:// and wss:// alike.
using client_websocket = websocket<client_stream>;

/// The TLS context connect() uses when given none: TLS 1.2 or later, trusting the system's
/// default CA store. Created on first use and shared by every connection; a program may add
/// trust anchors to it before connecting.
asio::ssl::context& default_tls_context();

namespace detail {

/// connect()'s operation, on the awaiting coroutine's executor: failures go to `*ec`, or are
/// thrown as connect_error when `ec` is null. Compiled in the library (src/connect.cpp).
asio::awaitable<client_websocket> start_connect(std::string url, const connect_options& opts, error_code* ec);

/// The connect_options the deprecated overloads mean: options' deprecated client fields, the
/// TLS context, the request fields and the failure report they took as arguments.
connect_options legacy_connect_options(const options& opts, asio::ssl::context* tls = nullptr,
                                       const handshake_request& extra = {}, connect_failure* why = nullptr);

} // namespace detail

// Overloads rather than default arguments: GCC 12 destroys a class-type default argument of a
// call inside a co_await expression twice.

/// Opens a WebSocket connection to `url` (ws:// or wss://) with default connect_options; wss://
/// verifies the server against default_tls_context(). Throws connect_error (a
/// system_error naming the phase and the peer) on failure, with code() url_error,
/// resolver and socket errors, TLS errors (asio::error::get_ssl_category(), e.g. certificate
/// verify failed), error::timeout, the proxy's errors, or the handshake's corows error
/// (bad_status for a refusal, whose answer response() holds).
inline asio::awaitable<client_websocket> connect(std::string url) {
    return detail::start_connect(std::move(url), connect_options(), nullptr);
}

/// As connect(url), with `opts` (see connect_options); throws connect_error on failure.
inline asio::awaitable<client_websocket> connect(std::string url, const connect_options& opts) {
    return detail::start_connect(std::move(url), opts, nullptr);
}

/// As connect(url, opts), completing through `token` with (error_code, client_websocket):
/// use_awaitable throws connect_error, as_tuple(use_awaitable) and the other tokens give the
/// error_code (and a websocket that is not open) instead, opts.failure the rest. A token with no
/// executor of its own (a plain callback, use_future) runs the operation on opts.executor, and
/// without one throws std::invalid_argument.
template <COROWS_TOKEN_FOR(void(error_code, client_websocket)) Token>
auto connect(std::string url, connect_options opts, Token&& token) {
    asio::any_io_executor ex = opts.executor;
    return detail::launch_connect(std::move(ex), std::forward<Token>(token),
                                  [url = std::move(url), opts = std::move(opts)]() mutable {
                                      return detail::start_connect(std::move(url), opts, nullptr);
                                  });
}

// The forms before connect_options, for one release.

/// As connect(url, connect_options) with connection = opts (and options' deprecated client
/// fields, for one release).
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts), nullptr);
}

/// Deprecated: connect_options::request = extra.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts,
                                                 const handshake_request& extra) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, nullptr, extra), nullptr);
}

/// Deprecated: connect_options::tls = &tls.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls), nullptr);
}

/// Deprecated: connect_options::tls = &tls, request = extra.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls,
                                                 const handshake_request& extra) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls, extra), nullptr);
}

/// As connect(url, opts), reporting failure in `ec` instead of throwing; on failure the
/// returned websocket is not open.
[[deprecated("use connect(url, connect_options, corows::use_tuple)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, error_code& ec) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::request = extra.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts,
                                                 const handshake_request& extra, error_code& ec) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, nullptr, extra), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::tls = &tls.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls,
                                                 error_code& ec) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::tls = &tls, request = extra.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls,
                                                 const handshake_request& extra, error_code& ec) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls, extra), &ec);
}

/// Deprecated: connect_options::executor = ex.
template <COROWS_TOKEN_FOR(void(error_code, client_websocket)) Token>
[[deprecated("use connect(url, connect_options, token)")]]
auto connect(asio::any_io_executor ex, std::string url, Token&& token) {
    connect_options co;
    co.executor = std::move(ex);
    return connect(std::move(url), std::move(co), std::forward<Token>(token));
}

/// Deprecated: connect_options::executor = ex, connection = opts.
template <COROWS_TOKEN_FOR(void(error_code, client_websocket)) Token>
[[deprecated("use connect(url, connect_options, token)")]]
auto connect(asio::any_io_executor ex, std::string url, options opts, Token&& token) {
    auto co = detail::legacy_connect_options(opts);
    co.executor = std::move(ex);
    return connect(std::move(url), std::move(co), std::forward<Token>(token));
}

/// Deprecated: connect_options::executor = ex, request = extra.
template <COROWS_TOKEN_FOR(void(error_code, client_websocket)) Token>
[[deprecated("use connect(url, connect_options, token)")]]
auto connect(asio::any_io_executor ex, std::string url, options opts, handshake_request extra, Token&& token) {
    auto co = detail::legacy_connect_options(opts, nullptr, extra);
    co.executor = std::move(ex);
    return connect(std::move(url), std::move(co), std::forward<Token>(token));
}

/// Deprecated: connect_options::executor = ex, tls = &tls (which must outlive the operation),
/// request = extra.
template <COROWS_TOKEN_FOR(void(error_code, client_websocket)) Token>
[[deprecated("use connect(url, connect_options, token)")]]
auto connect(asio::any_io_executor ex, std::string url, options opts, asio::ssl::context& tls,
             handshake_request extra, Token&& token) {
    auto co = detail::legacy_connect_options(opts, &tls, extra);
    co.executor = std::move(ex);
    return connect(std::move(url), std::move(co), std::forward<Token>(token));
}

/// Deprecated: as_tuple(use_awaitable), connect_options::failure = &why.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, error_code& ec,
                                                 connect_failure& why) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, nullptr, {}, &why), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::request = extra, failure = &why.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts,
                                                 const handshake_request& extra, error_code& ec,
                                                 connect_failure& why) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, nullptr, extra, &why), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::tls = &tls, failure = &why.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls,
                                                 error_code& ec, connect_failure& why) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls, {}, &why), &ec);
}

/// Deprecated: as_tuple(use_awaitable), connect_options::tls = &tls, request = extra, failure = &why.
[[deprecated("use connect(url, connect_options, token)")]]
inline asio::awaitable<client_websocket> connect(std::string url, const options& opts, asio::ssl::context& tls,
                                                 const handshake_request& extra, error_code& ec,
                                                 connect_failure& why) {
    return detail::start_connect(std::move(url), detail::legacy_connect_options(opts, &tls, extra, &why), &ec);
}

} // namespace corows

#if COROWS_DETAIL_LIBRARY_INSTANCES
COROWS_DETAIL_WEBSOCKET_INSTANCES(extern, corows::client_stream)
#endif
