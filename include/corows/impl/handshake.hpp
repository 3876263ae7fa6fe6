// websocket<Stream>'s client side of the opening handshake (RFC 6455 §4.1): send the upgrade
// request, check the answer, negotiate the subprotocol and permessage-deflate.
#pragma once

#include <corows/config.hpp>
#include <corows/detail/awaiting.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/pump.hpp>
#include <corows/impl/accept.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace corows {
namespace detail {

template <class Stream>
asio::awaitable<std::error_code> handshake(std::shared_ptr<pump<Stream>> s, const std::string& host,
                                           const std::string& target, const handshake_request& extra) {
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
    std::error_code ec;
    co_await asio::async_write(s->stream, asio::buffer(request), asio::redirect_error(asio::use_awaitable, ec));
    http_response_parser parser(opts.http);
    if (!ec) ec = co_await read_head(s, parser);
    upgrade_response ur;
    if (!ec) ec = validate_upgrade_response(parser.get(), o, ur);
    std::optional<deflate_params> params;
    if (!ec && !ur.extensions.empty()) {
        if (!opts.deflate.enabled) ec = error::bad_extension;
        else ec = accept_deflate_response(ur.extensions, opts.deflate, params);
    }
    if (ec) {
        bool timed_out = s->conn.timed_out();
        s->close_transport_now();
        co_return timed_out ? make_error_code(error::timeout) : ec;
    }
    opened(s, role::client, std::move(ur.subprotocol), params);
    co_return std::error_code{};
}

template <class Stream>
asio::awaitable<void> handshake_or_throw(std::shared_ptr<pump<Stream>> s, std::string host, std::string target,
                                         handshake_request extra) {
    throw_if(co_await handshake(std::move(s), host, target, extra));
}

} // namespace detail

template <class Stream>
template <COROWS_TOKEN_FOR(void(std::error_code)) Token>
auto websocket<Stream>::handshake(std::string host, std::string target, handshake_request extra, Token&& token) {
    return detail::launch(get_executor(), std::forward<Token>(token),
                          [s = s_, host = std::move(host), target = std::move(target), extra = std::move(extra)]() mutable {
                              return detail::handshake_or_throw(std::move(s), std::move(host), std::move(target),
                                                                std::move(extra));
                          });
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(std::error_code)) Token>
auto websocket<Stream>::handshake(std::string host, std::string target, Token&& token) {
    return handshake(std::move(host), std::move(target), handshake_request(), std::forward<Token>(token));
}

template <class Stream>
template <COROWS_TOKEN_FOR(void(std::error_code)) Token>
auto websocket<Stream>::handshake(std::string host, Token&& token) {
    return handshake(std::move(host), "/", handshake_request(), std::forward<Token>(token));
}

template <class Stream>
asio::awaitable<void> websocket<Stream>::handshake(std::string host, std::string target,
                                                   const handshake_request& extra, std::error_code& ec) {
    ec = co_await detail::handshake(s_, host, target, extra);
}

} // namespace corows
