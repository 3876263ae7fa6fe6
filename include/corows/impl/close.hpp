// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>::close and start_close: the close handshake of RFC 6455 §7, driven by the
// read pump (the connection decides what is sent and when it is over).
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/impl/read.hpp>

#include <memory>
#include <string_view>
#include <system_error>

namespace corows {
namespace detail {

/// Starts the close handshake if it has not started: queues our close frame and arms the
/// close timeout.
template <class Stream>
error_code begin_close(const std::shared_ptr<transport<Stream>>& s, std::uint16_t code, std::string_view reason) {
    error_code ec = s->conn.start_close(code, reason, connection::clock::now());
    if (!ec) {
        s->settle(s);
        s->kick(s);
    }
    return ec;
}

/// close(): our close frame, then whatever reads the peer's answer (a pending read_message,
/// event mode, or this coroutine itself), until the transport is closed.
template <class Stream>
asio::awaitable<error_code> close(std::shared_ptr<transport<Stream>> s, std::uint16_t code, std::string_view reason) {
    if (!may_close_with(code)) co_return error::bad_close_code;
    auto state = s->conn.state();
    if (s->transport_closed || state == connection_state::connecting || state == connection_state::closed)
        co_return s->conn.close_sent() ? error_code{} : error_code(make_error_code(error::closed));
    if (s->conn.close_sent()) {
        // Someone else is closing: wait for the transport to go.
        while (!s->transport_closed) {
            error_code waited = co_await wait(s);
            if (waited) co_return waited;
        }
        co_return error_code{};
    }
    begin_close(s, code, reason);
    co_await flush_queue(s);
    if (s->reading) {
        // The pending reader sees the peer's close and finishes the handshake.
        while (!s->transport_closed) {
            error_code waited = co_await wait(s);
            if (waited) co_return waited;
        }
    } else {
        // Read (and drop) what arrives until the peer's close, or the close timeout.
        message scratch;
        error_code ec;
        while (co_await read_loop(s, scratch, &ec)) {
        }
    }
    s->close_transport_now();
    // The close timeout cut the handshake short: close_code() says 1006; close() is done.
    co_return error_code{};
}

} // namespace detail

namespace detail {

template <class Stream>
asio::awaitable<void> close_or_throw(std::shared_ptr<transport<Stream>> s, std::uint16_t code, std::string reason) {
    throw_if(co_await close(std::move(s), code, reason));
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::close(std::uint16_t code, std::string_view reason, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, code, reason = std::string(reason)]() mutable {
                              return detail::close_or_throw(std::move(s), code, std::move(reason));
                          });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::close(std::uint16_t code, std::string_view reason, error_code& ec) {
    ec = co_await detail::close(s_, code, reason);
}

template <class Stream>
void websocket<Stream>::let_go() noexcept {
    if (!s_) return;
    auto s = std::move(s_);
    if (s->transport_closed) return;
    auto state = s->conn.state();
    if (state == connection_state::open || state == connection_state::closing) {
        try {
            // The coroutine keeps the connection alive until the transport is closed.
            auto ex = s->stream.get_executor();
            asio::co_spawn(ex, detail::close(s, 1000, {}), asio::detached);
            return;
        } catch (...) {
            // No memory for the coroutine: cut the connection as abort() would.
        }
    }
    s->close_transport_now();
}

template <class Stream>
error_code websocket<Stream>::start_close(std::uint16_t code, std::string_view reason) {
    if (!may_close_with(code)) return error::bad_close_code;
    if (s_->transport_closed) return {};
    return detail::begin_close(s_, code, reason);
}

} // namespace corows
