// SPDX-License-Identifier: BSL-1.0
// The I/O of connect()'s proxy step: over a TCP socket connected to the proxy, an HTTP
// CONNECT or SOCKS5 exchange (corows/protocol/proxy.hpp decides every byte) that leaves the
// socket tunnelled to the target. Bounded by connect()'s deadline, which closes the socket.
#pragma once

#include <corows/asio.hpp>
#include <corows/error.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/proxy.hpp>
#include <corows/protocol/url.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace corows::detail {

/// What a failed tunnel knows beyond its error_code.
struct proxy_outcome {
    std::string detail;                    ///< a sentence for connect_failure::detail
    std::optional<http_response> response; ///< the HTTP proxy's answer to CONNECT, if one came
    bool resolving = false;                ///< socks5://: resolving the target here failed
};

/// The HTTP CONNECT exchange; `limits` bound the proxy's answer head.
inline asio::awaitable<error_code> http_connect_tunnel(asio::ip::tcp::socket& socket, const proxy_url& proxy,
                                                       const url& target, http_limits limits, proxy_outcome& out) {
    error_code ec;
    const std::string request = build_connect_request(target.host, target.port, proxy);
    co_await asio::async_write(socket, asio::buffer(request), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    http_connect_reader reader(limits, proxy.has_credentials);
    // The parser holds at most limits.max_head_size, whatever the proxy sends.
    std::array<std::uint8_t, 2048> buf{};
    while (reader.status() == proxy_status::need_more) {
        const std::size_t n = co_await socket.async_read_some(asio::buffer(buf),
                                                              asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::eof) {
            out.detail = "the proxy closed the connection before its answer to CONNECT was whole";
            co_return error::proxy_protocol_error;
        }
        if (ec) co_return ec;
        reader.feed(std::span<const std::uint8_t>(buf.data(), n));
    }
    if (reader.status() == proxy_status::complete) co_return error_code{};
    out.detail = reader.detail();
    out.response = reader.response();
    co_return reader.error();
}

/// The SOCKS5 CONNECT request for `target`: its address for an IP literal, else its name
/// (socks5h://) or the first address this host resolves it to (socks5://, as curl).
inline asio::awaitable<error_code> socks5_request(asio::ip::tcp::resolver& resolver, const proxy_url& proxy,
                                                  const url& target, std::vector<std::uint8_t>& out) {
    error_code ec;
    asio::ip::address address;
    if (target.host_is_ip()) {
        address = asio::ip::make_address(target.host, ec);
        if (ec) co_return ec;
    } else if (proxy.kind == proxy_kind::socks5h) {
        out = socks5_connect_by_name(target.host, target.port);
        co_return ec;
    } else {
        auto results = co_await resolver.async_resolve(target.host, std::to_string(target.port),
                                                       asio::ip::resolver_base::numeric_service,
                                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return ec;
        if (results.empty()) co_return asio::error::host_not_found;
        address = results.begin()->endpoint().address();
    }
    if (address.is_v4()) {
        const auto bytes = address.to_v4().to_bytes();
        out = socks5_connect_by_address(bytes, target.port);
    } else {
        const auto bytes = address.to_v6().to_bytes();
        out = socks5_connect_by_address(bytes, target.port);
    }
    co_return ec;
}

/// The SOCKS5 exchange: reads exactly what each reply holds, so no byte of the target's is
/// taken from the socket.
inline asio::awaitable<error_code> socks5_tunnel(asio::ip::tcp::socket& socket, asio::ip::tcp::resolver& resolver,
                                                 const proxy_url& proxy, const url& target, proxy_outcome& out) {
    std::vector<std::uint8_t> request;
    error_code ec = co_await socks5_request(resolver, proxy, target, request);
    if (ec) {
        out.resolving = true;
        co_return ec;
    }
    socks5_handshake h(proxy, std::move(request));
    std::array<std::uint8_t, 262> buf{}; // the longest reply: a 255-byte name in the bound address
    while (h.status() == proxy_status::need_more) {
        if (!h.output().empty()) {
            co_await asio::async_write(socket, asio::buffer(h.output().data(), h.output().size()),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return ec;
            h.output_sent();
        }
        const std::size_t need = h.need();
        co_await asio::async_read(socket, asio::buffer(buf.data(), need), asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::eof) {
            out.detail = "the proxy closed the connection in the middle of the SOCKS5 handshake";
            co_return error::proxy_protocol_error;
        }
        if (ec) co_return ec;
        h.feed(std::span<const std::uint8_t>(buf.data(), need));
    }
    if (h.status() == proxy_status::complete) co_return error_code{};
    out.detail = h.detail();
    co_return h.error();
}

/// Turns `socket`, connected to `proxy`, into a tunnel to `target`; on failure `out` says why.
inline asio::awaitable<error_code> open_proxy_tunnel(asio::ip::tcp::socket& socket, asio::ip::tcp::resolver& resolver,
                                                     const proxy_url& proxy, const url& target, http_limits limits,
                                                     proxy_outcome& out) {
    if (proxy.kind == proxy_kind::http) return http_connect_tunnel(socket, proxy, target, limits, out);
    return socks5_tunnel(socket, resolver, proxy, target, out);
}

} // namespace corows::detail
