// SPDX-License-Identifier: BSL-1.0
// RFC 6455 §5.3 masking: XOR with a 4-byte key, in place, at any offset into the payload.
#pragma once

#include <corows/protocol/frame.hpp>

#include <cstdint>
#include <span>

namespace corows {

/// XORs `data` in place with `key`, as if `data` started `offset` bytes into the payload.
/// Masking and unmasking are the same operation; applying it piecewise gives the same bytes.
void apply_mask(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset = 0) noexcept;

} // namespace corows
