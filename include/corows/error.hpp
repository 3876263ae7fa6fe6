// SPDX-License-Identifier: BSL-1.0
// Error codes and close codes shared by the protocol core and the Asio layer.
#pragma once

#include <corows/condition.hpp>

#include <cstdint>
#include <string_view>
#include <system_error>

namespace corows {

/// Every failure of the WebSocket protocol and its connection that corows reports, in the
/// `corows` error category (compare with corows::condition for the kind of failure).
enum class error {
    // --- frame layer (RFC 6455 §5) ---
    reserved_opcode = 1,    ///< opcode 3-7 or 11-15
    reserved_bits,          ///< RSV1-3 set without an extension that defines them
    fragmented_control,     ///< control frame with FIN=0
    control_too_big,        ///< control frame payload over 125 bytes
    bad_length,             ///< 64-bit length with the top bit set, or a non-minimal length
    mask_required,          ///< unmasked frame received by a server
    unexpected_mask,        ///< masked frame received by a client
    frame_too_big,          ///< frame payload over the configured maximum
    // --- message layer ---
    bad_continuation,       ///< continuation frame with no message in progress
    expected_continuation,  ///< new data frame while a fragmented message is in progress
    message_too_big,        ///< message over the configured maximum
    invalid_utf8,           ///< text message or close reason is not UTF-8
    bad_close_code,         ///< close frame with a code that may not be sent
    bad_close_payload,      ///< close frame with a 1-byte payload
    // --- opening handshake (RFC 6455 §4) ---
    http_parse_error,       ///< malformed HTTP message
    header_too_large,       ///< HTTP head over the size limit
    too_many_headers,       ///< HTTP head over the header-count limit
    bad_method,             ///< upgrade request is not GET
    bad_http_version,       ///< not HTTP/1.1 or later
    missing_host,           ///< no Host header
    bad_upgrade,            ///< Upgrade header lacks "websocket"
    bad_connection,         ///< Connection header lacks "upgrade"
    bad_key,                ///< Sec-WebSocket-Key is not base64 of 16 bytes
    bad_version,            ///< Sec-WebSocket-Version is not 13
    bad_status,             ///< server answered with a status other than 101
    bad_accept,             ///< Sec-WebSocket-Accept does not match the key
    bad_subprotocol,        ///< server chose a subprotocol the client did not offer
    bad_extension,          ///< malformed or unacceptable Sec-WebSocket-Extensions
    // --- permessage-deflate (RFC 7692) ---
    inflate_failed,         ///< compressed payload is not valid deflate data
    deflate_failed,         ///< zlib failed to compress
    bad_compressed_frame,   ///< RSV1 on a continuation or control frame
    // --- connection ---
    closed,                 ///< the connection was closed (see the close code and reason)
    timeout,                ///< a handshake, idle or close timeout expired
    handshake_failed,       ///< the opening handshake was refused
    operation_in_progress,  ///< a second read while one is in flight
    // --- HTTP framing (appended: the values above stay stable) ---
    http_version_not_supported, ///< request version above HTTP/1.1 (answered 505)
    bad_content_length,     ///< Content-Length not a decimal number, or values that disagree
    conflicting_length,     ///< both Content-Length and Transfer-Encoding (RFC 9112 §6.3)
    upgrade_with_body,      ///< an upgrade request announces a body (smuggling risk)
    body_too_large,         ///< a body over http_limits::max_body_size (answered 413)
    length_required,        ///< a body without Content-Length (e.g. chunked) where one is needed (411)
    handshake_closed,       ///< the server closed the connection before its upgrade answer was whole
    bad_chunked_encoding,   ///< a malformed chunked body (RFC 9112 §7.1)
    tls_answer,             ///< a plain upgrade request was answered with a TLS record
    // --- Redis backplane: moved to redis_error (corows/redis_error.hpp); kept for one
    // release with their values, and still matching condition::redis ---
    backplane_error [[deprecated("use corows::redis_error::server_error")]],
    redis_auth_failed [[deprecated("use corows::redis_error::auth_failed")]],
    redis_protocol_error [[deprecated("use corows::redis_error::protocol_error")]],
    // --- client proxies (corows/protocol/proxy.hpp; appended) ---
    proxy_refused,          ///< the HTTP proxy answered CONNECT with a status other than 2xx or 407
    proxy_auth_failed,      ///< the proxy wants credentials (407, SOCKS5) or refused the ones sent
    proxy_protocol_error,   ///< the proxy sent malformed, unexpected or oversized data
    // --- connection (appended) ---
    send_timeout,           ///< output made no progress for options::send_timeout: the peer stopped reading
};

/// The category of corows::error values; name() is "corows".
const std::error_category& error_category() noexcept;

/// Wraps `e` in an std::error_code of corows' category.
std::error_code make_error_code(error e) noexcept;

/// The RFC section a peer broke when a connection fails with `ec`, e.g. "RFC 6455 §5.1" for
/// error::mask_required; empty for what no RFC forbids (a limit of ours, a timeout, a closed
/// connection) and for other categories' codes.
std::string_view rfc_section(std::error_code ec) noexcept;

/// Close status codes of RFC 6455 §7.4.1.
enum class close_code : std::uint16_t {
    none = 0,                ///< no close frame sent or received yet
    normal = 1000,
    going_away = 1001,
    protocol_error = 1002,
    unsupported_data = 1003,
    no_status = 1005,        ///< never sent: the peer's close frame had no code
    abnormal = 1006,         ///< never sent: the connection dropped without a close frame
    invalid_payload = 1007,
    policy_violation = 1008,
    message_too_big = 1009,
    mandatory_extension = 1010,
    internal_error = 1011,
    service_restart = 1012,
    try_again_later = 1013,
    bad_gateway = 1014,
    tls_failed = 1015,       ///< never sent
};

/// The close code a peer must be sent when the connection fails with `ec` (1002, 1007, 1008
/// for send_timeout, 1009 or 1011).
close_code close_code_for(std::error_code ec) noexcept;

/// True if `code` may appear in a close frame on the wire (RFC 6455 §7.4).
constexpr bool is_sendable_close_code(std::uint16_t code) noexcept {
    if (code >= 3000 && code <= 4999) return true;
    if (code < 1000 || code > 1014) return false;
    return code != 1004 && code != 1005 && code != 1006;
}

/// True if a close may be started with `code`: 0 (a close frame without a code) or a code
/// that may be sent (RFC 6455 §7.4); anything else is error::bad_close_code.
constexpr bool may_close_with(std::uint16_t code) noexcept { return code == 0 || is_sendable_close_code(code); }

} // namespace corows

/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_code_enum<corows::error> : std::true_type {};
/// @endcond
