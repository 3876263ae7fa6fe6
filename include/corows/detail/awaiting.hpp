// SPDX-License-Identifier: BSL-1.0
// The waits that websocket<Stream>'s coroutines share: for the writer to move, for one
// transport read, for the queue to drain, for the transport to close.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/transport.hpp>
#include <corows/detail/readable_wait.hpp>
#include <corows/error.hpp>

#include <memory>
#include <stdexcept>
#include <system_error>

namespace corows::detail {

/// Throws system_error for a failure.
inline void throw_if(error_code ec) {
    if (ec) throw system_error(ec);
}

/// Waits for the transport's notify(); operation_aborted only if this coroutine was cancelled.
template <class Stream>
asio::awaitable<error_code> wait(std::shared_ptr<transport<Stream>> s) {
    error_code ec;
    s->add_waiter(1);
    co_await s->signal_timer().async_wait(asio::redirect_error(asio::use_awaitable, ec));
    s->add_waiter(-1);
    auto cs = co_await asio::this_coro::cancellation_state;
    if (cs.cancelled() != asio::cancellation_type::none) co_return asio::error::operation_aborted;
    co_return error_code{};
}

/// One transport read into the connection's receive buffer (the opening handshake reads
/// its HTTP head this way); error::timeout if the handshake timer closed the transport.
template <class Stream>
asio::awaitable<error_code> read_some(std::shared_ptr<transport<Stream>> s) {
    error_code ec;
    if constexpr (transport<Stream>::waits_without_buffer) {
        for (;;) {
            if (!s->drained() && s->try_read(ec)) break;
            co_await readable<error_code, Stream>{s->stream, ec};
            if (ec) break;
            s->readable();
        }
    } else {
        auto space = s->conn.receive_space();
        std::size_t n = co_await s->stream.async_read_some(asio::buffer(space.data(), space.size()),
                                                           asio::redirect_error(asio::use_awaitable, ec));
        s->conn.received(n, connection::clock::now());
    }
    if (ec && s->conn.timed_out()) ec = error::timeout;
    co_return ec;
}

/// Completes when everything queued so far has been written, or with the write error.
template <class Stream>
asio::awaitable<error_code> flush_queue(std::shared_ptr<transport<Stream>> s) {
    while ((s->writing() || s->conn.has_output()) && !s->conn.write_error() && !s->transport_closed) {
        s->kick(s);
        error_code waited = co_await wait(s);
        if (waited) co_return waited;
    }
    if (auto ec = s->conn.write_error()) co_return ec;
    if (s->transport_closed && s->queued() > 0) co_return error::closed;
    co_return error_code{};
}

/// Completes once the transport is closed: after the writer sent the last frame of a closed
/// connection (it then closes the transport), or a timeout cut it short.
template <class Stream>
asio::awaitable<error_code> transport_gone(std::shared_ptr<transport<Stream>> s) {
    s->settle(s);
    while (!s->transport_closed) {
        error_code waited = co_await wait(s);
        if (waited) co_return waited;
    }
    co_return error_code{};
}

} // namespace corows::detail
