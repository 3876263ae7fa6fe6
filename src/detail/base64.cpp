// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/base64.hpp>

#include <array>
#include <cstddef>

namespace corows::detail {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::uint8_t invalid = 0xFF;

// 0xFF marks every byte outside the alphabet, '=' included: padding is handled by position.
// Valid sextets fit in 6 bits, so OR-ing four lookups and testing the top two bits checks all.
constexpr std::array<std::uint8_t, 256> decode_table = [] {
    std::array<std::uint8_t, 256> t{};
    t.fill(invalid);
    for (std::uint8_t i = 0; i < 64; ++i) {
        t[static_cast<unsigned char>(alphabet[i])] = i;
    }
    return t;
}();

std::uint8_t sextet(char c) noexcept
{
    return decode_table[static_cast<unsigned char>(c)];
}

} // namespace

std::string base64_encode(std::span<const std::uint8_t> data)
{
    std::string out;
    out.resize((data.size() + 2) / 3 * 4);
    char* o = out.data();
    std::size_t i = 0;
    for (; i + 3 <= data.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{data[i]} << 16) |
                                (std::uint32_t{data[i + 1]} << 8) | std::uint32_t{data[i + 2]};
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    const std::size_t rest = data.size() - i;
    if (rest != 0) {
        std::uint32_t v = std::uint32_t{data[i]} << 16;
        if (rest == 2) {
            v |= std::uint32_t{data[i + 1]} << 8;
        }
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = rest == 2 ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    return out;
}

std::optional<std::vector<std::uint8_t>> base64_decode(std::string_view text)
{
    if (text.size() % 4 != 0) {
        return std::nullopt;
    }
    std::size_t pad = 0;
    if (!text.empty() && text.back() == '=') {
        pad = text[text.size() - 2] == '=' ? 2 : 1;
    }
    std::vector<std::uint8_t> out;
    out.reserve(text.size() / 4 * 3 - pad);

    // Every quad but the last is pad-free; '=' anywhere in them fails the table lookup.
    const std::size_t body = text.empty() ? 0 : text.size() - 4;
    for (std::size_t i = 0; i < body; i += 4) {
        const std::uint8_t a = sextet(text[i]), b = sextet(text[i + 1]),
                           c = sextet(text[i + 2]), d = sextet(text[i + 3]);
        if (((a | b | c | d) & 0xC0) != 0) {
            return std::nullopt;
        }
        const std::uint32_t v = (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) |
                                (std::uint32_t{c} << 6) | std::uint32_t{d};
        out.push_back(static_cast<std::uint8_t>(v >> 16));
        out.push_back(static_cast<std::uint8_t>(v >> 8));
        out.push_back(static_cast<std::uint8_t>(v));
    }
    if (text.empty()) {
        return out;
    }

    const std::string_view last = text.substr(body);
    const std::uint8_t a = sextet(last[0]);
    const std::uint8_t b = sextet(last[1]);
    const std::uint8_t c = pad >= 2 ? 0 : sextet(last[2]);
    const std::uint8_t d = pad >= 1 ? 0 : sextet(last[3]);
    if (((a | b | c | d) & 0xC0) != 0) {
        return std::nullopt;
    }
    const std::uint32_t v = (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) |
                            (std::uint32_t{c} << 6) | std::uint32_t{d};
    // Canonical encodings leave the bits below the last whole byte zero (RFC 4648 §3.5).
    if ((pad == 2 && (v & 0xFFFF) != 0) || (pad == 1 && (v & 0xFF) != 0)) {
        return std::nullopt;
    }
    out.push_back(static_cast<std::uint8_t>(v >> 16));
    if (pad < 2) {
        out.push_back(static_cast<std::uint8_t>(v >> 8));
    }
    if (pad < 1) {
        out.push_back(static_cast<std::uint8_t>(v));
    }
    return out;
}

} // namespace corows::detail
