// SPDX-License-Identifier: BSL-1.0
// websocket<Stream>'s client side of the opening handshake (RFC 6455 §4.1): send the upgrade
// request, check the answer, negotiate the subprotocol and permessage-deflate.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/impl/accept.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace corows {
namespace detail {

/// After a refusal's head: up to max_refusal_body bytes of its body (response_body_decoder()).
/// Whatever ends the read early (the handshake timer, a reset, a bad chunk) only shortens the
/// body: the refusal is what the caller learns.
template <class Stream>
asio::awaitable<void> read_refusal_body(std::shared_ptr<transport<Stream>> s, http_response& res) {
    auto body = response_body_decoder(res, "GET", max_refusal_body);
    if (!s->transport_closed) co_await read_body_bytes(s, body, res.body);
}

template <class Stream>
asio::awaitable<error_code> handshake(std::shared_ptr<transport<Stream>> s, const std::string& host,
                                      const std::string& target, const handshake_request& extra,
                                      http_response* answer) {
    const options& opts = s->conn.settings();
    std::string key = generate_key();
    std::string offer = opts.deflate.enabled ? deflate_offer(opts.deflate) : std::string{};
    upgrade_offer o;
    o.host = host;
    o.target = target;
    o.key = key;
    o.subprotocols = opts.subprotocols;
    o.extensions = offer;
    o.origin = extra.origin;
    o.extra_fields = extra.extra_fields;
    std::string request;
    try {
        request = build_upgrade_request(o);
    } catch (const std::invalid_argument&) {
        co_return error::handshake_failed;
    }
    handshake_phase(s);
    error_code ec;
    co_await asio::async_write(s->stream, asio::buffer(request), asio::redirect_error(asio::use_awaitable, ec));
    http_response_parser parser(opts.http);
    if (!ec) {
        ec = co_await read_head(s, parser);
        // An end before any answer is most often a TLS server that dropped a plain request;
        // some answer it with an alert record (content type 21) instead.
        if (ec == asio::error::eof && !s->conn.timed_out()) ec = error::handshake_closed;
        if (ec == error::http_parse_error && looks_like_tls_record(s->conn.buffered())) ec = error::tls_answer;
    }
    upgrade_response ur;
    if (!ec) ec = validate_upgrade_response(parser.get(), o, ur);
    if (ec == error::bad_status) {
        co_await read_refusal_body(s, parser.get());
        s->close_transport_now();
        if (answer) *answer = parser.release();
        co_return ec;
    }
    if (answer && parser.status() == http_parse_status::complete) *answer = parser.get();
    std::optional<deflate_params> params;
    if (!ec && !ur.extensions.empty()) {
        if (!opts.deflate.enabled) ec = error::bad_extension;
        else ec = accept_deflate_response(ur.extensions, opts.deflate, params);
    }
    if (ec) {
        bool timed_out = s->conn.timed_out();
        s->close_transport_now();
        co_return timed_out ? error_code(make_error_code(error::timeout)) : ec;
    }
    opened(s, role::client, std::move(ur.subprotocol), params);
    co_return error_code{};
}

template <class Stream>
asio::awaitable<void> handshake_or_throw(std::shared_ptr<transport<Stream>> s, std::string host, std::string target,
                                         handshake_request extra) {
    throw_if(co_await handshake(std::move(s), host, target, extra, nullptr));
}

template <class Stream>
asio::awaitable<void> handshake_with_answer(std::shared_ptr<transport<Stream>> s, std::string host, std::string target,
                                            std::shared_ptr<handshake_request> extra, http_response* res,
                                            error_code* ec) {
    error_code failure = co_await handshake(s, host, target, *extra, res);
    if (ec) *ec = failure;
    else if (failure == error::bad_status) throw handshake_error(*res);
    else throw_if(failure);
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::handshake(std::string host, std::string target, handshake_request extra, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, host = std::move(host), target = std::move(target), extra = std::move(extra)]() mutable {
                              return detail::handshake_or_throw(std::move(s), std::move(host), std::move(target),
                                                                std::move(extra));
                          });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::handshake(std::string host, std::string target, Token&& token) {
    return handshake(std::move(host), std::move(target), handshake_request(), std::forward<Token>(token));
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::handshake(std::string host, Token&& token) {
    return handshake(std::move(host), "/", handshake_request(), std::forward<Token>(token));
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::handshake(std::string host, std::string target,
                                                   const handshake_request& extra, error_code& ec) {
    ec = co_await detail::handshake(s_, host, target, extra, nullptr);
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(error_code)) Token>
auto websocket<Stream>::handshake(std::string host, std::string target, handshake_request extra, http_response& res,
                                  Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, host = std::move(host), target = std::move(target),
                           extra = std::make_shared<handshake_request>(std::move(extra)), &res]() mutable {
                              return detail::handshake_with_answer(std::move(s), std::move(host), std::move(target),
                                                                   std::move(extra), &res, nullptr);
                          });
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::handshake(std::string host, std::string target,
                                                   const handshake_request& extra, http_response& res,
                                                   error_code& ec) {
    return detail::handshake_with_answer(s_, std::move(host), std::move(target),
                                         std::make_shared<handshake_request>(extra), &res, &ec);
}

} // namespace corows
