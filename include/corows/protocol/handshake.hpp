// SPDX-License-Identifier: BSL-1.0
// The WebSocket opening handshake of RFC 6455 §4, both roles, without I/O: validate what the
// peer sent, build what to send back.
#pragma once

#include <corows/error.hpp>
#include <corows/protocol/extension.hpp>
#include <corows/protocol/http.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows {

/// The GUID RFC 6455 §1.3 appends to the key before hashing.
inline constexpr std::string_view websocket_guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Sec-WebSocket-Accept for `key`: base64(sha1(key + websocket_guid)).
std::string accept_key(std::string_view key);

// ------------------------------------------------------------------------------------------
// Server side

/// A request that passed validate_upgrade_request(), with what an application decides on.
struct upgrade_request {
    http_request request;                  ///< the whole request: path(), query(), every field
    std::string host;                      ///< the Host value, port included if sent
    std::optional<std::string> origin;     ///< the Origin value; browsers always send one
    std::string key;                       ///< Sec-WebSocket-Key, already checked
    std::vector<std::string> subprotocols; ///< offered, in the client's order of preference
    std::vector<extension> extensions;     ///< offered, in order, for the deflate negotiation
};

/// True if `req` asks for a WebSocket upgrade (its Upgrade field lists "websocket"): a router
/// hands such requests to validate_upgrade_request() rather than serving them as HTTP.
bool is_upgrade(const http_request& req) noexcept;

/// Checks `req` against RFC 6455 §4.2.1 and fills `out` on success. In order: bad_method (not
/// GET), bad_http_version (before 1.1), http_version_not_supported (after 1.1),
/// bad_content_length or conflicting_length (see body_framing()), upgrade_with_body
/// (Transfer-Encoding, or Content-Length other than 0), missing_host (none or several), bad_upgrade,
/// bad_connection, bad_version (not exactly one "13"), bad_key (not exactly one base64 of 16
/// bytes), http_parse_error (a subprotocol that is not a token), bad_extension (malformed).
std::error_code validate_upgrade_request(const http_request& req, upgrade_request& out);

/// The HTTP status to refuse a handshake with for `ec`: 405 for bad_method, 426 for bad_version,
/// 431 for header_too_large and too_many_headers, 408 for timeout, 413 for body_too_large, 411
/// for length_required, 505 for http_version_not_supported, 400 for other corows errors, 500
/// for errors of other categories.
unsigned http_status_for(std::error_code ec) noexcept;

/// The subprotocol a server picks: the first of `ours` (in our order of preference) that the
/// client offered (upgrade_request::subprotocols); empty if none is shared.
std::string choose_subprotocol(std::span<const std::string> ours, std::span<const std::string> offered);

/// True if `head`, bytes received where an HTTP response head was expected, starts like a TLS
/// record (an alert or a handshake, TLS 1.0 to 1.3): a TLS server answering a plain request.
bool looks_like_tls_record(std::span<const std::uint8_t> head) noexcept;

/// The fixed answer of a server that admits no more connections, written before the request is
/// read: 429 Too Many Requests for `status` 429, else 503 Service Unavailable; both with
/// Retry-After: 1, an empty body and Connection: close.
std::string_view busy_response(unsigned status) noexcept;

/// What an application adds to the 101 answer.
struct accept_options {
    std::string_view subprotocol;            ///< chosen from upgrade_request::subprotocols; empty: none
    std::string_view extensions;             ///< the negotiated Sec-WebSocket-Extensions; empty: none
    std::span<const http_field> extra_fields; ///< e.g. Set-Cookie, Server
};

/// The 101 Switching Protocols response to `req` in wire form. Throws std::invalid_argument if
/// the subprotocol was not offered (a programming error: the client would fail the connection)
/// or if an extra field is malformed.
std::string build_accept_response(const upgrade_request& req, const accept_options& options = {});

/// A refusal in wire form: `status` with its reason phrase, `extra_fields`, Content-Type
/// text/plain and Content-Length for `body`, and Connection: close. A 426 carries
/// Sec-WebSocket-Version: 13 (RFC 6455 §4.4) and a 405 carries Allow: GET (RFC 9110 §15.5.6).
/// Throws std::invalid_argument if an extra field is malformed.
std::string build_refusal_response(unsigned status, std::string_view body = {},
                                   std::span<const http_field> extra_fields = {});

/// The refusal for a failed handshake: http_status_for(ec), with ec.message() as the body.
std::string build_refusal_response(std::error_code ec);

// ------------------------------------------------------------------------------------------
// Client side

/// 24 base64 characters encoding 16 bytes from std::random_device (the OS entropy source on
/// the platforms we build for), one thread-local device per thread.
std::string generate_key();

/// What a client asks for; every view must stay valid until the response is validated.
struct upgrade_offer {
    std::string_view host;                    ///< Host value, with ":port" if not the default
    std::string_view target = "/";            ///< path and query
    std::string_view key;                     ///< from generate_key()
    std::span<const std::string> subprotocols; ///< offered, in order of preference
    std::string_view extensions;              ///< Sec-WebSocket-Extensions offer; empty: none
    std::string_view origin;                  ///< empty: no Origin field
    std::span<const http_field> extra_fields; ///< e.g. Authorization, Cookie, User-Agent
};

/// The GET upgrade request for `offer` in wire form. Throws std::invalid_argument if a
/// subprotocol is not a token, or the target, host or an extra field cannot be sent as is.
std::string build_upgrade_request(const upgrade_offer& offer);

/// A response that passed validate_upgrade_response().
struct upgrade_response {
    http_response response;            ///< the whole response
    std::string subprotocol;           ///< chosen by the server; empty: none
    std::vector<extension> extensions; ///< as the server answered; the deflate negotiation
                                       ///< checks they were offered
};

/// Checks `res` against RFC 6455 §4.1 for `offer` and fills `out` on success. In order:
/// bad_status (not 101), bad_http_version, bad_upgrade, bad_connection, bad_accept (missing,
/// repeated or wrong), bad_subprotocol (not offered, or several), bad_extension (malformed).
std::error_code validate_upgrade_response(const http_response& res, const upgrade_offer& offer,
                                          upgrade_response& out);

} // namespace corows
