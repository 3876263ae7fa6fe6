// SPDX-License-Identifier: BSL-1.0
// decode_frames(): one loop over the frames of a packet. The per-frame path (decode_frame()
// and apply_mask()) pays a call, a run-time kernel choice and a general header decoder for
// every payload. Here a frame with a 7-bit length far enough from the end of the buffer is
// decided by one table lookup and one compare, with no bounds arithmetic, and its payload is
// unmasked by a kernel inlined into the loop; every other frame goes through decode_frame().
#include "mask_kernels.hpp"

#include <corows/detail/mask_impl.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <array>
#include <cstring>

namespace corows {
namespace {

// For each first header byte, the bound the second one (MASK bit flipped to 0 when it has the
// expected value) must stay under for the fast path: 126, so a 7-bit length, when the first
// byte is allowed at all, else 0. Control frames are covered too, as their limit is 125 anyway.
constexpr std::array<std::uint8_t, 256> fast_bound(bool allow_rsv1) {
    std::array<std::uint8_t, 256> t{};
    for (unsigned b = 0; b < 256; ++b)
        t[b] = detail::second_byte_bound[b & (allow_rsv1 ? 0xBFu : 0xFFu)] != 0 ? 126 : 0;
    return t;
}
constexpr std::array<std::uint8_t, 256> fast_bound_plain = fast_bound(false);
constexpr std::array<std::uint8_t, 256> fast_bound_rsv1 = fast_bound(true);

frame_ref make_ref(std::size_t payload_pos, std::uint64_t length, std::uint8_t first_byte) noexcept {
    return frame_ref{payload_pos, length | (std::uint64_t{first_byte} << 56)};
}

struct any_cpu_mask {
    void operator()(std::uint8_t* p, std::size_t n, const std::uint8_t* key_at) const noexcept {
        mask_key key;
        std::memcpy(key.data(), key_at, 4);
        apply_mask({p, n}, key);
    }
};

// One frame of any kind at `at`, through decode_frame(): where the next one starts, or 0 if
// this one is not complete, breaks the rules or is 2^56 bytes long or more. Out of line, and
// with `at` by value, so that the loop below keeps its registers for the common frame.
[[gnu::noinline]] std::size_t decode_one(std::span<std::uint8_t> buffer, std::size_t at, const frame_rules& rules,
                                         frame_ref& ref) noexcept {
    const decoded_frame f = decode_frame(buffer, at, rules);
    if (f.status != decode_status::complete || (f.header.payload_length >> 56) != 0) return 0;
    if (f.header.masked)
        apply_mask(buffer.subspan(f.payload_pos, static_cast<std::size_t>(f.header.payload_length)), f.header.key);
    ref = make_ref(f.payload_pos, f.header.payload_length, buffer[at]);
    return f.next_pos;
}

// Forced inline so that each caller gets the loop compiled for its own instruction set, with
// the mask kernel inlined into it. `Masked` is what the receiver requires (a server's view).
template <bool Masked, class Mask>
[[gnu::always_inline]] inline std::size_t walk(std::span<std::uint8_t> buffer, std::size_t& pos,
                                               const frame_rules& rules, std::span<frame_ref> out,
                                               Mask mask) noexcept {
    constexpr std::size_t header = Masked ? 6 : 2;
    constexpr unsigned flip = Masked ? 0x80u : 0u;
    std::uint8_t* const base = buffer.data();
    const std::size_t size = buffer.size();
    const std::uint8_t* const bound = rules.allow_rsv1 ? fast_bound_rsv1.data() : fast_bound_plain.data();
    // A frame starting below `fast_limit` is whole if its length has 7 bits. With a frame size
    // limit under 125 bytes the fast path is off, as it does not check the limit.
    const std::size_t longest = header + 125;
    const std::size_t fast_limit = size >= longest && rules.max_frame_size >= 125 ? size - longest + 1 : 0;
    frame_ref* ref = out.data();
    frame_ref* const end = ref + out.size();
    // The loop runs on a pointer, and steps by the second header byte plus a constant: the
    // step is then one load and one add after the last, which bounds how fast frames can
    // follow each other.
    std::uint8_t* at = base + pos;
    const std::uint8_t* const fast_end = base + fast_limit;
    constexpr std::ptrdiff_t step_bias = static_cast<std::ptrdiff_t>(header) - static_cast<std::ptrdiff_t>(flip);
    while (ref != end) {
        if (at < fast_end) [[likely]] {
            const unsigned b0 = at[0];
            const unsigned b1 = at[1];
            const unsigned len = b1 ^ flip;
            if (len < bound[b0]) [[likely]] {
                std::uint8_t* const payload = at + header;
                if constexpr (Masked) mask(payload, len, at + 2);
                *ref++ = make_ref(static_cast<std::size_t>(payload - base), len, static_cast<std::uint8_t>(b0));
                at += static_cast<std::ptrdiff_t>(b1) + step_bias;
                continue;
            }
        }
        const std::size_t offset = static_cast<std::size_t>(at - base);
        if (offset >= size) break;
        const std::size_t next = decode_one(buffer, offset, rules, *ref);
        if (next == 0) break;
        at = base + next;
        ++ref;
    }
    pos = static_cast<std::size_t>(at - base);
    return static_cast<std::size_t>(ref - out.data());
}

template <class Mask>
[[gnu::always_inline]] inline std::size_t walk_either(std::span<std::uint8_t> buffer, std::size_t& pos,
                                                      const frame_rules& rules, std::span<frame_ref> out,
                                                      Mask mask) noexcept {
    if (rules.receiver == role::server) return walk<true>(buffer, pos, rules, out, mask);
    return walk<false>(buffer, pos, rules, out, mask);
}

#ifdef COROWS_MASK_X86
// For each key offset 0-3, the vpshufb control that turns a vector of the key word repeated
// into the key as it lies over bytes that start that far into a period.
alignas(16) constexpr std::uint32_t key_rotation[4] = {0x03020100u, 0x00030201u, 0x01000302u, 0x02010003u};

// apply_mask()'s AVX2 kernel, for a payload of at most 125 bytes whose key is still in the
// header: the key is broadcast straight from memory and rotated for the last window by one
// shuffle, a third of the instructions of rotating it in a register and broadcasting twice.
struct avx2_mask {
    __attribute__((target("avx2"))) void operator()(std::uint8_t* p, std::size_t n,
                                                    const std::uint8_t* key_at) const noexcept {
        using detail::load16;
        using detail::load32;
        using detail::store16;
        using detail::store32;
        const std::uint32_t* rot = key_rotation + (n & 3);
        const __m256i kv = _mm256_broadcastd_epi32(_mm_loadu_si32(key_at));
        const __m256i kt = _mm256_shuffle_epi8(kv, _mm256_broadcastd_epi32(_mm_loadu_si32(rot)));
        if (n < 32) {
            if (n < 16) {
                detail::mask_below16(p, n, static_cast<std::uint32_t>(_mm256_cvtsi256_si32(kv)));
                return;
            }
            const __m128i a = _mm_xor_si128(load16(p), _mm256_castsi256_si128(kv));
            const __m128i b = _mm_xor_si128(load16(p + n - 16), _mm256_castsi256_si128(kt));
            store16(p, a);
            store16(p + n - 16, b);
            return;
        }
        const __m256i tail = _mm256_xor_si256(load32(p + n - 32), kt);
        store32(p, _mm256_xor_si256(load32(p), kv));
        if (n > 64) store32(p + 32, _mm256_xor_si256(load32(p + 32), kv));
        if (n > 96) store32(p + 64, _mm256_xor_si256(load32(p + 64), kv));
        store32(p + n - 32, tail);
    }
};

__attribute__((target("avx2"))) std::size_t walk_avx2(std::span<std::uint8_t> buffer, std::size_t& pos,
                                                      const frame_rules& rules, std::span<frame_ref> out) noexcept {
    return walk_either(buffer, pos, rules, out, avx2_mask{});
}

bool use_avx2() noexcept {
    static const bool has = detail::cpu_has_avx2();
    return has;
}
#endif

} // namespace

std::size_t decode_frames(std::span<std::uint8_t> buffer, std::size_t& pos, const frame_rules& rules,
                          std::span<frame_ref> out) noexcept {
#ifdef COROWS_MASK_X86
    if (use_avx2()) return walk_avx2(buffer, pos, rules, out);
#endif
    return walk_either(buffer, pos, rules, out, any_cpu_mask{});
}

std::size_t detail::decode_frames_portable(std::span<std::uint8_t> buffer, std::size_t& pos,
                                           const frame_rules& rules, std::span<frame_ref> out) noexcept {
    return walk_either(buffer, pos, rules, out, any_cpu_mask{});
}

} // namespace corows
