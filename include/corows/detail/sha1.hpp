// SPDX-License-Identifier: BSL-1.0
// SHA-1 (RFC 3174), used only for Sec-WebSocket-Accept.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace corows::detail {

/// The 20-byte SHA-1 digest of `data`.
std::array<std::uint8_t, 20> sha1(std::span<const std::uint8_t> data) noexcept;

} // namespace corows::detail
