// SPDX-License-Identifier: BSL-1.0
// The RFC 3986 host grammar shared by the URL parsers (WebSocket URLs, proxy URLs) and the
// no_proxy matcher, so that they agree on what an address literal and a host name are.
#pragma once

#include <string_view>

namespace corows::detail {

/// True for '0'-'9'.
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// True if `s` is an RFC 3986 IPv4address: four decimal octets, no leading zeros.
bool is_ipv4(std::string_view s) noexcept;

/// True if `s` is an RFC 3986 IPv6address (without brackets).
bool is_ipv6(std::string_view s) noexcept;

/// True if `s` is a DNS name getaddrinfo will look up: 1-253 letters, digits, '-', '.', '_'.
bool is_reg_name(std::string_view s) noexcept;

} // namespace corows::detail
