// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>'s plain-HTTP side for custom servers: the bytes after a request head,
// a request body read by its Content-Length or chunked coding, and a response written on a
// connection that stays open for the next request.
#pragma once

#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/impl/accept.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/http_body.hpp>

#include <corows/asio.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace corows {
namespace detail {

/// Reads the body `body` decodes into `out`: the buffered bytes first, then from the stream
/// through the same buffer, so that bytes beyond the body stay buffered for the next request.
/// A failure closes the transport: the request's end is lost, so no next request can be found.
template <class Stream>
asio::awaitable<error_code> read_body(std::shared_ptr<transport<Stream>> s, http_body_decoder body, bool send_continue,
                                      std::string* out) {
    out->clear();
    out->reserve(static_cast<std::size_t>(body.remaining()));
    handshake_phase(s);
    error_code ec;
    if (send_continue && (body.kind() == http_body_decoder::framing::chunked ||
                          s->conn.buffered().size() < body.remaining())) {
        co_await asio::async_write(s->stream, asio::buffer(continue_response.data(), continue_response.size()),
                                   asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!ec) ec = co_await read_body_bytes(s, body, *out);
    if (ec) {
        if (s->conn.timed_out()) ec = error::timeout;
        s->close_transport_now();
        out->clear();
        co_return ec;
    }
    s->conn.pause_handshake();
    s->arm_timer(s);
    co_return error_code{};
}

template <class Stream>
asio::awaitable<std::string> read_body_or_throw(std::shared_ptr<transport<Stream>> s, http_body_decoder plan,
                                                bool send_continue) {
    std::string body;
    throw_if(co_await read_body(s, plan, send_continue, &body));
    co_return body;
}

template <class Stream>
asio::awaitable<std::string> read_body_into_ec(std::shared_ptr<transport<Stream>> s, http_body_decoder plan,
                                               bool send_continue, error_code* ec) {
    std::string body;
    *ec = co_await read_body(s, plan, send_continue, &body);
    co_return body;
}

template <class Stream>
asio::awaitable<std::string> body_refused(error_code failure, error_code* ec) {
    if (!ec) throw_if(failure);
    *ec = failure;
    co_return std::string{};
}

/// Writes a response prepared in wire form; closes the transport afterwards if `close`.
template <class Stream>
asio::awaitable<error_code> write_response(std::shared_ptr<transport<Stream>> s, std::string text, bool close) {
    // Once open, the background writer owns the stream: bytes written beside it would land in
    // the middle of its frames.
    if (s->conn.state() != connection_state::connecting || s->transport_closed)
        co_return make_error_code(asio::error::operation_not_supported);
    // An answer ends the server's handshake deadline (and frees its slot): a kept-alive
    // connection's next request gets a timeout of its own.
    s->conn.end_handshake_bound();
    handshake_phase(s);
    error_code ec;
    co_await asio::async_write(s->stream, asio::buffer(text), asio::redirect_error(asio::use_awaitable, ec));
    if (ec || close) {
        if (ec && s->conn.timed_out()) ec = error::timeout;
        s->close_transport_now();
        co_return ec;
    }
    s->conn.pause_handshake();
    s->arm_timer(s);
    co_return error_code{};
}

template <class Stream>
asio::awaitable<void> write_response_or_throw(std::shared_ptr<transport<Stream>> s, std::string text, bool close) {
    throw_if(co_await write_response(s, std::move(text), close));
}

template <class Stream>
asio::awaitable<void> write_response_into_ec(std::shared_ptr<transport<Stream>> s, std::string text, bool close,
                                             error_code* ec) {
    *ec = co_await write_response(s, std::move(text), close);
}

/// The body-reading operation for `req`, set up before any suspension so that `req` may be
/// a temporary; `ec` null: throw.
template <class Stream>
asio::awaitable<std::string> start_read_body(const std::shared_ptr<transport<Stream>>& s, const http_request& req,
                                             error_code* ec) {
    // Once open, the buffer holds frames, which the connection's reader owns.
    if (s->conn.state() != connection_state::connecting)
        return body_refused<Stream>(make_error_code(asio::error::operation_not_supported), ec);
    http_body_decoder plan;
    if (auto failure = request_body_decoder(req, s->conn.settings().http.max_body_size, plan))
        return body_refused<Stream>(failure, ec);
    const bool send_continue = plan.status() == http_parse_status::need_more && expects_continue(req);
    if (!ec) return read_body_or_throw(s, plan, send_continue);
    return read_body_into_ec(s, plan, send_continue, ec);
}

} // namespace detail

template <class Stream>
std::span<const std::uint8_t> websocket<Stream>::buffered_input() noexcept {
    return s_->conn.buffered();
}

template <class Stream>
void websocket<Stream>::consume_buffered(std::size_t n) noexcept {
    // Once open, the buffer holds frames the connection has yet to decode.
    if (s_->conn.state() != connection_state::connecting) return;
    s_->conn.consume(std::min(n, s_->conn.buffered().size()));
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code, std::string)) Token>
auto websocket<Stream>::read_body(const http_request& req, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [op = detail::start_read_body(s_, req, nullptr)]() mutable { return std::move(op); });
}

template <class Stream>
asio::awaitable<std::string> websocket<Stream>::read_body(const http_request& req, error_code& ec) {
    return detail::start_read_body(s_, req, &ec);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::write_response(const http_response& res, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, text = build_response(res), close = res.has_token("Connection", "close")]() mutable {
                              return detail::write_response_or_throw(std::move(s), std::move(text), close);
                          });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::write_response(const http_response& res, error_code& ec) {
    return detail::write_response_into_ec(s_, build_response(res), res.has_token("Connection", "close"), &ec);
}

} // namespace corows
