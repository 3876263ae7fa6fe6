// SPDX-License-Identifier: BSL-1.0
// Client proxies without I/O: proxy URLs, the proxy curl would take from the environment
// (http_proxy, https_proxy, all_proxy, no_proxy), the HTTP CONNECT exchange (RFC 9110 §9.3.6)
// and the SOCKS5 one (RFC 1928, with RFC 1929 user name and password), as bytes to send and
// incremental readers of the proxy's answers.
#pragma once

#include <corows/protocol/http.hpp>
#include <corows/protocol/url.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows {

/// Why a proxy URL was rejected, in the `corows.proxy_url` error category.
enum class proxy_url_error {
    bad_scheme = 1, ///< not http://, socks5:// or socks5h:// (none at all means http://)
    bad_host,       ///< empty, not a DNS name, IPv4 or bracketed IPv6 literal
    bad_port,       ///< not a decimal number in 1-65535
    bad_userinfo,   ///< bad percent-encoding, ':' in an HTTP user name, SOCKS5 fields over 255 bytes
    path,           ///< a path other than "/", a query or a fragment
};

/// The category of proxy_url_error values; name() is "corows.proxy_url".
const std::error_category& proxy_url_error_category() noexcept;

/// Wraps `e` in an std::error_code of the proxy_url category.
std::error_code make_error_code(proxy_url_error e) noexcept;

/// How connect() talks to a proxy.
enum class proxy_kind : std::uint8_t {
    http,    ///< http://: an HTTP CONNECT tunnel
    socks5,  ///< socks5://: the client resolves the target and sends its address
    socks5h, ///< socks5h://: the proxy resolves the target's name
};

/// A parsed proxy URL.
struct proxy_url {
    proxy_kind kind = proxy_kind::http; ///< from the scheme
    std::string host;             ///< lower-cased; an IPv6 literal without its brackets
    std::uint16_t port = 0;       ///< the explicit port, else 1080 (curl's default for every kind)
    bool has_credentials = false; ///< the URL had "user[:password]@"
    std::string user;             ///< percent-decoded
    std::string password;         ///< percent-decoded; empty if the URL had none

    /// "host:port", with an IPv6 literal in brackets.
    std::string authority() const;
    /// Field-by-field equality.
    friend bool operator==(const proxy_url&, const proxy_url&) = default;
};

/// Parses `text` as "[scheme://][user[:password]@]host[:port][/]", the scheme being http,
/// socks5 or socks5h (case-insensitive; none means http, as curl). On failure sets `ec` and
/// returns {}.
proxy_url parse_proxy_url(std::string_view text, std::error_code& ec);

/// `text` with its user information replaced by "***", fit for an error message or a log.
std::string redact_proxy_url(std::string_view text);

/// "host:port", with `host` (as in url::host) in brackets if it is an IPv6 literal.
std::string authority_text(std::string_view host, std::uint16_t port);

// --- the environment ---

/// Reads an environment variable by name; nullopt if it is not set.
using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

/// The proxy the environment names for a URL, and the variable it came from.
struct proxy_choice {
    std::string url;      ///< the proxy URL text; empty: connect directly
    std::string variable; ///< "https_proxy", "ALL_PROXY"...; or "no_proxy"/"NO_PROXY" if it said no
};

/// The proxy curl would use for `target`: unless no_proxy (else NO_PROXY) matches its host,
/// https_proxy then HTTPS_PROXY for wss://, http_proxy (lower case only: CGI puts a request's
/// Proxy: field in HTTP_PROXY) for ws://, then all_proxy then ALL_PROXY. Empty values count
/// as unset.
proxy_choice proxy_from_environment(const url& target, const env_lookup& env);

/// True if the no_proxy value `list` exempts `host` (as in url::host): the whole value "*";
/// or a comma-separated entry, trimmed, compared case-insensitively, that is `host` or one of
/// its parent domains (a leading '.' is optional), or for an IP literal the same text
/// (brackets optional; no CIDR ranges, no IPv6 normalisation).
bool no_proxy_matches(std::string_view list, std::string_view host);

// --- reading the proxy's answers ---

/// Where a proxy exchange stands.
enum class proxy_status : std::uint8_t {
    need_more, ///< more of the proxy's answer is needed
    complete,  ///< the tunnel is open: what follows belongs to the target
    failed,    ///< the proxy refused or misbehaved; error() and detail() say how
};

/// Result of one feed() call.
struct proxy_feed_result {
    std::size_t consumed = 0; ///< bytes of the input that were read
    proxy_status status = proxy_status::need_more; ///< done, need more input, or failed
    std::error_code error;    ///< set when status is failed
};

// --- HTTP CONNECT ---

/// The CONNECT request for `host` (as in url::host) and `port`: request line, Host, and
/// Proxy-Authorization: Basic when `proxy` has credentials.
std::string build_connect_request(std::string_view host, std::uint16_t port, const proxy_url& proxy);

/// Reads the proxy's answer to CONNECT: complete on 2xx, failed with error::proxy_auth_failed
/// on 407 (or 401, which some proxies send for wrong credentials), error::proxy_refused on any other status, error::proxy_protocol_error on a
/// malformed or oversized head or on bytes after it (neither a TLS nor a WebSocket server
/// speaks first, so they cannot be the target's).
class http_connect_reader {
public:
    /// A reader bounded by `limits`; `sent_credentials` says whether a 407 means "rejected".
    http_connect_reader(http_limits limits, bool sent_credentials) noexcept
        : parser_(limits), sent_credentials_(sent_credentials) {}
    /// Consumes the answer's bytes; once complete or failed, consumes nothing more.
    proxy_feed_result feed(std::span<const std::uint8_t> bytes);
    /// Where the exchange stands.
    proxy_status status() const noexcept { return status_; }
    /// Why it failed; empty unless failed.
    std::error_code error() const noexcept { return error_; }
    /// The proxy's answer, once its head is whole.
    const std::optional<http_response>& response() const noexcept { return response_; }
    /// A sentence for the user ("the proxy answered 407 Proxy Authentication Required: ...").
    const std::string& detail() const noexcept { return detail_; }

private:
    proxy_feed_result fail(std::size_t consumed, std::error_code ec, std::string why);
    http_response_parser parser_;
    bool sent_credentials_;
    proxy_status status_ = proxy_status::need_more;
    std::error_code error_;
    std::optional<http_response> response_;
    std::string detail_;
};

// --- SOCKS5 ---

/// A SOCKS5 reply code (RFC 1928 §6) other than success, in the `corows.socks5` category;
/// values past address_type_not_supported are unassigned but reported as they came.
enum class socks5_reply : std::uint8_t {
    general_failure = 1,
    not_allowed = 2,          ///< connection not allowed by ruleset
    network_unreachable = 3,
    host_unreachable = 4,
    connection_refused = 5,
    ttl_expired = 6,
    command_not_supported = 7,
    address_type_not_supported = 8,
};

/// The category of socks5_reply values; name() is "corows.socks5".
const std::error_category& socks5_category() noexcept;

/// Wraps `e` in an std::error_code of the socks5 category.
std::error_code make_error_code(socks5_reply e) noexcept;

/// The CONNECT request for a host name, which the proxy resolves (ATYP 3); throws
/// std::length_error for a name over 255 bytes.
std::vector<std::uint8_t> socks5_connect_by_name(std::string_view host, std::uint16_t port);

/// The CONNECT request for an address in network order: 4 bytes IPv4 (ATYP 1), 16 bytes IPv6
/// (ATYP 4); throws std::invalid_argument for any other size.
std::vector<std::uint8_t> socks5_connect_by_address(std::span<const std::uint8_t> address, std::uint16_t port);

/// The client side of a SOCKS5 handshake: method negotiation, RFC 1929 authentication when
/// the proxy URL has credentials, then CONNECT. The caller sends output(), reads exactly
/// need() bytes (never more: what follows the last reply is the target's) and feeds them,
/// until status() is complete or failed.
class socks5_handshake {
public:
    /// Starts with the greeting; `connect_request` is from socks5_connect_by_name/by_address.
    socks5_handshake(const proxy_url& proxy, std::vector<std::uint8_t> connect_request);
    /// The bytes to send now (empty while waiting for the proxy).
    std::span<const std::uint8_t> output() const noexcept { return out_; }
    /// Says output() was sent.
    void output_sent() noexcept { out_.clear(); }
    /// How many bytes the next step needs; zero once complete or failed.
    std::size_t need() const noexcept;
    /// Consumes reply bytes, at most need(); may set new output().
    proxy_feed_result feed(std::span<const std::uint8_t> bytes);
    /// Where the exchange stands.
    proxy_status status() const noexcept { return status_; }
    /// Why it failed: a socks5_reply, error::proxy_auth_failed or error::proxy_protocol_error.
    std::error_code error() const noexcept { return error_; }
    /// A sentence for the user ("the proxy rejected the user name and password").
    const std::string& detail() const noexcept { return detail_; }

private:
    enum class state : std::uint8_t { method, auth, reply_head, reply_address, done };
    void step();
    void fail(std::error_code ec, std::string why);
    std::vector<std::uint8_t> out_;
    std::vector<std::uint8_t> in_;
    std::vector<std::uint8_t> auth_;
    std::vector<std::uint8_t> connect_;
    std::size_t want_ = 2; ///< bytes in_ must hold for the current step
    state state_ = state::method;
    proxy_status status_ = proxy_status::need_more;
    std::error_code error_;
    std::string detail_;
};

} // namespace corows

/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_code_enum<corows::proxy_url_error> : std::true_type {};
/// @endcond
/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_code_enum<corows::socks5_reply> : std::true_type {};
/// @endcond
