// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/sha1.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using digest = std::array<std::uint8_t, 20>;

std::span<const std::uint8_t> bytes_of(std::string_view s)
{
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string hex(const digest& d)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (std::uint8_t b : d) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

// A second, deliberately naive path: RFC 3174 §6.1 (80-word schedule) over an explicitly
// padded copy, so a bug in the production tail handling or rolling schedule shows up as a
// mismatch.
digest reference_sha1(std::span<const std::uint8_t> data)
{
    std::vector<std::uint8_t> msg(data.begin(), data.end());
    const std::uint64_t bit_len = std::uint64_t{data.size()} * 8;
    msg.push_back(0x80);
    while (msg.size() % 64 != 56) {
        msg.push_back(0);
    }
    for (int i = 7; i >= 0; --i) {
        msg.push_back(static_cast<std::uint8_t>(bit_len >> (8 * i)));
    }
    auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
    std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    for (std::size_t off = 0; off < msg.size(); off += 64) {
        std::uint32_t w[80];
        for (int t = 0; t < 16; ++t) {
            w[t] = 0;
            for (int k = 0; k < 4; ++k) {
                w[t] = (w[t] << 8) | msg[off + 4 * t + k];
            }
        }
        for (int t = 16; t < 80; ++t) {
            w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        }
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int t = 0; t < 80; ++t) {
            std::uint32_t f = 0, k = 0;
            if (t < 20) {
                f = (b & c) | (~b & d);
                k = 0x5A827999u;
            } else if (t < 40) {
                f = b ^ c ^ d;
                k = 0x6ED9EBA1u;
            } else if (t < 60) {
                f = (b & c) | (b & d) | (c & d);
                k = 0x8F1BBCDCu;
            } else {
                f = b ^ c ^ d;
                k = 0xCA62C1D6u;
            }
            const std::uint32_t tmp = rotl(a, 5) + f + e + k + w[t];
            e = d;
            d = c;
            c = rotl(b, 30);
            b = a;
            a = tmp;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
    digest out{};
    for (int i = 0; i < 20; ++i) {
        out[i] = static_cast<std::uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
    }
    return out;
}

std::vector<std::uint8_t> pattern(std::size_t n)
{
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<std::uint8_t>(i * 7 + 3);
    }
    return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sha1)

BOOST_AUTO_TEST_CASE(rfc3174_test1_abc)
{
    BOOST_TEST(hex(corows::detail::sha1(bytes_of("abc"))) == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

BOOST_AUTO_TEST_CASE(rfc3174_test2_448_bits)
{
    BOOST_TEST(hex(corows::detail::sha1(bytes_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))) ==
               "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

BOOST_AUTO_TEST_CASE(rfc3174_test3_million_a)
{
    const std::string a(1000000, 'a');
    BOOST_TEST(hex(corows::detail::sha1(bytes_of(a))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

BOOST_AUTO_TEST_CASE(rfc3174_test4_640_bytes)
{
    std::string s;
    for (int i = 0; i < 80; ++i) {
        s += "01234567";
    }
    BOOST_TEST(s.size() == 640u);
    BOOST_TEST(hex(corows::detail::sha1(bytes_of(s))) == "dea356a2cddd90c7a7ecedc5ebb563934f460452");
}

BOOST_AUTO_TEST_CASE(empty_input)
{
    BOOST_TEST(hex(corows::detail::sha1({})) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

// Lengths around the padding boundaries (55/56 bytes switch to two tail blocks, 64 is a
// whole block), digests taken from an independent implementation.
BOOST_AUTO_TEST_CASE(padding_boundaries_known_digests)
{
    struct known {
        std::size_t len;
        std::string_view hex;
    };
    const known table[] = {
        {1, "9842926af7ca0a8cca12604f945414f07b01e13d"},
        {55, "ddf57317ef34bfee3b6df83d359098930eb278bc"},
        {56, "a0d492bb0fc889d0eca3bc137066ab6f4f74f369"},
        {57, "11a02dcf95859677a62e75024067c22b165d890f"},
        {63, "c55856749bef509bdfe6bfebfc7bf4e793e82132"},
        {64, "bede92be29c3874e1b54ddc77988d606fc857a8e"},
        {65, "b05a80522b053d6dc7e0a517d0e70212c7dad11f"},
        {119, "504e27376a6e0f0dba8295b85cb25dc4dfa17d23"},
        {120, "82134b02fb3f702491be9bed581eeab59334acb2"},
        {127, "34d5e582029e9b9b85b2febe31da3db7cdabaaea"},
        {128, "a09133e6730ffe899efb70204cb5646cd5dc24ee"},
        {129, "808aea332ce367541d37adae7f94e59c5c1a934e"},
        {200, "892b673ca3c696ab13ab8aab3cf3abfbc3aaeb3b"},
    };
    const auto data = pattern(200);
    for (const known& k : table) {
        BOOST_TEST_CONTEXT("length " << k.len)
        {
            BOOST_TEST(hex(corows::detail::sha1(std::span(data).first(k.len))) == k.hex);
            BOOST_TEST(hex(reference_sha1(std::span(data).first(k.len))) == k.hex);
        }
    }
}

BOOST_AUTO_TEST_CASE(every_length_matches_reference)
{
    std::mt19937 rng(3174);
    for (std::size_t n = 0; n <= 130; ++n) {
        std::vector<std::uint8_t> data(n);
        for (auto& b : data) {
            b = static_cast<std::uint8_t>(rng());
        }
        BOOST_TEST_CONTEXT("length " << n)
        {
            BOOST_TEST(hex(corows::detail::sha1(data)) == hex(reference_sha1(data)));
        }
    }
}

// A digest must depend on the input's position in memory only through its bytes.
BOOST_AUTO_TEST_CASE(unaligned_input)
{
    const auto data = pattern(300);
    const std::string expected = hex(corows::detail::sha1(std::span(data).first(150)));
    for (std::size_t shift = 1; shift < 8; ++shift) {
        std::vector<std::uint8_t> copy(shift, 0xAA);
        copy.insert(copy.end(), data.begin(), data.begin() + 150);
        BOOST_TEST(hex(corows::detail::sha1(std::span(copy).subspan(shift))) == expected);
    }
}

BOOST_AUTO_TEST_CASE(single_bit_changes_digest)
{
    auto data = pattern(100);
    const auto before = corows::detail::sha1(data);
    data[99] ^= 1;
    BOOST_TEST(hex(corows::detail::sha1(data)) != hex(before));
}

BOOST_AUTO_TEST_SUITE_END()
