// SPDX-License-Identifier: BSL-1.0
// connect() as the client tests call it: connect_options made from a test's options (and TLS
// context, request fields), and the failure read from as_tuple and connect_options::failure
// rather than caught.
#pragma once

#include <corows/connect.hpp>

#include "test_asio.hpp"

#include <string>
#include <utility>

namespace corows::test {

/// connect_options with `o` as the connection's settings and `tls` (nullptr: the default) as
/// the TLS context. Overloads rather than a default argument: see connect.hpp (g++ 12).
inline connect_options client_options(const options& o, asio::ssl::context* tls) {
    connect_options co;
    co.connection = o;
    co.tls = tls;
    return co;
}
/// client_options(o, nullptr).
inline connect_options client_options(const options& o) { return client_options(o, nullptr); }

/// `co` with `extra` as its request fields.
inline connect_options with_request(connect_options co, handshake_request extra) {
    co.request = std::move(extra);
    return co;
}

/// connect(url, co, as_tuple(use_awaitable)): the error in `ec`, the failure's parts in `why`.
inline asio::awaitable<client_websocket> connect_reporting(std::string url, connect_options co, error_code& ec,
                                                           connect_failure& why) {
    co.failure = &why;
    auto [e, ws] = co_await connect(std::move(url), std::move(co), tokens::as_tuple(asio::use_awaitable));
    ec = e;
    co_return std::move(ws);
}

/// connect_reporting() without the failure's parts.
inline asio::awaitable<client_websocket> connect_reporting(std::string url, connect_options co, error_code& ec) {
    auto [e, ws] = co_await connect(std::move(url), std::move(co), tokens::as_tuple(asio::use_awaitable));
    ec = e;
    co_return std::move(ws);
}

} // namespace corows::test
