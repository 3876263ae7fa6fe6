// SPDX-License-Identifier: BSL-1.0
// ws:// and wss:// URLs (RFC 6455 §3) taken apart without I/O: what a client needs to resolve,
// connect, verify the server's certificate and write the upgrade request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace corows {

/// Why a WebSocket URL was rejected, in the `corows.url` error category.
enum class url_error {
    bad_scheme = 1, ///< not ws:// or wss:// (the scheme is case-insensitive)
    bad_host,       ///< empty, not a DNS name, IPv4 or bracketed IPv6 literal, or unclosed '['
    bad_port,       ///< not a decimal number in 1-65535
    userinfo,       ///< "user:password@" has no meaning in a WebSocket URL
    fragment,       ///< '#' is forbidden in a WebSocket URL (RFC 6455 §3)
    bad_target,     ///< a control byte (0x00-0x1f, 0x7f) in the path or query
    bad_socket_path, ///< ws+unix: no socket path, a host, or a path longer than a socket address holds
};

/// The category of url_error values; name() is "corows.url".
const std::error_category& url_error_category() noexcept;

/// Wraps `e` in an std::error_code of the url category.
std::error_code make_error_code(url_error e) noexcept;

/// A parsed WebSocket URL.
struct url {
    bool secure = false;   ///< wss: TLS, default port 443
    std::string host;      ///< lower-cased; an IPv6 literal without its brackets
    std::uint16_t port = 0; ///< the explicit port, else 80 (ws) or 443 (wss)
    std::string target;    ///< path and query for the request line; "/" when the URL has none

    /// The scheme, "ws" or "wss".
    std::string_view scheme() const noexcept { return secure ? "wss" : "ws"; }
    /// The port a URL of this scheme has when it names none.
    std::uint16_t default_port() const noexcept { return secure ? 443 : 80; }
    /// True if host is an IPv4 or IPv6 literal (no SNI is sent for those, RFC 6066 §3).
    bool host_is_ip() const noexcept;
    /// The Host field value: host (in brackets if IPv6), with ":port" only if not the default.
    std::string host_field() const;
    /// The URL in canonical form: scheme://host_field()target.
    std::string to_string() const;

    /// Field-by-field equality.
    friend bool operator==(const url&, const url&) = default;
};

/// Parses `text` as "ws[s]://host[:port][/path][?query]". Bytes in the path and query that may
/// not appear in a request line (space, '"', '<', '>', '\\', '^', '`', '{', '|', '}', and
/// non-ASCII) are percent-encoded; a '%' is kept as it is. On failure sets `ec` and returns {}.
url parse_url(std::string_view text, std::error_code& ec);

/// As parse_url(text, ec); throws std::system_error on failure.
url parse_url(std::string_view text);

/// A parsed ws+unix: URL: a WebSocket server on a Unix domain socket.
struct unix_url {
    std::string path;   ///< the socket file's path
    std::string target; ///< path and query for the request line; "/" when the URL has none

    /// Field-by-field equality.
    friend bool operator==(const unix_url&, const unix_url&) = default;
};

/// Parses `text` as "ws+unix://SOCKET[:TARGET]" or "ws+unix:SOCKET[:TARGET]" (the form of
/// Node's ws library): SOCKET is the socket file's path, up to the first ':', at most 107
/// bytes; TARGET, from '/' or '?', is encoded as parse_url() does. "wss+unix:" is not
/// supported (bad_scheme). On failure sets `ec` and returns {}.
unix_url parse_unix_url(std::string_view text, std::error_code& ec);

} // namespace corows

/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_code_enum<corows::url_error> : std::true_type {};
/// @endcond
