// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>'s writes: messages (queued, or direct from the caller's memory), prepared
// messages, pings and pongs, flush.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <system_error>

namespace corows {
namespace detail {

/// The common case of a write, without waiting: there is room in the queue. Returns true
/// when done (`ec` is the outcome); false when write_slow() must wait for room or write
/// directly.
template <class Stream>
bool queue_now(const std::shared_ptr<transport<Stream>>& s, std::span<const std::uint8_t> payload,
               message_kind kind, bool compress, error_code& ec) {
    if ((ec = s->conn.write_status())) return true;
    if (s->conn.goes_direct(payload.size(), compress) || !s->conn.has_room()) return false;
    ec = s->conn.send_message(kind, payload, compress);
    // A compressor failure failed the connection: its close frame goes out, then the transport.
    if (ec) s->settle(s);
    else s->kick(s);
    return true;
}

/// A large server message goes out from the caller's memory: header and payload in one
/// gather write, with any queued control frames sent between its fragments (data frames
/// wait in write_slow(), and a close frame waits for the last fragment).
template <class Stream>
asio::awaitable<error_code> write_direct(std::shared_ptr<transport<Stream>> s, std::span<const std::uint8_t> payload,
                                         message_kind kind) {
    while (s->writing() || s->conn.has_output()) {
        s->kick(s);
        error_code waited = co_await wait(s);
        if (waited) co_return waited;
        if (auto ec = s->conn.write_status()) co_return ec;
    }
    s->begin_direct(s);
    error_code ec;
    do {
        std::array<std::uint8_t, max_frame_header_size> head;
        auto frame = s->conn.next_direct_frame(head, kind, payload);
        std::array<asio::const_buffer, 2> bufs{asio::buffer(head.data(), frame.header_size),
                                               asio::buffer(frame.payload.data(), frame.payload.size())};
        co_await asio::async_write(s->stream, bufs, s->noting_progress(),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (!ec && !payload.empty() && s->conn.controls_between_frames()) {
            auto bytes = s->conn.take_output().bytes.data();
            co_await asio::async_write(s->stream, asio::buffer(bytes.data(), bytes.size()), s->noting_progress(),
                                       asio::redirect_error(asio::use_awaitable, ec));
            s->conn.output_written();
        }
    } while (!ec && !payload.empty());
    s->end_direct(s, ec);
    co_return ec ? error_code(s->conn.write_error()) : ec;
}

/// A write that must wait: for room in the queue (back-pressure; a cancelled wait queued
/// nothing), or for the transport, to write directly.
template <class Stream>
asio::awaitable<error_code> write_slow(std::shared_ptr<transport<Stream>> s, std::span<const std::uint8_t> payload,
                                       message_kind kind, bool compress) {
    if (auto ec = s->conn.write_status()) co_return ec;
    if (s->conn.goes_direct(payload.size(), compress)) co_return co_await write_direct(s, payload, kind);
    // Also waits out a direct write: it sends the queue between its fragments, where only
    // control frames may go.
    while (!s->conn.has_room()) {
        s->kick(s);
        error_code waited = co_await wait(s);
        if (waited) co_return waited;
        if (auto ec = s->conn.write_status()) co_return ec;
    }
    error_code ec;
    queue_now(s, payload, kind, compress, ec);
    co_return ec;
}

/// write_message()'s one coroutine (the public overloads only choose how failure is
/// reported: thrown, or stored in *report). The common case, room in the queue, suspends
/// nowhere and starts no nested coroutine.
template <class Stream>
asio::awaitable<void> write(std::shared_ptr<transport<Stream>> s, std::span<const std::uint8_t> payload,
                            message_kind kind, bool compress, error_code* report) {
    error_code ec;
    if (!queue_now(s, payload, kind, compress, ec)) ec = co_await write_slow(s, payload, kind, compress);
    if (report) *report = ec;
    else throw_if(ec);
}

/// Queues a control frame: a ping (which the keepalive counts) or an unsolicited pong.
template <class Stream>
error_code queue_control(const std::shared_ptr<transport<Stream>>& s, opcode op, std::span<const std::uint8_t> payload) {
    error_code ec = op == opcode::ping ? s->conn.send_ping(payload, connection::clock::now())
                                            : s->conn.send_pong(payload);
    if (!ec) s->kick(s);
    return ec;
}

/// Queues `pm` (the caller checked for room); a compressor failure fails the connection.
template <class Stream>
error_code queue_prepared(const std::shared_ptr<transport<Stream>>& s, const std::shared_ptr<const prepared_message>& pm) {
    error_code ec = s->conn.send_prepared(pm);
    if (ec) s->settle(s);
    else s->kick(s);
    return ec;
}

/// Queues `pm` without waiting, if the queue has room; false if it queued nothing.
template <class Stream>
bool send_prepared(const std::shared_ptr<transport<Stream>>& s, const std::shared_ptr<const prepared_message>& pm) {
    if (s->conn.write_status() || !s->conn.has_room()) return false;
    return !queue_prepared(s, pm);
}

/// Queues a message without waiting, if the queue has room.
template <class Stream>
bool send_now(const std::shared_ptr<transport<Stream>>& s, std::span<const std::uint8_t> payload, message_kind kind,
              bool compress) {
    if (s->conn.write_status() || !s->conn.has_room()) return false;
    error_code ec = s->conn.send_message(kind, payload, compress);
    if (ec) s->settle(s);
    else s->kick(s);
    return !ec;
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_message(std::span<const std::uint8_t> payload, message_kind kind, bool compress,
                                      Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token), [s = s_, payload, kind, compress]() mutable {
        return detail::write(std::move(s), payload, kind, compress, nullptr);
    });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                                       bool compress, error_code& ec) {
    return detail::write(s_, payload, kind, compress, &ec);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_message(const message& m, Token&& token) {
    return write_message(m.data(), m.kind(), true, std::forward<Token>(token));
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::write_message(const message& m, error_code& ec) {
    return detail::write(s_, m.data(), m.kind(), true, &ec);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_text(std::string_view text, Token&& token) {
    return write_message(as_bytes(text), message_kind::text, true, std::forward<Token>(token));
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_binary(std::span<const std::uint8_t> data, Token&& token) {
    return write_message(data, message_kind::binary, true, std::forward<Token>(token));
}

template <class Stream>
bool websocket<Stream>::send(const std::shared_ptr<const prepared_message>& pm) {
    return detail::send_prepared(s_, pm);
}

template <class Stream>
bool websocket<Stream>::send(std::span<const std::uint8_t> payload, message_kind kind, bool compress) {
    return detail::send_now(s_, payload, kind, compress);
}

namespace detail {

/// write_prepared(): waits for room, then queues `pm`.
template <class Stream>
asio::awaitable<void> write_prepared(std::shared_ptr<transport<Stream>> s, std::shared_ptr<const prepared_message> pm) {
    for (;;) {
        throw_if(s->conn.write_status());
        if (s->conn.has_room()) break;
        s->kick(s);
        throw_if(co_await wait(s));
    }
    throw_if(queue_prepared(s, pm));
}

/// ping() and pong(): queued at once; the coroutine only reports.
template <class Stream>
asio::awaitable<void> control(std::shared_ptr<transport<Stream>> s, opcode op, std::span<const std::uint8_t> payload) {
    throw_if(queue_control(s, op, payload));
    co_return;
}

template <class Stream>
asio::awaitable<void> flush_or_throw(std::shared_ptr<transport<Stream>> s) {
    throw_if(co_await flush_queue(s));
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_prepared(std::shared_ptr<const prepared_message> pm, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token), [s = s_, pm = std::move(pm)]() mutable {
        return detail::write_prepared(std::move(s), std::move(pm));
    });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::ping(std::span<const std::uint8_t> payload, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token), [s = s_, payload]() mutable {
        return detail::control(std::move(s), opcode::ping, payload);
    });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::ping(std::span<const std::uint8_t> payload, error_code& ec) {
    ec = detail::queue_control(s_, opcode::ping, payload);
    co_return;
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::pong(std::span<const std::uint8_t> payload, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token), [s = s_, payload]() mutable {
        return detail::control(std::move(s), opcode::pong, payload);
    });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::flush(Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_]() mutable { return detail::flush_or_throw(std::move(s)); });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::flush(error_code& ec) {
    ec = co_await detail::flush_queue(s_);
}

} // namespace corows
