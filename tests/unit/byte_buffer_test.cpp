// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(byte_buffer)

BOOST_AUTO_TEST_CASE(prepare_commit_consume_keep_bytes_in_order) {
    corows::byte_buffer b;
    BOOST_TEST(b.empty());
    auto space = b.prepare(3);
    BOOST_TEST(space.size() >= 3u);
    space[0] = 'a';
    space[1] = 'b';
    space[2] = 'c';
    b.commit(3);
    b.append(corows::as_bytes("defgh"));
    BOOST_TEST(b.view() == "abcdefgh");
    b.consume(2);
    BOOST_TEST(b.view() == "cdefgh");
    b.truncate(3);
    BOOST_TEST(b.view() == "cde");
    b.consume(10);
    BOOST_TEST(b.empty());
}

BOOST_AUTO_TEST_CASE(growth_preserves_contents_and_capacity_is_kept) {
    corows::byte_buffer b;
    std::string expected;
    for (int i = 0; i < 5000; ++i) {
        std::string piece = std::to_string(i) + ",";
        b.append(corows::as_bytes(piece));
        expected += piece;
    }
    BOOST_TEST(b.view() == expected);
    auto cap = b.capacity();
    b.clear();
    BOOST_TEST(b.capacity() == cap);
    b.append(corows::as_bytes("x"));
    b.shrink_to(1024);
    BOOST_TEST(b.capacity() < cap);
    BOOST_TEST(b.view() == "x");
}

BOOST_AUTO_TEST_CASE(copies_are_deep_and_moves_empty_the_source) {
    corows::byte_buffer a;
    a.append(corows::as_bytes("hello"));
    corows::byte_buffer c = a;
    c.data()[0] = 'j';
    BOOST_TEST(a.view() == "hello");
    BOOST_TEST(c.view() == "jello");
    corows::byte_buffer m = std::move(a);
    BOOST_TEST(m.view() == "hello");
    BOOST_TEST(a.size() == 0u); // NOLINT(bugprone-use-after-move): the contract says empty
}

BOOST_AUTO_TEST_SUITE_END()
