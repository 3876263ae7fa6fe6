// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/detail/ascii.hpp>
#include <corows/detail/base64.hpp>
#include <corows/protocol/proxy.hpp>
#include <corows/protocol/query.hpp>

#include "../detail/enum_category.hpp"
#include "host_syntax.hpp"

#include <cstddef>
#include <string>
#include <system_error>
#include <utility>

namespace corows {
namespace {

const char* message_of(proxy_url_error e) noexcept {
    switch (e) {
    case proxy_url_error::bad_scheme: return "proxy URL scheme is not http://, socks5:// or socks5h://";
    case proxy_url_error::bad_host: return "proxy URL has no valid host";
    case proxy_url_error::bad_port: return "proxy URL port is not a number in 1-65535";
    case proxy_url_error::bad_userinfo:
        return "proxy URL user name or password is malformed (percent-encoding, ':' in an HTTP user "
               "name, SOCKS5 fields over 255 bytes)";
    case proxy_url_error::path: return "proxy URL may not have a path, query or fragment";
    }
    return nullptr;
}

// Every code of this category is one kind of failure.
condition condition_of(proxy_url_error) noexcept { return condition::bad_url; }

proxy_url fail(std::error_code& ec, proxy_url_error e) {
    ec = make_error_code(e);
    return {};
}

// A '%' not followed by two hex digits is an error rather than kept as it is, since a
// credential that silently changed would fail far from its cause.
bool decode_credential(std::string_view in, std::string& out) {
    auto decoded = percent_decode_strict(in);
    if (!decoded) return false;
    out = std::move(*decoded);
    return true;
}

std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && detail::is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && detail::is_ows(s.back())) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) out += detail::ascii_lower(c);
    return out;
}

// Where the authority of a proxy URL starts and ends in `text`.
struct authority_span {
    std::size_t begin;
    std::size_t end;
};

authority_span find_authority(std::string_view text) noexcept {
    const std::size_t sep = text.find("://");
    const std::size_t begin = sep == std::string_view::npos ? 0 : sep + 3;
    std::size_t end = text.find_first_of("/?#", begin);
    if (end == std::string_view::npos) end = text.size();
    return {begin, end};
}

} // namespace

const std::error_category& proxy_url_error_category() noexcept {
    static const detail::enum_category<proxy_url_error> category("corows.proxy_url", message_of,
                                                                 "unknown proxy URL error", condition_of);
    return category;
}

std::error_code make_error_code(proxy_url_error e) noexcept {
    return {static_cast<int>(e), proxy_url_error_category()};
}

std::string authority_text(std::string_view host, std::uint16_t port) {
    std::string out;
    const bool v6 = host.find(':') != std::string_view::npos;
    if (v6) out += '[';
    out += host;
    if (v6) out += ']';
    out += ':';
    out += std::to_string(port);
    return out;
}

std::string proxy_url::authority() const { return authority_text(host, port); }

proxy_url parse_proxy_url(std::string_view text, std::error_code& ec) {
    ec.clear();
    proxy_url p;
    const std::size_t sep = text.find("://");
    if (sep != std::string_view::npos) {
        const std::string_view scheme = text.substr(0, sep);
        if (detail::iequals(scheme, "http")) p.kind = proxy_kind::http;
        else if (detail::iequals(scheme, "socks5")) p.kind = proxy_kind::socks5;
        else if (detail::iequals(scheme, "socks5h")) p.kind = proxy_kind::socks5h;
        else return fail(ec, proxy_url_error::bad_scheme);
    }
    const auto [begin, end] = find_authority(text);
    const std::string_view tail = text.substr(end);
    // A bare "/" is common in proxy variables ("http://proxy:3128/"); anything more would be
    // ignored by the tunnel, so it is more likely a mistake than a meaning.
    if (!tail.empty() && tail != "/") return fail(ec, proxy_url_error::path);
    std::string_view authority = text.substr(begin, end - begin);

    // The last '@': a password may hold an unencoded '@', a host never does.
    if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view info = authority.substr(0, at);
        authority.remove_prefix(at + 1);
        const std::size_t colon = info.find(':');
        p.has_credentials = true;
        if (!decode_credential(info.substr(0, colon), p.user)) return fail(ec, proxy_url_error::bad_userinfo);
        if (colon != std::string_view::npos && !decode_credential(info.substr(colon + 1), p.password))
            return fail(ec, proxy_url_error::bad_userinfo);
        // RFC 7617 §2: a Basic user-id cannot hold ':'. RFC 1929: each field is 1-255 bytes
        // (an empty password is let through: several servers accept one).
        if (p.kind == proxy_kind::http && p.user.find(':') != std::string::npos)
            return fail(ec, proxy_url_error::bad_userinfo);
        if (p.kind != proxy_kind::http && (p.user.empty() || p.user.size() > 255 || p.password.size() > 255))
            return fail(ec, proxy_url_error::bad_userinfo);
    }

    std::string_view host, port;
    if (!authority.empty() && authority[0] == '[') {
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) return fail(ec, proxy_url_error::bad_host);
        host = authority.substr(1, close - 1);
        const std::string_view after = authority.substr(close + 1);
        if ((!after.empty() && after[0] != ':') || !detail::is_ipv6(host)) return fail(ec, proxy_url_error::bad_host);
        if (!after.empty()) port = after.substr(1);
    } else {
        const std::size_t colon = authority.find(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) port = authority.substr(colon + 1);
        if (!detail::is_reg_name(host)) return fail(ec, proxy_url_error::bad_host);
    }
    p.host = lower(host);
    // curl's default for every kind of proxy; 3128 and 8080 are common for HTTP ones but a
    // URL that names none behaves as it does with curl.
    p.port = 1080;
    if (!port.empty()) {
        unsigned long value = 0;
        for (char c : port) {
            if (!detail::is_digit(c)) return fail(ec, proxy_url_error::bad_port);
            value = value * 10 + static_cast<unsigned long>(c - '0');
            if (value > 65535) return fail(ec, proxy_url_error::bad_port);
        }
        if (value == 0) return fail(ec, proxy_url_error::bad_port);
        p.port = static_cast<std::uint16_t>(value);
    }
    return p;
}

std::string redact_proxy_url(std::string_view text) {
    const auto [begin, end] = find_authority(text);
    const std::size_t at = text.substr(begin, end - begin).rfind('@');
    if (at == std::string_view::npos) return std::string(text);
    std::string out(text.substr(0, begin));
    out += "***";
    out += text.substr(begin + at);
    return out;
}

bool no_proxy_matches(std::string_view list, std::string_view host) {
    list = trim_ows(list);
    if (list == "*") return true;
    std::string name = lower(host);
    while (!name.empty() && name.back() == '.') name.pop_back();
    const bool ip = detail::is_ipv4(name) || detail::is_ipv6(name);
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        std::string entry = lower(trim_ows(list.substr(0, comma)));
        list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
        if (entry.size() >= 2 && entry.front() == '[' && entry.back() == ']') entry = entry.substr(1, entry.size() - 2);
        if (ip) {
            if (entry == name) return true;
            continue;
        }
        while (!entry.empty() && entry.back() == '.') entry.pop_back();
        if (!entry.empty() && entry.front() == '.') entry.erase(0, 1);
        if (entry.empty()) continue;
        if (name == entry) return true;
        if (name.size() > entry.size() && name.ends_with(entry) && name[name.size() - entry.size() - 1] == '.')
            return true;
    }
    return false;
}

proxy_choice proxy_from_environment(const url& target, const env_lookup& env) {
    auto get = [&](const char* name) -> std::optional<std::string> {
        auto v = env(name);
        if (v && v->empty()) v.reset();
        return v;
    };
    for (const char* name : {"no_proxy", "NO_PROXY"}) {
        if (auto list = get(name)) {
            if (no_proxy_matches(*list, target.host)) return {std::string(), name};
            break;
        }
    }
    const char* https_names[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    const char* http_names[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
    const std::span<const char* const> names = target.secure ? std::span<const char* const>(https_names)
                                                             : std::span<const char* const>(http_names);
    for (const char* name : names)
        if (auto v = get(name)) return {std::move(*v), name};
    return {};
}

std::string build_connect_request(std::string_view host, std::uint16_t port, const proxy_url& proxy) {
    const std::string target = authority_text(host, port);
    std::string out = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n";
    if (proxy.has_credentials) {
        const std::string pair = proxy.user + ":" + proxy.password;
        out += "Proxy-Authorization: Basic ";
        out += detail::base64_encode(
            std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(pair.data()), pair.size()));
        out += "\r\n";
    }
    out += "\r\n";
    return out;
}

proxy_feed_result http_connect_reader::fail(std::size_t consumed, std::error_code ec, std::string why) {
    status_ = proxy_status::failed;
    error_ = ec;
    detail_ = std::move(why);
    return {consumed, status_, error_};
}

proxy_feed_result http_connect_reader::feed(std::span<const std::uint8_t> bytes) {
    if (status_ != proxy_status::need_more) return {0, status_, error_};
    const http_feed_result r = parser_.feed(bytes);
    if (r.status == http_parse_status::failed) {
        return fail(r.consumed, error::proxy_protocol_error,
                    "its answer to CONNECT is not a valid HTTP response head: " + r.error.message());
    }
    if (r.status == http_parse_status::need_more) return {r.consumed, status_, {}};
    response_ = parser_.release();
    const http_response& res = *response_;
    const std::string status_line = std::to_string(res.status) + (res.reason.empty() ? "" : " " + res.reason);
    // 407 is the proxy's own refusal (RFC 9110 §15.5.8); some proxies (tinyproxy 1.11) answer
    // wrong credentials with 401 instead.
    if (res.status == 407 || res.status == 401) {
        return fail(r.consumed, error::proxy_auth_failed,
                    "the proxy answered " + status_line +
                        (sent_credentials_ ? ": it rejected the credentials"
                                           : ": credentials needed (user:password@ in the proxy URL)"));
    }
    if (res.status < 200 || res.status > 299)
        return fail(r.consumed, error::proxy_refused, "the proxy answered " + status_line);
    if (r.consumed < bytes.size()) {
        return fail(r.consumed, error::proxy_protocol_error,
                    "the proxy sent " + std::to_string(bytes.size() - r.consumed) +
                        " bytes after its " + std::to_string(res.status) +
                        " answer, before the client spoke: they cannot be the server's");
    }
    status_ = proxy_status::complete;
    return {r.consumed, status_, {}};
}

} // namespace corows
