// SPDX-License-Identifier: BSL-1.0
#include "host_syntax.hpp"

#include <cstddef>
#include <string_view>

namespace corows::detail {
namespace {

constexpr bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_hex(char c) noexcept {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

} // namespace

// RFC 3986 IPv4address: four decimal octets, no leading zeros (they would read as octal to
// some resolvers, so the same text could name two hosts).
bool is_ipv4(std::string_view s) noexcept {
    int parts = 0;
    std::size_t i = 0;
    while (true) {
        std::size_t start = i;
        unsigned value = 0;
        while (i < s.size() && is_digit(s[i]) && i - start < 3) value = value * 10 + unsigned(s[i++] - '0');
        std::size_t len = i - start;
        if (len == 0 || value > 255 || (len > 1 && s[start] == '0')) return false;
        ++parts;
        if (i == s.size()) return parts == 4;
        if (s[i] != '.' || parts == 4) return false;
        ++i;
    }
}

// RFC 3986 IPv6address: up to eight groups of 1-4 hex digits, at most one "::", optionally
// ending in an IPv4 address that counts as two groups.
bool is_ipv6(std::string_view s) noexcept {
    if (s.empty()) return false;
    int groups = 0;
    bool compressed = false;
    std::size_t i = 0;
    if (s.starts_with("::")) {
        compressed = true;
        i = 2;
        if (i == s.size()) return true;
    } else if (s[0] == ':') {
        return false;
    }
    while (i < s.size()) {
        std::size_t start = i;
        while (i < s.size() && is_hex(s[i]) && i - start < 5) ++i;
        if (i < s.size() && s[i] == '.') {
            // The embedded IPv4 address must be the last piece.
            if (!is_ipv4(s.substr(start))) return false;
            groups += 2;
            i = s.size();
            break;
        }
        std::size_t len = i - start;
        if (len == 0 || len > 4) return false;
        ++groups;
        if (i == s.size()) break;
        if (s[i] != ':') return false;
        ++i;
        if (i < s.size() && s[i] == ':') {
            if (compressed) return false;
            compressed = true;
            ++i;
        } else if (i == s.size()) {
            return false; // a single trailing ':'
        }
    }
    return compressed ? groups <= 7 : groups == 8;
}

// A DNS name (or anything getaddrinfo will look up): letters, digits, '-', '.', '_'.
// Internationalised names must be given in their ASCII (punycode) form.
bool is_reg_name(std::string_view s) noexcept {
    if (s.empty() || s.size() > 253) return false;
    for (char c : s)
        if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.' && c != '_') return false;
    return true;
}

} // namespace corows::detail
