// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/base64.hpp>
#include <corows/detail/sha1.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::vector<std::uint8_t> bytes_of(std::string_view s)
{
    return {s.begin(), s.end()};
}

bool rejects(std::string_view text)
{
    return !corows::detail::base64_decode(text).has_value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(base64)

BOOST_AUTO_TEST_CASE(rfc4648_vectors_encode)
{
    BOOST_TEST(corows::detail::base64_encode(bytes_of("")) == "");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("f")) == "Zg==");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("fo")) == "Zm8=");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("foo")) == "Zm9v");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("foob")) == "Zm9vYg==");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("fooba")) == "Zm9vYmE=");
    BOOST_TEST(corows::detail::base64_encode(bytes_of("foobar")) == "Zm9vYmFy");
}

BOOST_AUTO_TEST_CASE(rfc4648_vectors_decode)
{
    const std::pair<std::string_view, std::string_view> vectors[] = {
        {"", ""},         {"Zg==", "f"},         {"Zm8=", "fo"},       {"Zm9v", "foo"},
        {"Zm9vYg==", "foob"}, {"Zm9vYmE=", "fooba"}, {"Zm9vYmFy", "foobar"},
    };
    for (const auto& [text, plain] : vectors) {
        BOOST_TEST_CONTEXT(text)
        {
            const auto decoded = corows::detail::base64_decode(text);
            BOOST_TEST_REQUIRE(decoded.has_value());
            BOOST_TEST(*decoded == bytes_of(plain), boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(full_alphabet)
{
    // 0x00 0x10 0x83 ... encodes every sextet 0..63 in order.
    std::vector<std::uint8_t> data;
    for (std::uint32_t i = 0; i < 64; i += 4) {
        const std::uint32_t v = (i << 18) | ((i + 1) << 12) | ((i + 2) << 6) | (i + 3);
        data.push_back(static_cast<std::uint8_t>(v >> 16));
        data.push_back(static_cast<std::uint8_t>(v >> 8));
        data.push_back(static_cast<std::uint8_t>(v));
    }
    const std::string text = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    BOOST_TEST(corows::detail::base64_encode(data) == text);
    const auto decoded = corows::detail::base64_decode(text);
    BOOST_TEST_REQUIRE(decoded.has_value());
    BOOST_TEST(*decoded == data, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rejects_wrong_length)
{
    BOOST_TEST(rejects("Z"));
    BOOST_TEST(rejects("Zg"));
    BOOST_TEST(rejects("Zg="));
    BOOST_TEST(rejects("Zm9"));
    BOOST_TEST(rejects("Zm9vY"));
    BOOST_TEST(rejects("Zm9vYg="));
    BOOST_TEST(rejects("Zm9vYg==="));
    BOOST_TEST(rejects("="));
}

BOOST_AUTO_TEST_CASE(rejects_bad_characters)
{
    // Every byte outside the alphabet, in each position of a quad, both in the last quad and
    // in an earlier one.
    const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rejected = 0;
    for (int c = 0; c < 256; ++c) {
        if (alphabet.find(static_cast<char>(c)) != std::string::npos || c == '=') {
            continue;
        }
        for (std::size_t pos = 0; pos < 8; ++pos) {
            std::string text = "Zm9vYmFy";
            text[pos] = static_cast<char>(c);
            BOOST_TEST_CONTEXT("byte " << c << " at " << pos)
            {
                BOOST_TEST(rejects(text));
            }
            ++rejected;
        }
    }
    BOOST_TEST(rejected == (256 - 65) * 8);
    // URL-safe alphabet (RFC 4648 §5) is a different encoding.
    BOOST_TEST(rejects("-_-_"));
}

BOOST_AUTO_TEST_CASE(rejects_misplaced_padding)
{
    BOOST_TEST(rejects("===="));
    BOOST_TEST(rejects("Z==="));
    BOOST_TEST(rejects("=Zm9"));
    BOOST_TEST(rejects("Z=m9"));
    BOOST_TEST(rejects("Zm=9"));
    BOOST_TEST(rejects("Zm=="
                       "Zm9v"));
    BOOST_TEST(rejects("Zm8="
                       "Zm9v"));
    BOOST_TEST(rejects("Zm9vZ=8="));
    BOOST_TEST(rejects("Zg==Zg=="));
}

BOOST_AUTO_TEST_CASE(rejects_non_canonical_trailing_bits)
{
    // "Zm8=" is canonical for "fo"; "Zm9=" carries a stray low bit.
    BOOST_TEST(!rejects("Zm8="));
    BOOST_TEST(rejects("Zm9="));
    BOOST_TEST(rejects("Zm/="));
    // "Zg==" is canonical for "f"; "Zh==" .. "Zv==" set the 4 discarded bits.
    BOOST_TEST(!rejects("Zg=="));
    BOOST_TEST(rejects("Zh=="));
    BOOST_TEST(rejects("Zv=="));
    BOOST_TEST(rejects("Zm9vYh=="));
    // Exhaustively: with one pad, the 3rd sextet's low 2 bits must be zero; with two pads,
    // the 2nd sextet's low 4 bits.
    const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t s = 0; s < 64; ++s) {
        BOOST_TEST(rejects(std::string("AA") + alphabet[s] + "=") == ((s & 3) != 0));
        BOOST_TEST(rejects(std::string("A") + alphabet[s] + "==") == ((s & 15) != 0));
    }
}

BOOST_AUTO_TEST_CASE(rejects_whitespace)
{
    BOOST_TEST(rejects(" Zm9v"));
    BOOST_TEST(rejects("Zm9v "));
    BOOST_TEST(rejects("Zm9v\r\n"));
    BOOST_TEST(rejects("Zm 9v"));
    BOOST_TEST(rejects("Zm9\tv"));
    BOOST_TEST(rejects("Zm9vYmFy\nZm9v"));
    BOOST_TEST(rejects("Zm8= "));
    BOOST_TEST(rejects("    "));
}

BOOST_AUTO_TEST_CASE(random_round_trips)
{
    std::mt19937 rng(4648);
    for (std::size_t n = 0; n <= 300; ++n) {
        for (int rep = 0; rep < 4; ++rep) {
            std::vector<std::uint8_t> data(n);
            for (auto& b : data) {
                b = static_cast<std::uint8_t>(rng());
            }
            const std::string text = corows::detail::base64_encode(data);
            BOOST_TEST_CONTEXT("length " << n)
            {
                BOOST_TEST(text.size() == (n + 2) / 3 * 4);
                const auto decoded = corows::detail::base64_decode(text);
                BOOST_TEST_REQUIRE(decoded.has_value());
                BOOST_TEST(*decoded == data, boost::test_tools::per_element());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(sixteen_byte_key_shape)
{
    // A Sec-WebSocket-Key is 16 bytes: 24 characters ending in "==".
    const auto key = corows::detail::base64_decode("dGhlIHNhbXBsZSBub25jZQ==");
    BOOST_TEST_REQUIRE(key.has_value());
    BOOST_TEST(key->size() == 16u);
    BOOST_TEST(std::string(key->begin(), key->end()) == "the sample nonce");
}

BOOST_AUTO_TEST_CASE(rfc6455_accept_example)
{
    const std::string input =
        std::string("dGhlIHNhbXBsZSBub25jZQ==") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    const auto digest = corows::detail::sha1(bytes_of(input));
    // RFC 6455 §1.3 gives both the intermediate digest and its base64 form.
    const std::array<std::uint8_t, 20> expected = {
        0xb3, 0x7a, 0x4f, 0x2c, 0xc0, 0x62, 0x4f, 0x16, 0x90, 0xf6,
        0x46, 0x06, 0xcf, 0x38, 0x59, 0x45, 0xb2, 0xbe, 0xc4, 0xea};
    BOOST_TEST(digest == expected, boost::test_tools::per_element());
    BOOST_TEST(corows::detail::base64_encode(digest) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    const auto back = corows::detail::base64_decode("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    BOOST_TEST_REQUIRE(back.has_value());
    BOOST_TEST(*back == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
