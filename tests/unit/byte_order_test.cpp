// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <cstring>

// Exact bytes in memory, so that a wrong branch for one byte order fails on that machine
// (s390x for big-endian, under qemu; see docs/platforms.md).

namespace {

using four = std::array<std::uint8_t, 4>;

// The bytes of `w` as they lie in memory.
four memory_of(std::uint32_t w) {
    four b;
    std::memcpy(b.data(), &w, 4);
    return b;
}

} // namespace

BOOST_AUTO_TEST_SUITE(byte_order)

BOOST_AUTO_TEST_CASE(big_endian_loads_and_stores) {
    const std::array<std::uint8_t, 8> wire{0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xf8};
    BOOST_TEST(corows::detail::load_big_endian<1>(wire.data()) == 0x81u);
    BOOST_TEST(corows::detail::load_big_endian<2>(wire.data()) == 0x8102u);
    BOOST_TEST(corows::detail::load_big_endian<3>(wire.data()) == 0x810203u);
    BOOST_TEST(corows::detail::load_big_endian<8>(wire.data()) == 0x81020304050607f8u);
    std::array<std::uint8_t, 8> out{};
    corows::detail::store_big_endian<8>(out.data(), 0x81020304050607f8u);
    BOOST_TEST((out == wire));
    std::array<std::uint8_t, 3> three{};
    corows::detail::store_big_endian<3>(three.data(), 0xaabbccddu); // the low three bytes
    BOOST_TEST((three == std::array<std::uint8_t, 3>{0xbb, 0xcc, 0xdd}));
    static_assert(corows::detail::load_big_endian<2>(std::array<std::uint8_t, 2>{0xff, 0xfe}.data()) == 0xfffe);
}

BOOST_AUTO_TEST_CASE(little_endian_load_reads_the_first_byte_lowest) {
    const std::array<std::uint8_t, 8> stream{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x88};
    BOOST_TEST(corows::detail::load_little_endian64(stream.data()) == 0x8807060504030201u);
    BOOST_TEST(corows::detail::byteswap64(0x0102030405060788u) == 0x8807060504030201u);
}

BOOST_AUTO_TEST_CASE(bytes_rotate_toward_the_first_in_memory) {
    std::uint32_t w;
    const four key{0xa1, 0xb2, 0xc3, 0xd4};
    std::memcpy(&w, key.data(), 4);
    BOOST_TEST((memory_of(corows::detail::rotate_bytes_toward_first(w, 0)) == key));
    BOOST_TEST((memory_of(corows::detail::rotate_bytes_toward_first(w, 1)) == four{0xb2, 0xc3, 0xd4, 0xa1}));
    BOOST_TEST((memory_of(corows::detail::rotate_bytes_toward_first(w, 2)) == four{0xc3, 0xd4, 0xa1, 0xb2}));
    BOOST_TEST((memory_of(corows::detail::rotate_bytes_toward_first(w, 3)) == four{0xd4, 0xa1, 0xb2, 0xc3}));
}

BOOST_AUTO_TEST_SUITE_END()
