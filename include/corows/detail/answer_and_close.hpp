// SPDX-License-Identifier: BSL-1.0
// The answer of a server to a connection it does not admit: an HTTP status written on the raw
// socket, before anything of the request is read.
#pragma once

#include <corows/asio.hpp>
#include <corows/protocol/handshake.hpp>

#include <chrono>
#include <memory>
#include <string_view>

namespace corows::detail {

/// Writes busy_response(status) on `sock` (TCP or Unix domain), then reads and drops what the
/// client sends until it closes, for at most a second, and closes `sock`.
// The draining: closing with the request unread would reset the connection, and the client
// could lose the answer.
template <class Socket>
asio::awaitable<void> answer_and_close(Socket sock, int status) {
    struct refused {
        Socket sock;
        asio::steady_timer limit;
    };
    auto ex = sock.get_executor();
    auto r = std::make_shared<refused>(refused{std::move(sock), asio::steady_timer(ex)});
    error_code ec;
    co_await asio::async_write(r->sock, asio::buffer(busy_response(static_cast<unsigned>(status))),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) r->sock.shutdown(asio::socket_base::shutdown_send, ec);
    if (!ec) {
        r->limit.expires_after(std::chrono::seconds(1));
        r->limit.async_wait([r](error_code e) {
            if (!e) r->sock.close(e);
        });
        char sink[512];
        while (!ec)
            co_await r->sock.async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
        r->limit.cancel();
    }
    r->sock.close(ec);
}

} // namespace corows::detail
