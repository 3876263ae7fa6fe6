// SPDX-License-Identifier: BSL-1.0
// The individual masking kernels behind apply_mask(), exposed so tests can check each one
// on any CPU that has it, not only the one the run-time dispatch picks.
#pragma once

#include <corows/protocol/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace corows::detail {

/// Same contract as apply_mask(); portable C++, 8 bytes at a time. Works on any target.
void apply_mask_portable(std::span<std::uint8_t> data, mask_key key,
                         std::uint64_t offset) noexcept;

#if defined(__x86_64__) || defined(__i386__)
/// True if this CPU can run apply_mask_sse2().
bool cpu_has_sse2() noexcept;
/// True if this CPU can run apply_mask_avx2().
bool cpu_has_avx2() noexcept;
/// Same contract as apply_mask(), 16 bytes at a time; requires cpu_has_sse2().
void apply_mask_sse2(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset) noexcept;
/// Same contract as apply_mask(), 32 bytes at a time; requires cpu_has_avx2().
void apply_mask_avx2(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset) noexcept;
#endif

} // namespace corows::detail
