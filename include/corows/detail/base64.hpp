// SPDX-License-Identifier: BSL-1.0
// Base64 (RFC 4648 §4, with padding), used for Sec-WebSocket-Key and -Accept.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corows::detail {

/// The padded base64 text of `data`.
std::string base64_encode(std::span<const std::uint8_t> data);

/// The bytes `text` encodes, or nullopt if it is not canonical padded base64.
std::optional<std::vector<std::uint8_t>> base64_decode(std::string_view text);

} // namespace corows::detail
