// SPDX-License-Identifier: BSL-1.0
// detail::final_padding_candidates against zlib's own account of where a block ends
// (inflate with Z_BLOCK): over one-block streams of every Huffman kind, the true padding is
// always a candidate, and the header settles the question (all candidates on one side of
// three bits) for every dynamic-Huffman block.
#include "../../src/detail/final_padding.hpp"

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::detail::final_padding_candidates;

// Raw DEFLATE of `in` in one Z_FINISH call.
bytes deflate_raw(const bytes& in, int level, int strategy) {
    z_stream zs{};
    BOOST_TEST_REQUIRE(deflateInit2(&zs, level, Z_DEFLATED, -15, 8, strategy) == Z_OK);
    bytes out(deflateBound(&zs, static_cast<uLong>(in.size())) + 16);
    zs.next_in = const_cast<Bytef*>(in.data());
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    BOOST_TEST_REQUIRE(rc == Z_STREAM_END);
    return out;
}

struct block_end {
    bool one_block;
    unsigned padding; // zero bits after the end-of-block code
};

// Where zlib finds the end of the stream's blocks.
block_end zlib_account(const bytes& stream, std::size_t inflated) {
    z_stream zs{};
    BOOST_TEST_REQUIRE(inflateInit2(&zs, -15) == Z_OK);
    bytes out(inflated + 1);
    zs.next_in = const_cast<Bytef*>(stream.data());
    zs.avail_in = static_cast<uInt>(stream.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    unsigned blocks = 0;
    block_end r{false, 0};
    for (;;) {
        const int rc = inflate(&zs, Z_BLOCK);
        BOOST_TEST_REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
        if (rc == Z_STREAM_END) break;
        if ((zs.data_type & 128) != 0 && zs.total_in > 0 && (zs.data_type & 64) == 0) ++blocks;
        if ((zs.data_type & 128) != 0 && (zs.data_type & 64) != 0) {
            ++blocks;
            r.padding = static_cast<unsigned>(zs.data_type & 7);
            break;
        }
    }
    inflateEnd(&zs);
    r.one_block = blocks == 1;
    return r;
}

std::string json_like(std::mt19937& rng, std::size_t size) {
    static const char* const keys[] = {"id", "user", "price", "items", "name", "active", "tags", "ts"};
    std::string s = "{";
    while (s.size() < size) {
        s += '"';
        s += keys[rng() % 8];
        s += "\":";
        s += std::to_string(rng() % 100000);
        s += ',';
    }
    s.resize(size);
    return s;
}

bytes make_input(std::mt19937& rng, int kind) {
    const std::size_t size = 1 + rng() % 4000;
    bytes in(size);
    if (kind == 0) {
        auto j = json_like(rng, size);
        in.assign(j.begin(), j.end());
    } else if (kind == 1) {
        for (auto& b : in) b = static_cast<std::uint8_t>(rng());
    } else {
        const unsigned alphabet = 1 + rng() % 6;
        for (auto& b : in) b = static_cast<std::uint8_t>('a' + rng() % alphabet);
    }
    return in;
}

} // namespace

BOOST_AUTO_TEST_SUITE(final_padding)

BOOST_AUTO_TEST_CASE(the_true_padding_is_always_a_candidate_and_usually_decides) {
    std::mt19937 rng(20261202);
    const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FIXED, Z_HUFFMAN_ONLY, Z_FILTERED};
    int checked = 0, decided = 0, stored = 0, dynamic = 0, dynamic_decided = 0;
    for (int i = 0; i < 6000; ++i) {
        const bytes in = make_input(rng, i % 3);
        const int level = 1 + i % 9;
        const bytes out = deflate_raw(in, level, strategies[(i / 3) % 4]);
        const block_end truth = zlib_account(out, in.size());
        if (!truth.one_block) continue;
        const std::uint8_t c = final_padding_candidates(out);
        if ((out[0] & 6) == 0) { // a stored block: not ours to read
            BOOST_TEST(c == 0u);
            ++stored;
            continue;
        }
        ++checked;
        BOOST_TEST_REQUIRE(((c >> truth.padding) & 1u) == 1u,
                           "case " << i << ": padding " << truth.padding << " not among " << int(c));
        const bool settled = (c & 0x07u) == 0 || (c & 0xf8u) == 0;
        decided += settled;
        if ((out[0] & 6) == 4) {
            ++dynamic;
            dynamic_decided += settled;
        }
    }
    BOOST_TEST_MESSAGE("one-block streams " << checked << ", decided by the header " << decided << ", stored " << stored
                                            << ", dynamic " << dynamic << " of which decided " << dynamic_decided);
    BOOST_TEST(checked > 3000);
    // A dynamic block's end-of-block code is long and rare enough to be found in one place;
    // a fixed block's is seven zero bits, which often fit at several paddings.
    BOOST_TEST(dynamic > 2000);
    BOOST_TEST(dynamic_decided == dynamic);
    BOOST_TEST(decided > checked / 2);
}

BOOST_AUTO_TEST_CASE(rfc7692_hello_as_a_final_block) {
    // RFC 7692 §7.2.3.4: "Hello" in a fixed-Huffman final block.
    const bytes hello{0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    const block_end truth = zlib_account(hello, 5);
    BOOST_TEST_REQUIRE(truth.one_block);
    const std::uint8_t c = final_padding_candidates(hello);
    BOOST_TEST(((c >> truth.padding) & 1u) == 1u);
    // Its end-of-block code is seven zero bits followed by zero padding: every padding that
    // leaves room for those seven bits fits.
    BOOST_TEST(c == 0x7fu);
}

BOOST_AUTO_TEST_CASE(what_is_not_one_final_block_gives_nothing_and_never_reads_past_the_end) {
    BOOST_TEST(final_padding_candidates({}) == 0u);
    const bytes not_final{0x04, 0x00}; // BFINAL 0
    BOOST_TEST(final_padding_candidates(not_final) == 0u);
    const bytes reserved{0x07, 0xff}; // BTYPE 11
    BOOST_TEST(final_padding_candidates(reserved) == 0u);
    std::mt19937 rng(7);
    for (int i = 0; i < 20000; ++i) {
        bytes junk(rng() % 64);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        if (!junk.empty()) junk[0] = static_cast<std::uint8_t>((junk[0] & 0xf8u) | 0x05u); // final, dynamic
        (void)final_padding_candidates(junk); // under ASan: no read outside `junk`
    }
    // Every prefix of a real stream, too.
    const bytes in = make_input(rng, 0);
    const bytes out = deflate_raw(in, 6, Z_DEFAULT_STRATEGY);
    for (std::size_t n = 0; n <= out.size(); ++n) (void)final_padding_candidates(std::span(out).first(n));
}

BOOST_AUTO_TEST_SUITE_END()
