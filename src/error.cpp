// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/error.hpp>

#include "detail/enum_category.hpp"

#include <string>

// The Redis enumerators of corows::error are deprecated for users; their messages and
// conditions stay here until they are removed.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace corows {
namespace {

// The condition each code belongs to; condition{} for none (an internal failure, or misuse).
condition condition_of(error e) noexcept {
    switch (e) {
    case error::closed: return condition::closed;
    case error::handshake_closed: return condition::connection_lost;
    case error::timeout:
    case error::send_timeout: return condition::timeout;
    case error::reserved_opcode:
    case error::reserved_bits:
    case error::fragmented_control:
    case error::control_too_big:
    case error::bad_length:
    case error::mask_required:
    case error::unexpected_mask:
    case error::bad_continuation:
    case error::expected_continuation:
    case error::invalid_utf8:
    case error::bad_close_code:
    case error::bad_close_payload:
    case error::inflate_failed:
    case error::bad_compressed_frame: return condition::protocol_error;
    case error::frame_too_big:
    case error::message_too_big:
    case error::header_too_large:
    case error::too_many_headers:
    case error::body_too_large: return condition::too_big;
    case error::http_parse_error:
    case error::bad_method:
    case error::bad_http_version:
    case error::missing_host:
    case error::bad_upgrade:
    case error::bad_connection:
    case error::bad_key:
    case error::bad_version:
    case error::bad_accept:
    case error::bad_subprotocol:
    case error::bad_extension:
    case error::http_version_not_supported:
    case error::bad_content_length:
    case error::conflicting_length:
    case error::upgrade_with_body:
    case error::length_required:
    case error::bad_chunked_encoding: return condition::handshake_failed;
    case error::bad_status:
    case error::handshake_failed: return condition::handshake_refused;
    case error::tls_answer: return condition::tls;
    case error::proxy_refused:
    case error::proxy_auth_failed:
    case error::proxy_protocol_error: return condition::proxy;
    case error::backplane_error:
    case error::redis_auth_failed:
    case error::redis_protocol_error: return condition::redis;
    case error::deflate_failed:
    case error::operation_in_progress: return condition{};
    }
    return condition{};
}

const char* message_of(error e) noexcept {
    switch (e) {
    case error::reserved_opcode: return "reserved opcode";
    case error::reserved_bits: return "reserved bits set without a negotiated extension";
    case error::fragmented_control: return "fragmented control frame";
    case error::control_too_big: return "control frame payload over 125 bytes";
    case error::bad_length: return "invalid frame length encoding";
    case error::mask_required: return "client frame is not masked";
    case error::unexpected_mask: return "server frame is masked";
    case error::frame_too_big: return "frame exceeds the size limit";
    case error::bad_continuation: return "continuation frame without a message in progress";
    case error::expected_continuation: return "new message while a fragmented message is in progress";
    case error::message_too_big: return "message exceeds the size limit";
    case error::invalid_utf8: return "invalid UTF-8";
    case error::bad_close_code: return "invalid close code";
    case error::bad_close_payload: return "invalid close frame payload";
    case error::http_parse_error: return "malformed HTTP message";
    case error::header_too_large: return "HTTP header exceeds the size limit";
    case error::too_many_headers: return "too many HTTP header fields";
    case error::bad_method: return "upgrade request method is not GET";
    case error::bad_http_version: return "HTTP version is not 1.1";
    case error::missing_host: return "missing Host header";
    case error::bad_upgrade: return "Upgrade header does not name websocket";
    case error::bad_connection: return "Connection header does not name upgrade";
    case error::bad_key: return "invalid Sec-WebSocket-Key";
    case error::bad_version: return "unsupported Sec-WebSocket-Version";
    case error::bad_status: return "server did not answer 101 Switching Protocols";
    case error::bad_accept: return "Sec-WebSocket-Accept does not match the key";
    case error::bad_subprotocol: return "server chose a subprotocol that was not offered";
    case error::bad_extension: return "invalid Sec-WebSocket-Extensions";
    case error::inflate_failed: return "invalid compressed data";
    case error::deflate_failed: return "compression failed";
    case error::bad_compressed_frame: return "RSV1 set on a continuation or control frame";
    case error::closed: return "connection closed";
    case error::timeout: return "timeout";
    case error::handshake_failed: return "WebSocket handshake failed";
    case error::operation_in_progress: return "another operation of this kind is in progress";
    case error::http_version_not_supported: return "HTTP version not supported (only HTTP/1.1 upgrades)";
    case error::bad_content_length: return "malformed or conflicting Content-Length";
    case error::conflicting_length: return "both Content-Length and Transfer-Encoding";
    case error::upgrade_with_body: return "upgrade request with a body";
    case error::body_too_large: return "HTTP body exceeds the size limit";
    case error::length_required: return "HTTP body without Content-Length";
    case error::handshake_closed: return "the server closed the connection during the HTTP upgrade";
    case error::bad_chunked_encoding: return "malformed chunked body";
    case error::tls_answer: return "the server answered the HTTP upgrade with TLS";
    case error::backplane_error: return "the backplane's server answered with an error";
    case error::redis_auth_failed: return "Redis refused the authentication";
    case error::redis_protocol_error: return "malformed, unexpected or oversized data from Redis";
    case error::proxy_refused: return "the proxy refused the tunnel";
    case error::proxy_auth_failed: return "the proxy needs credentials or refused them";
    case error::proxy_protocol_error: return "malformed, unexpected or oversized data from the proxy";
    case error::send_timeout: return "send timeout: the peer took none of the queued output within options::send_timeout";
    }
    return nullptr;
}

} // namespace

const std::error_category& error_category() noexcept {
    static const detail::enum_category<error> instance("corows", message_of, "unknown corows error", condition_of);
    return instance;
}

std::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

std::string_view rfc_section(std::error_code ec) noexcept {
    if (ec.category() != error_category()) return {};
    switch (static_cast<error>(ec.value())) {
    case error::mask_required:
    case error::unexpected_mask: return "RFC 6455 §5.1";
    case error::reserved_opcode:
    case error::reserved_bits:
    case error::bad_length: return "RFC 6455 §5.2";
    case error::fragmented_control:
    case error::bad_continuation:
    case error::expected_continuation: return "RFC 6455 §5.4";
    case error::control_too_big: return "RFC 6455 §5.5";
    case error::bad_close_payload: return "RFC 6455 §5.5.1";
    case error::bad_close_code: return "RFC 6455 §7.4";
    case error::invalid_utf8: return "RFC 6455 §8.1";
    case error::bad_method:
    case error::bad_http_version:
    case error::missing_host:
    case error::bad_upgrade:
    case error::bad_connection:
    case error::bad_key:
    case error::bad_version: return "RFC 6455 §4.2.1";
    case error::bad_status:
    case error::bad_accept:
    case error::bad_subprotocol: return "RFC 6455 §4.1";
    case error::bad_extension: return "RFC 7692 §5";
    case error::bad_compressed_frame: return "RFC 7692 §6";
    case error::inflate_failed: return "RFC 7692 §7.2.2";
    case error::http_parse_error: return "RFC 9112 §2";
    case error::bad_content_length:
    case error::conflicting_length: return "RFC 9112 §6.3";
    case error::bad_chunked_encoding: return "RFC 9112 §7.1";
    default: return {};
    }
}

close_code close_code_for(std::error_code ec) noexcept {
    if (ec.category() != error_category()) return close_code::internal_error;
    const auto e = static_cast<error>(ec.value());
    switch (e) {
    case error::invalid_utf8: return close_code::invalid_payload;
    case error::message_too_big:
    case error::frame_too_big: return close_code::message_too_big;
    case error::timeout: return close_code::going_away;
    case error::send_timeout: return close_code::policy_violation;
    default: break;
    }
    // Every other violation of RFC 6455 or RFC 7692 by the peer is 1002.
    return condition_of(e) == condition::protocol_error ? close_code::protocol_error : close_code::internal_error;
}

} // namespace corows
