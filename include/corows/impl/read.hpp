// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>::read_message: the coroutine driver of the read pump.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/detail/readable_wait.hpp>

#include <memory>
#include <optional>
#include <system_error>

namespace corows {
namespace detail {

/// Every wait of the read pump but the socket's readability: a transport read (a stream that
/// cannot wait without a buffer), room in the write queue, a yield to the thread's other
/// work, or the end of the connection. Returns what ends the read: a cancellation, or at the
/// end why the connection ended; nothing when the transport may go on. A frame of its own, so the
/// frame an idle connection keeps suspended in read_loop() stays small.
template <class Stream>
asio::awaitable<error_code> wait_out(std::shared_ptr<transport<Stream>> s, pump_step step) {
    error_code ec;
    switch (step) {
    case pump_step::read: {
        auto space = s->conn.receive_space();
        std::size_t n = co_await s->stream.async_read_some(asio::buffer(space.data(), space.size()),
                                                           asio::redirect_error(asio::use_awaitable, ec));
        if (!s->received(n, ec)) co_return ec; // cancelled by the caller
        // A read the caller cancelled may still complete with bytes: an I/O completion port
        // cannot take back a read that has finished, and a TLS stream may have a record in
        // hand. They stay in the connection for the next read, and this one ends cancelled: a
        // message decoded now would be dropped with the cancelled operation's result.
        if (n != 0) {
            const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
            if (state.cancelled() != asio::cancellation_type::none) co_return error_code(asio::error::operation_aborted);
        }
        co_return error_code{};
    }
    case pump_step::room:
        ec = co_await wait(s);
        if (!ec) s->resume();
        co_return ec;
    case pump_step::yield: {
        co_await asio::post(s->stream.get_executor(), asio::use_awaitable);
        s->resume();
        // A cancellation that came while the thread ran other work: end before decoding more,
        // which could complete a message in an operation whose result is dropped.
        const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
        if (state.cancelled() != asio::cancellation_type::none) co_return error_code(asio::error::operation_aborted);
        co_return error_code{};
    }
    default:
        ec = co_await transport_gone(s);
        co_return ec ? ec : s->end_report();
    }
}

/// Reads the next message into `m`: runs the transport and waits where it says. Returns true for
/// a message. Otherwise: with `report`, stores why (error::closed once closed) and returns
/// false; without, returns false once closed and throws anything else. Its frame is what an
/// idle connection holds while it waits for the socket, so it keeps only that wait.
template <class Stream>
asio::awaitable<bool> read_loop(std::shared_ptr<transport<Stream>> s, message& m, error_code* report) {
    error_code ec;
    if (s->reading) {
        ec = error::operation_in_progress;
    } else {
        s->reading = true;
        struct reading_guard { // also when a co_await throws, or the frame is destroyed
            transport<Stream>* s;
            ~reading_guard() {
                s->reading = false;
                s->notify();
            }
        } guard{s.get()};
        for (;;) {
            const pump_step step = s->advance(s, m, false);
            if (step == pump_step::message) break;
            if constexpr (transport<Stream>::waits_without_buffer) {
                if (step == pump_step::readable) {
                    co_await readable<bool, Stream>{s->stream, ec};
                    if (!ec) {
                        s->readable();
                        continue;
                    }
                    if (ec == asio::error::operation_aborted && !s->transport_closed)
                        break; // cancelled by the caller: nothing decoded is lost
                    s->read_failed();
                    ec.clear();
                    continue;
                }
            }
            ec = co_await wait_out(s, step);
            if (ec) break;
        }
    }
    if (report) {
        *report = ec;
        co_return !ec;
    }
    if (ec == error::closed) co_return false;
    throw_if(ec);
    co_return true;
}

/// read_message(): assembles in the connection, not in this frame, so that a cancelled read
/// does not take the fragments it consumed down with it.
template <class Stream>
asio::awaitable<std::optional<message>> read_owned(std::shared_ptr<transport<Stream>> s) {
    if (!s->assembly) s->assembly = std::make_unique<message>();
    error_code ec;
    co_await detail::read_loop(s, *s->assembly, &ec);
    if (ec == error::closed) co_return std::nullopt;
    detail::throw_if(ec);
    message m = std::move(*s->assembly);
    m.own();
    co_return std::optional<message>(std::move(m));
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code, std::optional<message>)) Token>
auto websocket<Stream>::read_message(Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_]() mutable { return detail::read_owned(std::move(s)); });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code, bool)) Token>
auto websocket<Stream>::read_message(message& m, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, &m]() mutable { return detail::read_loop(std::move(s), m, nullptr); });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::read_message(message& m, error_code& ec) {
    co_await detail::read_loop(s_, m, &ec);
}

} // namespace corows
