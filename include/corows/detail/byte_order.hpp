// SPDX-License-Identifier: BSL-1.0
// The one place that knows the machine's byte order. The wire formats corows reads and writes
// (WebSocket frame lengths, close codes, SHA-1 words, TLS record fields) are big-endian,
// DEFLATE's bit stream is little-endian, and the masking kernels XOR the key as a native word:
// code elsewhere goes through these helpers, so that a big-endian target (s390x) takes the
// same paths as every other, with the one difference stated here.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace corows::detail {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "corows supports little- and big-endian machines, not mixed-endian ones");

/// The big-endian unsigned integer in the `N` (1 to 8) bytes at `p`.
template <std::size_t N>
constexpr std::uint64_t load_big_endian(const std::uint8_t* p) noexcept {
    static_assert(N >= 1 && N <= 8);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < N; ++i) v = (v << 8) | p[i];
    return v;
}

/// Writes the low `N` (1 to 8) bytes of `v` at `p`, most significant first.
template <std::size_t N>
constexpr void store_big_endian(std::uint8_t* p, std::uint64_t v) noexcept {
    static_assert(N >= 1 && N <= 8);
    for (std::size_t i = 0; i < N; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * (N - 1 - i)));
}

/// `v` with its eight bytes in reverse order (std::byteswap is C++23).
constexpr std::uint64_t byteswap64(std::uint64_t v) noexcept {
    std::uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r = (r << 8) | ((v >> (8 * i)) & 0xffu);
    return r;
}

/// The little-endian integer in the 8 bytes at `p`: one load, and a swap on big-endian machines.
inline std::uint64_t load_little_endian64(const std::uint8_t* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = byteswap64(v);
    return v;
}

/// The word whose bytes in memory are those of `w` moved `n` (0 to 3) places toward the first,
/// the first `n` wrapping round to the end: byte i of the result is byte (i + n) % 4 of `w`.
inline std::uint32_t rotate_bytes_toward_first(std::uint32_t w, unsigned n) noexcept {
    if constexpr (std::endian::native == std::endian::little)
        return std::rotr(w, static_cast<int>(8 * n));
    else
        return std::rotl(w, static_cast<int>(8 * n));
}

} // namespace corows::detail
