// SPDX-License-Identifier: BSL-1.0
// Differential fuzzing of the incremental UTF-8 validator against a slow reference that
// reasons in code-point ranges, with the input cut into fuzzer-chosen pieces.
#include <corows/protocol/utf8.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

struct verdict {
    std::size_t fail = npos; // first byte no valid text can have there
    bool complete = true;
};

// A partial sequence is acceptable while some scalar value of the announced length still
// starts with the bits seen so far; the first byte that empties that set fails.
bool extendable(std::uint32_t bits, int seen, int len)
{
    static constexpr std::uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    const int missing = 6 * (len - seen);
    std::uint32_t lo = bits << missing;
    std::uint32_t hi = lo | ((std::uint32_t{1} << missing) - 1);
    lo = lo < min_for_len[len] ? min_for_len[len] : lo;
    hi = hi > 0x10FFFF ? 0x10FFFF : hi;
    if (lo > hi) {
        return false;
    }
    return !(lo >= 0xD800 && hi <= 0xDFFF);
}

verdict reference(std::span<const std::uint8_t> text)
{
    std::size_t i = 0;
    while (i < text.size()) {
        const std::uint8_t lead = text[i];
        int len = 0;
        std::uint32_t bits = 0;
        if (lead < 0x80) {
            ++i;
            continue;
        } else if ((lead & 0xE0) == 0xC0) {
            len = 2;
            bits = lead & 0x1F;
        } else if ((lead & 0xF0) == 0xE0) {
            len = 3;
            bits = lead & 0x0F;
        } else if ((lead & 0xF8) == 0xF0) {
            len = 4;
            bits = lead & 0x07;
        } else {
            return {i, false};
        }
        if (!extendable(bits, 1, len)) {
            return {i, false};
        }
        for (int k = 1; k < len; ++k) {
            const std::size_t j = i + static_cast<std::size_t>(k);
            if (j == text.size()) {
                return {npos, false};
            }
            if ((text[j] & 0xC0) != 0x80) {
                return {j, false};
            }
            bits = (bits << 6) | (text[j] & 0x3F);
            if (!extendable(bits, k + 1, len)) {
                return {j, false};
            }
        }
        i += static_cast<std::size_t>(len);
    }
    return {};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0) {
        return 0;
    }
    // The first byte seeds the cut points; the rest is the text.
    const std::uint8_t seed = data[0];
    const std::span<const std::uint8_t> text(data + 1, size - 1);
    const verdict want = reference(text);
    const bool valid = want.fail == npos && want.complete;

    if (corows::is_valid_utf8(text) != valid) {
        std::abort();
    }

    corows::utf8_validator v;
    std::size_t pos = 0;
    std::size_t step = seed % 37 + 1;
    while (pos < text.size()) {
        const std::size_t n = step < text.size() - pos ? step : text.size() - pos;
        const bool ok = v.write(text.subspan(pos, n));
        const bool expected = want.fail == npos || want.fail >= pos + n;
        if (ok != expected) {
            std::abort();
        }
        pos += n;
        step = (step * 5 + seed) % 41 + 1;
    }
    if (v.finish() != valid) {
        std::abort();
    }

    if (want.fail != npos) {
        corows::utf8_validator w;
        if (!w.write(text.first(want.fail)) || w.write(text.subspan(want.fail, 1)) || w.finish()) {
            std::abort();
        }
    }
    return 0;
}
