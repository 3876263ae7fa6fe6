// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/detail/ascii.hpp>
#include <corows/protocol/url.hpp>

#include "../detail/enum_category.hpp"
#include "host_syntax.hpp"

#include <cstddef>
#include <string>
#include <system_error>

namespace corows {
namespace {

using detail::is_digit;
using detail::is_ipv4;
using detail::is_ipv6;
using detail::is_reg_name;

const char* message_of(url_error e) noexcept {
    switch (e) {
    case url_error::bad_scheme: return "WebSocket URL scheme is not ws:// or wss://";
    case url_error::bad_host: return "WebSocket URL has no valid host";
    case url_error::bad_port: return "WebSocket URL port is not a number in 1-65535";
    case url_error::userinfo: return "WebSocket URL may not contain user information";
    case url_error::fragment: return "WebSocket URL may not contain a fragment";
    case url_error::bad_target: return "WebSocket URL path or query contains a control character";
    case url_error::bad_socket_path:
        return "ws+unix: URL has no socket path, has a host, or its path exceeds 107 bytes";
    }
    return nullptr;
}

// Every code of this category is one kind of failure.
condition condition_of(url_error) noexcept { return condition::bad_url; }

// Bytes a request-target cannot carry as they are, but a browser would send percent-encoded.
bool needs_encoding(unsigned char c) noexcept {
    switch (c) {
    case ' ': case '"': case '<': case '>': case '\\': case '^': case '`': case '{': case '|': case '}':
        return true;
    default:
        return c >= 0x80;
    }
}

template <class Result = url>
Result fail(std::error_code& ec, url_error e) {
    ec = make_error_code(e);
    return {};
}

// Appends the request target `tail` (empty, or from '/' or '?') to `out`, percent-encoding
// what a request line cannot carry; false for a control byte.
bool append_target(std::string& out, std::string_view tail) {
    // push_back, not = "/": GCC 12 -Wrestrict misfires on assigning a literal here.
    if (tail.empty() || tail[0] == '?') out.push_back('/');
    static constexpr char hex[] = "0123456789ABCDEF";
    for (char ch : tail) {
        auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) return false;
        if (needs_encoding(c)) {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    return true;
}

// sockaddr_un's sun_path holds 108 bytes on Linux, the terminating NUL included.
constexpr std::size_t max_socket_path = 107;

} // namespace

const std::error_category& url_error_category() noexcept {
    static const detail::enum_category<url_error> category("corows.url", message_of, "unknown URL error", condition_of);
    return category;
}

std::error_code make_error_code(url_error e) noexcept {
    return {static_cast<int>(e), url_error_category()};
}

bool url::host_is_ip() const noexcept {
    return is_ipv4(host) || is_ipv6(host);
}

std::string url::host_field() const {
    std::string out;
    bool v6 = host.find(':') != std::string::npos;
    if (v6) out += '[';
    out += host;
    if (v6) out += ']';
    if (port != default_port()) {
        out += ':';
        out += std::to_string(port);
    }
    return out;
}

std::string url::to_string() const {
    std::string out(scheme());
    out += "://";
    out += host_field();
    out += target;
    return out;
}

url parse_url(std::string_view text, std::error_code& ec) {
    ec.clear();
    url u;
    std::size_t sep = text.find("://");
    if (sep == std::string_view::npos) return fail(ec, url_error::bad_scheme);
    std::string_view scheme = text.substr(0, sep);
    if (detail::iequals(scheme, "ws")) u.secure = false;
    else if (detail::iequals(scheme, "wss")) u.secure = true;
    else return fail(ec, url_error::bad_scheme);
    std::string_view rest = text.substr(sep + 3);
    if (rest.find('#') != std::string_view::npos) return fail(ec, url_error::fragment);

    std::size_t auth_end = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, auth_end);
    std::string_view tail = auth_end == std::string_view::npos ? std::string_view{} : rest.substr(auth_end);
    if (authority.find('@') != std::string_view::npos) return fail(ec, url_error::userinfo);

    std::string_view host, port;
    if (!authority.empty() && authority[0] == '[') {
        std::size_t close = authority.find(']');
        if (close == std::string_view::npos) return fail(ec, url_error::bad_host);
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after[0] != ':') return fail(ec, url_error::bad_host);
        if (!is_ipv6(host)) return fail(ec, url_error::bad_host);
        if (!after.empty()) port = after.substr(1);
    } else {
        std::size_t colon = authority.find(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) port = authority.substr(colon + 1);
        if (!is_reg_name(host)) return fail(ec, url_error::bad_host);
    }
    u.host.reserve(host.size());
    for (char c : host) u.host += detail::ascii_lower(c);

    u.port = u.default_port();
    if (!port.empty()) {
        // RFC 3986 lets the port be empty ("host:"), which means the default.
        unsigned long value = 0;
        for (char c : port) {
            if (!is_digit(c)) return fail(ec, url_error::bad_port);
            value = value * 10 + static_cast<unsigned long>(c - '0');
            if (value > 65535) return fail(ec, url_error::bad_port);
        }
        if (value == 0) return fail(ec, url_error::bad_port);
        u.port = static_cast<std::uint16_t>(value);
    }

    if (!append_target(u.target, tail)) return fail(ec, url_error::bad_target);
    return u;
}

url parse_url(std::string_view text) {
    std::error_code ec;
    url u = parse_url(text, ec);
    // The URL stays out of the message: its query may carry a token.
    if (ec) throw std::system_error(ec);
    return u;
}

unix_url parse_unix_url(std::string_view text, std::error_code& ec) {
    ec.clear();
    constexpr std::string_view scheme = "ws+unix:";
    if (text.size() < scheme.size() || !detail::iequals(text.substr(0, scheme.size()), scheme))
        return fail<unix_url>(ec, url_error::bad_scheme);
    std::string_view rest = text.substr(scheme.size());
    // "ws+unix://" has an empty authority before the path; anything else there is a host.
    if (rest.starts_with("//")) {
        rest.remove_prefix(2);
        if (!rest.starts_with('/')) return fail<unix_url>(ec, url_error::bad_socket_path);
    }
    if (rest.find('#') != std::string_view::npos) return fail<unix_url>(ec, url_error::fragment);
    const std::size_t colon = rest.find(':');
    std::string_view path = rest.substr(0, colon);
    std::string_view tail = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (path.empty() || path.size() > max_socket_path) return fail<unix_url>(ec, url_error::bad_socket_path);
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return fail<unix_url>(ec, url_error::bad_socket_path);
    if (!tail.empty() && tail[0] != '/' && tail[0] != '?') return fail<unix_url>(ec, url_error::bad_target);
    unix_url u;
    u.path = std::string(path);
    if (!append_target(u.target, tail)) return fail<unix_url>(ec, url_error::bad_target);
    return u;
}

} // namespace corows
