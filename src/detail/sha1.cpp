// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>
#include <corows/detail/sha1.hpp>

#include <bit>
#include <cstddef>
#include <cstring>

namespace corows::detail {
namespace {

constexpr std::size_t block_size = 64;

std::uint32_t load_be32(const std::uint8_t* p) noexcept
{
    return static_cast<std::uint32_t>(load_big_endian<4>(p));
}

void store_be32(std::uint8_t* p, std::uint32_t v) noexcept
{
    store_big_endian<4>(p, v);
}

// The schedule is kept as a rolling 16-word window (RFC 3174 §6.2, method 2):
// it stays in registers/L1 and avoids an 80-word array per block.
void compress(std::uint32_t (&h)[5], const std::uint8_t* block) noexcept
{
    std::uint32_t w[16];
    for (int t = 0; t < 16; ++t) {
        w[t] = load_be32(block + 4 * t);
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

    auto next_w = [&w](int t) noexcept {
        const std::uint32_t x = w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15] ^ w[t & 15];
        w[t & 15] = std::rotl(x, 1);
        return w[t & 15];
    };
    auto round = [&](std::uint32_t f, std::uint32_t k, std::uint32_t wt) noexcept {
        const std::uint32_t tmp = std::rotl(a, 5) + f + e + k + wt;
        e = d;
        d = c;
        c = std::rotl(b, 30);
        b = a;
        a = tmp;
    };

    for (int t = 0; t < 16; ++t) {
        round((b & c) | (~b & d), 0x5A827999u, w[t]);
    }
    for (int t = 16; t < 20; ++t) {
        round((b & c) | (~b & d), 0x5A827999u, next_w(t));
    }
    for (int t = 20; t < 40; ++t) {
        round(b ^ c ^ d, 0x6ED9EBA1u, next_w(t));
    }
    for (int t = 40; t < 60; ++t) {
        round((b & c) | (b & d) | (c & d), 0x8F1BBCDCu, next_w(t));
    }
    for (int t = 60; t < 80; ++t) {
        round(b ^ c ^ d, 0xCA62C1D6u, next_w(t));
    }

    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

} // namespace

std::array<std::uint8_t, 20> sha1(std::span<const std::uint8_t> data) noexcept
{
    std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

    const std::size_t full = data.size() / block_size * block_size;
    for (std::size_t off = 0; off < full; off += block_size) {
        compress(h, data.data() + off);
    }

    // The tail plus the 0x80 marker and the 64-bit bit length need one or two more blocks.
    std::uint8_t tail[2 * block_size] = {};
    const std::size_t rest = data.size() - full;
    if (rest != 0) {
        std::memcpy(tail, data.data() + full, rest);
    }
    tail[rest] = 0x80;
    const std::size_t tail_len = rest + 1 + 8 <= block_size ? block_size : 2 * block_size;
    const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8u;
    store_be32(tail + tail_len - 8, static_cast<std::uint32_t>(bits >> 32));
    store_be32(tail + tail_len - 4, static_cast<std::uint32_t>(bits));
    for (std::size_t off = 0; off < tail_len; off += block_size) {
        compress(h, tail + off);
    }

    std::array<std::uint8_t, 20> digest{};
    for (int i = 0; i < 5; ++i) {
        store_be32(digest.data() + 4 * i, h[i]);
    }
    return digest;
}

} // namespace corows::detail
