// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>'s server side of the opening handshake (RFC 6455 §4.2): read the upgrade
// request, validate it, answer 101 or refuse.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/http_body.hpp>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

namespace corows {
namespace detail {

/// Feeds received bytes to `parser` until it has a whole head; reads as needed.
template <class Stream, class Parser>
asio::awaitable<error_code> read_head(std::shared_ptr<transport<Stream>> s, Parser& parser) {
    for (;;) {
        auto buffered = s->conn.buffered();
        if (!buffered.empty()) {
            auto r = parser.feed(buffered);
            // Bytes of a head that failed stay buffered: the client handshake looks at them.
            if (r.status == http_parse_status::failed) co_return r.error;
            s->conn.consume(r.consumed);
            if (r.status == http_parse_status::complete) co_return error_code{};
        }
        if (error_code ec = co_await read_some(s)) co_return ec;
    }
}

/// Feeds received bytes to `body` until it is complete, appending its data to `out`; reads as
/// needed. Returns the decoder's error or the read's.
template <class Stream>
asio::awaitable<error_code> read_body_bytes(std::shared_ptr<transport<Stream>> s, http_body_decoder& body,
                                            std::string& out) {
    for (;;) {
        auto r = body.feed(s->conn.buffered(), out);
        s->conn.consume(r.consumed);
        if (r.status == http_parse_status::complete) co_return error_code{};
        if (r.status == http_parse_status::failed) co_return r.error;
        if (error_code ec = co_await read_some(s)) co_return ec;
    }
}

/// The handshake timer runs from now (for the reading or writing the handshake does next).
template <class Stream>
void handshake_phase(const std::shared_ptr<transport<Stream>>& s) {
    s->conn.begin_handshake(connection::clock::now());
    s->arm_timer(s);
}

/// Writes an HTTP answer that ends the connection (a refusal), then closes the transport.
template <class Stream>
asio::awaitable<void> write_and_close(std::shared_ptr<transport<Stream>> s, std::string text) {
    error_code ec;
    handshake_phase(s);
    co_await asio::async_write(s->stream, asio::buffer(text), asio::redirect_error(asio::use_awaitable, ec));
    s->close_transport_now();
}

/// True if `Socket` is a TCP socket (not a Unix domain one, say).
template <class Socket>
concept tcp_transport = requires { typename Socket::protocol_type; } &&
                        std::is_same_v<typename Socket::protocol_type, asio::ip::tcp>;

/// The handshake succeeded as `r`: the connection opens, and the transport gets its settings.
template <class Stream>
void opened(const std::shared_ptr<transport<Stream>>& s, role r, std::string subprotocol,
            const std::optional<deflate_params>& params) {
    s->conn.open(r, std::move(subprotocol), params, connection::clock::now());
    auto& sock = s->stream.lowest_layer();
    // set_option() takes any option at compile time; only TCP has these.
    if constexpr (tcp_transport<std::remove_cvref_t<decltype(sock)>>) {
        const options& o = s->conn.settings();
        error_code ignored;
        if (o.tcp_nodelay) sock.set_option(asio::ip::tcp::no_delay(true), ignored);
        if (o.send_buffer_size != 0) {
            auto n = std::min<std::size_t>(o.send_buffer_size, static_cast<std::size_t>(INT_MAX));
            sock.set_option(asio::socket_base::send_buffer_size(static_cast<int>(n)), ignored);
        }
    }
    s->arm_timer(s);
}

/// Answers a valid upgrade request with 101 (negotiating the subprotocol and
/// permessage-deflate), or refuses a bad accept decision with 500.
template <class Stream>
asio::awaitable<error_code> accept_upgrade(std::shared_ptr<transport<Stream>> s, const upgrade_request& up,
                                           const accept_decision& d) {
    s->conn.use_settings(d.settings);
    const options& o = s->conn.settings();
    std::string sub = d.subprotocol ? *d.subprotocol : choose_subprotocol(o.subprotocols, up.subprotocols);
    std::string ext;
    std::optional<deflate_params> params;
    if (o.deflate.enabled) params = negotiate_deflate(up.extensions, o.deflate, ext);
    std::string response;
    try {
        response = build_accept_response(up, accept_options{sub, ext, d.extra_fields});
    } catch (const std::invalid_argument&) {
        response.clear();
    }
    if (response.empty()) {
        // The application chose a subprotocol that was not offered, or a malformed field.
        std::string refusal = build_refusal_response(500, "bad accept decision");
        co_await write_and_close(s, std::move(refusal));
        co_return error::handshake_failed;
    }
    handshake_phase(s);
    error_code ec;
    co_await asio::async_write(s->stream, asio::buffer(response), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        bool timed_out = s->conn.timed_out();
        s->close_transport_now();
        co_return timed_out ? error_code(make_error_code(error::timeout)) : ec;
    }
    opened(s, role::server, std::move(sub), params);
    co_return error_code{};
}

/// Validates `req` and accepts it, or refuses it with the RFC's status.
template <class Stream>
asio::awaitable<error_code> accept_request(std::shared_ptr<transport<Stream>> s, const http_request& req,
                                           const accept_decision& d) {
    upgrade_request up;
    if (auto ec = validate_upgrade_request(req, up)) {
        std::string refusal = build_refusal_response(ec);
        co_await write_and_close(s, std::move(refusal));
        co_return ec;
    }
    co_return co_await accept_upgrade(s, up, d);
}

/// Answers a valid upgrade request `up` (of `req`) as `decide` says.
template <class Stream>
asio::awaitable<error_code> accept_decided(std::shared_ptr<transport<Stream>> s, const http_request& req,
                                           const upgrade_request& up, const upgrade_decider& decide) {
    std::exception_ptr failure;
    upgrade_answer answer;
    try {
        answer = decide(req);
    } catch (...) {
        failure = std::current_exception();
        answer = upgrade_answer::refuse(500);
    }
    if (!answer.refused()) co_return co_await accept_upgrade(s, up, answer.decision());
    co_await write_and_close(s, build_refusal_response(answer.status(), answer.body(), {}));
    if (failure) std::rethrow_exception(failure);
    co_return error::handshake_failed;
}

/// accept(): read the request, then accept_request() (or, with `decide`, validate it and
/// accept_decided()).
template <class Stream>
asio::awaitable<error_code> accept(std::shared_ptr<transport<Stream>> s, const upgrade_decider* decide = nullptr) {
    http_request_parser parser(s->conn.settings().http);
    handshake_phase(s);
    error_code ec = co_await read_head(s, parser);
    if (ec) {
        if (parser.status() == http_parse_status::failed) {
            std::string refusal = build_refusal_response(ec);
            co_await write_and_close(s, std::move(refusal));
        }
        s->close_transport_now();
        co_return ec;
    }
    if (!decide) co_return co_await accept_request(s, parser.get(), accept_decision{});
    upgrade_request up;
    if (auto invalid = validate_upgrade_request(parser.get(), up)) {
        co_await write_and_close(s, build_refusal_response(invalid));
        co_return invalid;
    }
    co_return co_await accept_decided(s, parser.get(), up, *decide);
}

template <class Stream>
asio::awaitable<void> accept_or_throw(std::shared_ptr<transport<Stream>> s) {
    throw_if(co_await accept(std::move(s)));
}

template <class Stream>
asio::awaitable<void> accept_or_throw(std::shared_ptr<transport<Stream>> s, upgrade_decider decide) {
    throw_if(co_await accept(std::move(s), &decide));
}

template <class Stream>
asio::awaitable<void> accept_or_throw(std::shared_ptr<transport<Stream>> s, http_request req, accept_decision d) {
    throw_if(co_await accept_request(std::move(s), req, d));
}

template <class Stream>
asio::awaitable<void> accept_or_throw(std::shared_ptr<transport<Stream>> s, upgrade_request up, accept_decision d) {
    throw_if(co_await accept_upgrade(std::move(s), up, d));
}

/// read_request(): one request head; the handshake timer pauses once it is read.
template <class Stream>
asio::awaitable<http_request> read_request(std::shared_ptr<transport<Stream>> s, error_code* report) {
    http_request_parser parser(s->conn.settings().http);
    handshake_phase(s);
    error_code ec = co_await read_head(s, parser);
    // The application decides now (routing, authentication): its time is its own.
    s->conn.pause_handshake();
    s->arm_timer(s);
    if (report) *report = ec;
    else throw_if(ec);
    co_return parser.release();
}

template <class Stream>
asio::awaitable<void> refuse(std::shared_ptr<transport<Stream>> s, std::string text) {
    co_await write_and_close(std::move(s), std::move(text));
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::accept(Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_]() mutable { return detail::accept_or_throw(std::move(s)); });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::accept(error_code& ec) {
    ec = co_await detail::accept(s_);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::accept(upgrade_decider decide, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, decide = std::move(decide)]() mutable {
                              return detail::accept_or_throw(std::move(s), std::move(decide));
                          });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::accept(const upgrade_decider& decide, error_code& ec) {
    ec = co_await detail::accept(s_, &decide);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code, http_request)) Token>
auto websocket<Stream>::read_request(Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_]() mutable { return detail::read_request(std::move(s), nullptr); });
}

template <class Stream>
asio::awaitable<http_request> websocket<Stream>::read_request(error_code& ec) {
    return detail::read_request(s_, &ec);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::accept(http_request req, accept_decision d, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, req = std::move(req), d = std::move(d)]() mutable {
                              return detail::accept_or_throw(std::move(s), std::move(req), std::move(d));
                          });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::accept(http_request req, Token&& token) {
    return accept(std::move(req), accept_decision(), std::forward<Token>(token));
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::accept(const http_request& req, const accept_decision& d,
                                                error_code& ec) {
    ec = co_await detail::accept_request(s_, req, d);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::accept(upgrade_request up, accept_decision d, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, up = std::move(up), d = std::move(d)]() mutable {
                              return detail::accept_or_throw(std::move(s), std::move(up), std::move(d));
                          });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::accept(const upgrade_request& up, const accept_decision& d,
                                                error_code& ec) {
    ec = co_await detail::accept_upgrade(s_, up, d);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::refuse(unsigned status, std::string_view body, std::span<const http_field> extra_fields,
                               Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, text = build_refusal_response(status, body, extra_fields)]() mutable {
                              return detail::refuse(std::move(s), std::move(text));
                          });
}

} // namespace corows
