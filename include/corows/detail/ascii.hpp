// SPDX-License-Identifier: BSL-1.0
// ASCII classes and comparisons of the protocol's text grammars, one copy for every parser
// (HTTP heads, Sec-WebSocket-Extensions, permessage-deflate parameters, URLs), so that they
// all agree on what a token is and on which names match. No locale: protocol text is ASCII.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace corows::detail {

/// `c` with A-Z lowered; every other byte as it is.
constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// True if `a` and `b` are equal but for the case of ASCII letters.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

/// For each byte, whether it is an RFC 9110 §5.6.2 tchar: one lookup per byte of a token.
inline constexpr std::array<bool, 256> tchar_table = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
    return t;
}();

/// True if `c` is an RFC 9110 §5.6.2 tchar.
constexpr bool is_tchar(char c) noexcept { return tchar_table[static_cast<unsigned char>(c)]; }

/// True if `s` is a non-empty RFC 9110 §5.6.2 token.
constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

/// True for SP and HTAB, the bytes of RFC 9110 §5.6.3 optional whitespace (OWS).
constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

} // namespace corows::detail
