// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/mask_impl.hpp>
#include <corows/protocol/mask.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using kernel = void (*)(std::span<std::uint8_t>, corows::mask_key, std::uint64_t) noexcept;

struct named_kernel {
    std::string name;
    kernel fn;
};

/// apply_mask() itself and every kernel behind it that this CPU can run.
std::vector<named_kernel> kernels() {
    std::vector<named_kernel> out{{"apply_mask", &corows::apply_mask},
                                  {"portable", &corows::detail::apply_mask_portable}};
#if defined(__x86_64__) || defined(__i386__)
    if (corows::detail::cpu_has_sse2()) out.push_back({"sse2", &corows::detail::apply_mask_sse2});
    if (corows::detail::cpu_has_avx2()) out.push_back({"avx2", &corows::detail::apply_mask_avx2});
#endif
    return out;
}

void reference_mask(std::span<std::uint8_t> data, corows::mask_key key, std::uint64_t offset) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] ^= key[(offset + i) % 4];
}

bytes random_bytes(std::size_t n, std::mt19937& rng) {
    bytes out(n);
    for (auto& b : out) b = static_cast<std::uint8_t>(rng());
    return out;
}

constexpr corows::mask_key test_key{0x37, 0xfa, 0x21, 0x3d};
// Room on both sides of the span under test, to catch any byte written outside it.
constexpr std::size_t guard = 64;

/// Runs `fn` on `length` bytes starting `misalign` bytes past a 64-byte boundary and checks
/// the result against the byte loop, and that no byte around the span changed.
bool matches_reference(kernel fn, std::size_t length, std::uint64_t offset, std::size_t misalign,
                       std::mt19937& rng) {
    // Over-allocate so the start can be placed at any alignment.
    bytes storage = random_bytes(length + 2 * guard + 128, rng);
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    const std::size_t start = guard + ((64 - base % 64) % 64) + misalign;
    bytes expected = storage;
    reference_mask(std::span(expected).subspan(start, length), test_key, offset);
    fn(std::span(storage).subspan(start, length), test_key, offset);
    return storage == expected;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mask)

BOOST_AUTO_TEST_CASE(rfc_example_hello) {
    for (const auto& k : kernels()) {
        bytes data{'H', 'e', 'l', 'l', 'o'};
        k.fn(data, test_key, 0);
        BOOST_TEST(data == (bytes{0x7f, 0x9f, 0x4d, 0x51, 0x58}), k.name);
        k.fn(data, test_key, 0);
        BOOST_TEST(data == (bytes{'H', 'e', 'l', 'l', 'o'}), k.name);
    }
}

BOOST_AUTO_TEST_CASE(every_length_offset_and_alignment) {
    std::mt19937 rng(1);
    for (const auto& k : kernels())
        for (std::size_t length = 0; length <= 300; ++length)
            for (std::uint64_t offset = 0; offset < 8; ++offset)
                for (std::size_t misalign : {0, 1, 3, 7, 13, 31}) {
                    if (!matches_reference(k.fn, length, offset, misalign, rng))
                        BOOST_FAIL(k.name << ": length " << length << " offset " << offset
                                          << " misalign " << misalign);
                }
    BOOST_TEST(true);
}

BOOST_AUTO_TEST_CASE(every_alignment_for_long_payloads) {
    // The AVX2 kernel aligns its stores from 256 bytes on: every start address modulo 32.
    std::mt19937 rng(2);
    for (const auto& k : kernels())
        for (std::size_t length : {255, 256, 257, 287, 288, 289, 320, 1000, 4099})
            for (std::size_t misalign = 0; misalign < 64; ++misalign)
                for (std::uint64_t offset : {0, 1, 2, 3, 6}) {
                    if (!matches_reference(k.fn, length, offset, misalign, rng))
                        BOOST_FAIL(k.name << ": length " << length << " offset " << offset
                                          << " misalign " << misalign);
                }
    BOOST_TEST(true);
}

BOOST_AUTO_TEST_CASE(large_payloads) {
    std::mt19937 rng(3);
    for (const auto& k : kernels()) {
        for (std::size_t misalign : {0, 3})
            for (std::uint64_t offset : {0, 1, 7})
                BOOST_TEST(matches_reference(k.fn, 65536, offset, misalign, rng),
                           k.name << ": offset " << offset << " misalign " << misalign);
        BOOST_TEST(matches_reference(k.fn, (1u << 20) + 3, 1, 3, rng), k.name << ": 1 MiB + 3");
    }
}

BOOST_AUTO_TEST_CASE(offset_only_matters_modulo_four) {
    std::mt19937 rng(4);
    const bytes original = random_bytes(77, rng);
    for (const auto& k : kernels())
        for (std::uint64_t offset : {0ull, 1ull, 2ull, 3ull}) {
            bytes a = original;
            bytes b = original;
            k.fn(a, test_key, offset);
            k.fn(b, test_key, offset + (1ull << 62) + 4000);
            BOOST_TEST(a == b, k.name << " offset " << offset);
        }
}

BOOST_AUTO_TEST_CASE(piecewise_equals_one_shot) {
    std::mt19937 rng(5);
    for (const auto& k : kernels())
        for (int round = 0; round < 300; ++round) {
            const std::size_t length = rng() % (round < 200 ? 300 : 20000);
            const bytes original = random_bytes(length, rng);
            const corows::mask_key key{static_cast<std::uint8_t>(rng()),
                                       static_cast<std::uint8_t>(rng()),
                                       static_cast<std::uint8_t>(rng()),
                                       static_cast<std::uint8_t>(rng())};
            bytes whole = original;
            corows::apply_mask(whole, key);

            bytes pieces = original;
            std::size_t pos = 0;
            while (pos < length) {
                const std::size_t n = std::min<std::size_t>(length - pos, rng() % 70);
                k.fn(std::span(pieces).subspan(pos, n), key, pos);
                pos += n;
            }
            if (pieces != whole) BOOST_FAIL(k.name << ": round " << round << " length " << length);
        }
    BOOST_TEST(true);
}

BOOST_AUTO_TEST_CASE(all_kernels_agree_with_dispatch) {
    std::mt19937 rng(6);
    const auto all = kernels();
    for (int round = 0; round < 2000; ++round) {
        const bytes original = random_bytes(rng() % 600, rng);
        const corows::mask_key key{static_cast<std::uint8_t>(rng()), 0,
                                   static_cast<std::uint8_t>(rng()), 0xFF};
        const std::uint64_t offset = rng();
        bytes expected = original;
        reference_mask(expected, key, offset);
        for (const auto& k : all) {
            bytes data = original;
            k.fn(data, key, offset);
            if (data != expected) BOOST_FAIL(k.name << ": round " << round);
        }
    }
    BOOST_TEST(all.size() >= 2u);
}

BOOST_AUTO_TEST_CASE(cpu_features_are_reported) {
#if defined(__x86_64__)
    // Every x86-64 CPU has SSE2, so that kernel is always tested on this architecture.
    BOOST_TEST(corows::detail::cpu_has_sse2());
#endif
    BOOST_TEST_MESSAGE("mask kernels tested: " << kernels().size());
}

BOOST_AUTO_TEST_SUITE_END()
