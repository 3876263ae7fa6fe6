// SPDX-License-Identifier: BSL-1.0
#include "mask_kernels.hpp"

#include <corows/detail/mask_impl.hpp>
#include <corows/protocol/mask.hpp>

#include <bit>
#include <cstring>

#ifdef COROWS_MASK_X86
#include <atomic>
#endif

// Every kernel works on a 32-bit key word already rotated for the payload offset. From 16
// bytes on, each finishes with an overlapping window over the last bytes instead of a byte
// loop: the window is loaded and XORed before any store, so the bytes it shares with the last
// full block get the same value twice. That keeps a 125-byte payload at four loads and four
// stores with AVX2.

namespace corows {
namespace {

using detail::load;
using detail::mask_below16;
using detail::rotate_key;
using detail::store;
using detail::widen;
#ifdef COROWS_MASK_X86
using detail::load16;
using detail::load32;
using detail::store16;
using detail::store32;
#endif

std::uint32_t key_word(mask_key key, std::uint64_t offset) noexcept {
    std::uint32_t k;
    std::memcpy(&k, key.data(), 4);
    return rotate_key(k, static_cast<unsigned>(offset & 3));
}

// GCC 12 vectorises the 8-byte loop below into code several times slower for the sizes that
// matter here (-march=x86-64-v3), so the portable kernel stays scalar on purpose.
#if defined(__clang__)
#define COROWS_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#define COROWS_NO_VECTORIZE
#elif defined(__GNUC__)
#define COROWS_SCALAR_LOOP
#define COROWS_NO_VECTORIZE __attribute__((optimize("no-tree-vectorize")))
#else
#define COROWS_SCALAR_LOOP
#define COROWS_NO_VECTORIZE
#endif

COROWS_NO_VECTORIZE
void mask_portable(std::uint8_t* p, std::size_t n, std::uint32_t k) noexcept {
    if (n < 16) {
        mask_below16(p, n, k);
        return;
    }
    const std::uint64_t k8 = widen(k);
    const std::uint64_t tail = load<std::uint64_t>(p + n - 8) ^ widen(rotate_key(k, n & 3));
    std::size_t i = 0;
    // Four independent words per round keep a superscalar core busy.
    COROWS_SCALAR_LOOP
    for (; i + 32 <= n; i += 32) {
        const std::uint64_t a = load<std::uint64_t>(p + i) ^ k8;
        const std::uint64_t b = load<std::uint64_t>(p + i + 8) ^ k8;
        const std::uint64_t c = load<std::uint64_t>(p + i + 16) ^ k8;
        const std::uint64_t d = load<std::uint64_t>(p + i + 24) ^ k8;
        store(p + i, a);
        store(p + i + 8, b);
        store(p + i + 16, c);
        store(p + i + 24, d);
    }
    COROWS_SCALAR_LOOP
    for (; i + 8 <= n; i += 8) store(p + i, load<std::uint64_t>(p + i) ^ k8);
    store(p + n - 8, tail);
}

#ifdef COROWS_MASK_X86

using kernel = void (*)(std::uint8_t*, std::size_t, std::uint32_t) noexcept;

__attribute__((target("sse2"))) void mask_sse2(std::uint8_t* p, std::size_t n,
                                               std::uint32_t k) noexcept {
    if (n < 16) {
        mask_below16(p, n, k);
        return;
    }
    const __m128i kv = _mm_set1_epi32(static_cast<int>(k));
    const __m128i tail =
        _mm_xor_si128(load16(p + n - 16), _mm_set1_epi32(static_cast<int>(rotate_key(k, n & 3))));
    if (n <= 64) {
        store16(p, _mm_xor_si128(load16(p), kv));
        if (n > 32) store16(p + 16, _mm_xor_si128(load16(p + 16), kv));
        if (n > 48) store16(p + 32, _mm_xor_si128(load16(p + 32), kv));
        store16(p + n - 16, tail);
        return;
    }
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m128i a = _mm_xor_si128(load16(p + i), kv);
        const __m128i b = _mm_xor_si128(load16(p + i + 16), kv);
        const __m128i c = _mm_xor_si128(load16(p + i + 32), kv);
        const __m128i d = _mm_xor_si128(load16(p + i + 48), kv);
        store16(p + i, a);
        store16(p + i + 16, b);
        store16(p + i + 32, c);
        store16(p + i + 48, d);
    }
    for (; i + 16 <= n; i += 16) store16(p + i, _mm_xor_si128(load16(p + i), kv));
    store16(p + n - 16, tail);
}

__attribute__((target("avx2"))) void mask_avx2(std::uint8_t* p, std::size_t n,
                                               std::uint32_t k) noexcept {
    if (n < 32) {
        if (n < 16) {
            mask_below16(p, n, k);
            return;
        }
        const __m128i a = _mm_xor_si128(load16(p), _mm_set1_epi32(static_cast<int>(k)));
        const __m128i b = _mm_xor_si128(load16(p + n - 16),
                                        _mm_set1_epi32(static_cast<int>(rotate_key(k, n & 3))));
        store16(p, a);
        store16(p + n - 16, b);
        return;
    }
    __m256i kv = _mm256_set1_epi32(static_cast<int>(k));
    const __m256i tail = _mm256_xor_si256(
        load32(p + n - 32), _mm256_set1_epi32(static_cast<int>(rotate_key(k, n & 3))));
    if (n <= 128) {
        // Straight-line for the sizes small messages have: blocks at 0, 32 and 64 as needed,
        // then the tail window, which covers whatever they left.
        store32(p, _mm256_xor_si256(load32(p), kv));
        if (n > 64) store32(p + 32, _mm256_xor_si256(load32(p + 32), kv));
        if (n > 96) store32(p + 64, _mm256_xor_si256(load32(p + 64), kv));
        store32(p + n - 32, tail);
        return;
    }
    std::size_t i = 0;
    if (n >= 256) {
        // Stores that straddle cache lines cost twice; align them once the payload is long
        // enough to repay the extra head block. Both windows are loaded before either is
        // stored, so the bytes they share are XORed once.
        const std::size_t skew = (32 - (reinterpret_cast<std::uintptr_t>(p) & 31)) & 31;
        const __m256i head = _mm256_xor_si256(load32(p), kv);
        kv = _mm256_set1_epi32(static_cast<int>(rotate_key(k, skew & 3)));
        const __m256i first = _mm256_xor_si256(load32(p + skew), kv);
        store32(p, head);
        store32(p + skew, first);
        p += skew;
        n -= skew;
        i = 32;
    }
    for (; i + 128 <= n; i += 128) {
        const __m256i a = _mm256_xor_si256(load32(p + i), kv);
        const __m256i b = _mm256_xor_si256(load32(p + i + 32), kv);
        const __m256i c = _mm256_xor_si256(load32(p + i + 64), kv);
        const __m256i d = _mm256_xor_si256(load32(p + i + 96), kv);
        store32(p + i, a);
        store32(p + i + 32, b);
        store32(p + i + 64, c);
        store32(p + i + 96, d);
    }
    for (; i + 32 <= n; i += 32) store32(p + i, _mm256_xor_si256(load32(p + i), kv));
    store32(p + n - 32, tail);
}

#if !defined(__AVX2__)
void resolve_and_mask(std::uint8_t* p, std::size_t n, std::uint32_t k) noexcept;

// Starts at the resolver, which replaces itself with the best kernel on first use; a relaxed
// atomic is a plain load on x86 and keeps concurrent first calls free of data races.
std::atomic<kernel> chosen_kernel{&resolve_and_mask};

void resolve_and_mask(std::uint8_t* p, std::size_t n, std::uint32_t k) noexcept {
    const kernel best = detail::cpu_has_avx2() ? &mask_avx2 : &mask_sse2;
    chosen_kernel.store(best, std::memory_order_relaxed);
    best(p, n, k);
}
#endif

#endif // COROWS_MASK_X86

} // namespace

void apply_mask(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset) noexcept {
    const std::uint32_t k = key_word(key, offset);
#if defined(COROWS_MASK_X86) && defined(__AVX2__)
    mask_avx2(data.data(), data.size(), k);
#elif defined(COROWS_MASK_X86)
    chosen_kernel.load(std::memory_order_relaxed)(data.data(), data.size(), k);
#else
    mask_portable(data.data(), data.size(), k);
#endif
}

namespace detail {

void apply_mask_portable(std::span<std::uint8_t> data, mask_key key,
                         std::uint64_t offset) noexcept {
    mask_portable(data.data(), data.size(), key_word(key, offset));
}

#ifdef COROWS_MASK_X86
bool cpu_has_sse2() noexcept {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse2");
}

bool cpu_has_avx2() noexcept {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

void apply_mask_sse2(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset) noexcept {
    mask_sse2(data.data(), data.size(), key_word(key, offset));
}

void apply_mask_avx2(std::span<std::uint8_t> data, mask_key key, std::uint64_t offset) noexcept {
    mask_avx2(data.data(), data.size(), key_word(key, offset));
}
#endif

} // namespace detail
} // namespace corows
