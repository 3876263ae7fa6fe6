// SPDX-License-Identifier: BSL-1.0
// The masking kernels' building blocks, shared by apply_mask() (mask.cpp) and the batch frame
// decoder (frame_batch.cpp), which inlines its own short-payload kernel into its loop.
#pragma once

#include <corows/detail/byte_order.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#define COROWS_MASK_X86 1
#include <immintrin.h>
#endif

namespace corows::detail {

/// Key bytes as laid out in memory for a payload that starts `shift` (0-3) bytes into a period.
inline std::uint32_t rotate_key(std::uint32_t k, unsigned shift) noexcept {
    return rotate_bytes_toward_first(k, shift);
}

inline std::uint64_t widen(std::uint32_t k) noexcept { return k | (std::uint64_t{k} << 32); }

template <class T>
inline T load(const std::uint8_t* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
inline void store(std::uint8_t* p, T v) noexcept {
    std::memcpy(p, &v, sizeof v);
}

/// 0 to 15 bytes as 8-, 4-, 2- and 1-byte pieces that do not overlap: a reader that loads
/// these bytes right after gets them forwarded from one store, not stalled on two.
inline void mask_below16(std::uint8_t* p, std::size_t n, std::uint32_t k) noexcept {
    std::size_t i = 0;
    if ((n & 8) != 0) {
        store(p, load<std::uint64_t>(p) ^ widen(k));
        i = 8;
    }
    if ((n & 4) != 0) {
        store(p + i, load<std::uint32_t>(p + i) ^ k);
        i += 4;
    }
    // i is a multiple of 4 here, so the key starts afresh.
    std::uint8_t kb[4];
    std::memcpy(kb, &k, 4);
    if ((n & 2) != 0) {
        std::uint16_t k2;
        std::memcpy(&k2, kb, 2);
        store(p + i, static_cast<std::uint16_t>(load<std::uint16_t>(p + i) ^ k2));
        i += 2;
    }
    if ((n & 1) != 0) p[i] ^= kb[i & 3];
}

#ifdef COROWS_MASK_X86

__attribute__((target("sse2"))) inline __m128i load16(const std::uint8_t* p) noexcept {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
__attribute__((target("sse2"))) inline void store16(std::uint8_t* p, __m128i v) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

__attribute__((target("avx2"))) inline __m256i load32(const std::uint8_t* p) noexcept {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
__attribute__((target("avx2"))) inline void store32(std::uint8_t* p, __m256i v) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

#endif // COROWS_MASK_X86

} // namespace corows::detail
