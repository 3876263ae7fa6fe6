// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/utf8.hpp>

#include <array>
#include <cstddef>
#include <cstring>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define COROWS_UTF8_SSE2 1
#endif

namespace corows {
namespace {

// The validator is a DFA over RFC 3629 §4's byte ranges. Each state says what the next
// byte may be, so an overlong, a surrogate or a code point past U+10FFFF is rejected at
// the first continuation byte that proves it, not when the sequence ends.
enum dfa_state : std::uint32_t {
    s_accept,      // between characters
    s_tail1,       // one continuation left, any 80..BF
    s_tail2,       // two left, any 80..BF
    s_tail2_e0,    // after E0: A0..BF (below is overlong)
    s_tail2_ed,    // after ED: 80..9F (above is a surrogate)
    s_tail3,       // three left, any 80..BF
    s_tail3_f0,    // after F0: 90..BF (below is overlong)
    s_tail3_f4,    // after F4: 80..8F (above is past U+10FFFF)
    s_reject,      // sticky
    state_count
};

enum byte_class : std::uint8_t {
    c_ascii,    // 00..7F
    c_cont_lo,  // 80..8F
    c_cont_mid, // 90..9F
    c_cont_hi,  // A0..BF
    c_invalid,  // C0, C1, F5..FF: never in UTF-8
    c_lead2,    // C2..DF
    c_e0,
    c_lead3,    // E1..EC, EE, EF
    c_ed,
    c_f0,
    c_lead4,    // F1..F3
    c_f4,
    class_count
};

constexpr byte_class classify(unsigned b) noexcept
{
    if (b < 0x80) return c_ascii;
    if (b < 0x90) return c_cont_lo;
    if (b < 0xA0) return c_cont_mid;
    if (b < 0xC0) return c_cont_hi;
    if (b < 0xC2) return c_invalid;
    if (b < 0xE0) return c_lead2;
    if (b == 0xE0) return c_e0;
    if (b == 0xED) return c_ed;
    if (b < 0xF0) return c_lead3;
    if (b == 0xF0) return c_f0;
    if (b < 0xF4) return c_lead4;
    if (b == 0xF4) return c_f4;
    return c_invalid;
}

constexpr dfa_state next(dfa_state s, byte_class c) noexcept
{
    const bool lo = c == c_cont_lo, mid = c == c_cont_mid, hi = c == c_cont_hi;
    const bool cont = lo || mid || hi;
    switch (s) {
    case s_accept:
        switch (c) {
        case c_ascii: return s_accept;
        case c_lead2: return s_tail1;
        case c_e0: return s_tail2_e0;
        case c_lead3: return s_tail2;
        case c_ed: return s_tail2_ed;
        case c_f0: return s_tail3_f0;
        case c_lead4: return s_tail3;
        case c_f4: return s_tail3_f4;
        default: return s_reject;
        }
    case s_tail1: return cont ? s_accept : s_reject;
    case s_tail2: return cont ? s_tail1 : s_reject;
    case s_tail2_e0: return hi ? s_tail1 : s_reject;
    case s_tail2_ed: return lo || mid ? s_tail1 : s_reject;
    case s_tail3: return cont ? s_tail2 : s_reject;
    case s_tail3_f0: return mid || hi ? s_tail2 : s_reject;
    case s_tail3_f4: return lo ? s_tail2 : s_reject;
    default: return s_reject;
    }
}

// Shift-encoded DFA: a state is stored as a bit offset (6 bits per state, 9 states fit in
// 54 bits), and each byte's row packs the next state for every current state. One step is
// then a table load independent of the state plus one shift, keeping the critical path of
// the per-byte loop to a single shift.
constexpr unsigned bits_per_state = 6;
static_assert(state_count * bits_per_state <= 64);

constexpr std::uint64_t encode(dfa_state s) noexcept
{
    return std::uint64_t{s} * bits_per_state;
}

constexpr std::array<std::uint64_t, 256> rows = [] {
    std::array<std::uint64_t, 256> t{};
    for (unsigned b = 0; b < 256; ++b) {
        std::uint64_t row = 0;
        for (unsigned s = 0; s < state_count; ++s) {
            row |= encode(next(static_cast<dfa_state>(s), classify(b))) << encode(static_cast<dfa_state>(s));
        }
        t[b] = row;
    }
    return t;
}();

constexpr std::uint32_t accept_state = encode(s_accept);
constexpr std::uint32_t reject_state = encode(s_reject);
static_assert(accept_state == 0, "a value-initialised validator must be ready");

// How many leading bytes of [p, end) are ASCII, checked a block at a time. It may stop up
// to 7 bytes short of the true count (it stops at the word holding the first high bit, and
// leaves a tail under 8 bytes); the DFA handles the rest. The count comes from branches
// only, never from the data's bit positions: a data-dependent skip (ctz of the mask) would
// make the next loads wait for this load, and measured slower.
std::size_t ascii_prefix(const std::uint8_t* p, const std::uint8_t* end) noexcept
{
    const std::uint8_t* const start = p;
#ifdef COROWS_UTF8_SSE2
    while (end - p >= 32) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
        if (_mm_movemask_epi8(_mm_or_si128(a, b)) != 0) {
            break;
        }
        p += 32;
    }
    while (end - p >= 16) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if (_mm_movemask_epi8(a) != 0) {
            break;
        }
        p += 16;
    }
#else
    while (end - p >= 16) {
        std::uint64_t a, b;
        std::memcpy(&a, p, 8);
        std::memcpy(&b, p + 8, 8);
        if (((a | b) & 0x8080808080808080u) != 0) {
            break;
        }
        p += 16;
    }
#endif
    while (end - p >= 8) {
        std::uint64_t a;
        std::memcpy(&a, p, 8);
        if ((a & 0x8080808080808080u) != 0) {
            break;
        }
        p += 8;
    }
    return static_cast<std::size_t>(p - start);
}

} // namespace

bool utf8_validator::write(std::span<const std::uint8_t> bytes) noexcept
{
    std::uint64_t s = state_;
    if (s == reject_state) {
        return false;
    }
    const std::uint8_t* p = bytes.data();
    const std::uint8_t* const end = p + bytes.size();
    // Multibyte text runs through the DFA in blocks; between blocks, if the state is back
    // between characters, a run of ASCII is skipped without touching the DFA. Reject is
    // sticky in the table, so checking it once per block is enough.
    constexpr std::ptrdiff_t block = 16;
    while (p != end) {
        if (s == accept_state) {
            p += ascii_prefix(p, end);
            if (p == end) {
                break;
            }
        }
        const std::uint8_t* const stop = end - p > block ? p + block : end;
        // Only the low 6 bits of `s` are the state; leaving the rest as garbage until the
        // block ends lets the mask fold into the shift (x86 and AArch64 shifts mask anyway).
        for (; p != stop; ++p) {
            s = rows[*p] >> (s & 63);
        }
        s &= 63;
        if (s == reject_state) {
            break;
        }
    }
    state_ = static_cast<std::uint32_t>(s);
    return s != reject_state;
}

bool utf8_validator::finish() const noexcept
{
    return state_ == accept_state;
}

void utf8_validator::reset() noexcept
{
    state_ = accept_state;
}

bool is_valid_utf8(std::span<const std::uint8_t> bytes) noexcept
{
    utf8_validator v;
    return v.write(bytes) && v.finish();
}

} // namespace corows
