// SPDX-License-Identifier: BSL-1.0
// Incremental UTF-8 validation (RFC 3629) for text messages and close reasons.
#pragma once

#include <cstdint>
#include <span>

namespace corows {

/// Validates UTF-8 fed in pieces of any size; fails at the first byte that cannot
/// begin or continue a valid sequence (overlongs, surrogates, > U+10FFFF).
class utf8_validator {
public:
    /// Feeds `bytes`; returns false as soon as they make the text invalid (sticky).
    bool write(std::span<const std::uint8_t> bytes) noexcept;
    /// True if everything written is valid and no sequence is left incomplete.
    bool finish() const noexcept;
    /// Forgets all state, ready for a new message.
    void reset() noexcept;

private:
    // The DFA state (encoded as a shift amount, 0 = between characters): four bytes, so a
    // connection can keep one per message at no cost and copy it freely.
    std::uint32_t state_ = 0;
};

/// True if `bytes` is a complete, valid UTF-8 text.
bool is_valid_utf8(std::span<const std::uint8_t> bytes) noexcept;

} // namespace corows
