// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>
#include <corows/error.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/inflate_stream.hpp>

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <system_error>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;

// RFC 7692 §7.2.3.1-§7.2.3.4 examples.
const bytes hello_compressed{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
const bytes hello_again{0xf2, 0x00, 0x11, 0x00, 0x00};
const bytes hello_stored{0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00};
const bytes hello_bfinal{0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00};

// Inflates one message whose payload arrives as `frames`.
std::error_code inflate_message(corows::inflate_stream& s, const std::vector<bytes>& frames,
                                corows::byte_buffer& out, std::size_t limit = SIZE_MAX) {
    for (const auto& f : frames)
        if (auto ec = s.write(f, out, limit)) return ec;
    return s.finish(out, limit);
}

std::string inflate_one(corows::inflate_stream& s, const bytes& payload) {
    corows::byte_buffer out;
    auto ec = inflate_message(s, {payload}, out);
    BOOST_TEST(!ec, ec.message());
    return std::string(out.view());
}

// A whole raw-deflate message as zlib makes it (Z_SYNC_FLUSH, tail removed), independent of
// deflate_stream so the two are tested against each other.
bytes zlib_compress(const std::string& text, int level = 6) {
    z_stream zs{};
    BOOST_TEST_REQUIRE(deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    bytes out(deflateBound(&zs, text.size()) + 16);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    zs.avail_in = static_cast<uInt>(text.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    BOOST_TEST_REQUIRE(deflate(&zs, Z_SYNC_FLUSH) == Z_OK);
    BOOST_TEST_REQUIRE(zs.avail_in == 0u);
    // What zlib wrote, less the 00 00 FF FF tail; erase, which never grows the vector, keeps
    // g++ 12 at -O1 from warning about a memset of "up to 2^64 bytes" in resize().
    std::size_t produced = out.size() - zs.avail_out;
    BOOST_TEST_REQUIRE(produced >= 4u);
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(produced - 4), out.end());
    deflateEnd(&zs);
    return out;
}

std::string random_text(std::mt19937& rng, std::size_t n) {
    static const char words[][8] = {"alpha", "beta", "gamma", "delta", "\"id\":", "{", "}", ", "};
    std::string s;
    while (s.size() < n) s += words[rng() % 8];
    s.resize(n);
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(inflate_stream)

BOOST_AUTO_TEST_CASE(rfc7692_single_message) {
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
}

BOOST_AUTO_TEST_CASE(rfc7692_context_takeover) {
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
}

BOOST_AUTO_TEST_CASE(no_context_takeover_resets_the_window) {
    corows::inflate_stream s(15, true);
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
    // The second RFC message refers back to the first: without a window it cannot decode.
    corows::byte_buffer out;
    BOOST_TEST((inflate_message(s, {hello_again}, out) == corows::error::inflate_failed));
    corows::inflate_stream fresh(15, true);
    BOOST_TEST(inflate_one(fresh, hello_compressed) == "Hello");
    BOOST_TEST(inflate_one(fresh, hello_compressed) == "Hello");
}

BOOST_AUTO_TEST_CASE(rfc7692_stored_block) {
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, hello_stored) == "Hello");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello"); // the stored bytes are in the window
}

BOOST_AUTO_TEST_CASE(rfc7692_bfinal_block) {
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, hello_bfinal) == "Hello");
    // The window survives the end of the zlib stream.
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
    BOOST_TEST(inflate_one(s, hello_bfinal) == "Hello");
}

BOOST_AUTO_TEST_CASE(bfinal_block_without_trailing_byte_is_tolerated) {
    corows::inflate_stream s;
    bytes bare(hello_bfinal.begin(), hello_bfinal.end() - 1);
    BOOST_TEST(inflate_one(s, bare) == "Hello");
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
}

BOOST_AUTO_TEST_CASE(final_empty_stored_block_completed_by_the_tail) {
    // "Hello" as a non-final fixed block, then the 3 header bits of a *final* stored block:
    // the implied tail completes it and ends the zlib stream; the window must survive.
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, {0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x04}) == "Hello");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
}

BOOST_AUTO_TEST_CASE(rfc7692_fragments_at_every_split_point) {
    // §7.2.3.1 sends f2 48 cd | c9 c9 07 00; try every cut, and every pair of cuts.
    for (const bytes* msg : {&hello_compressed, &hello_stored, &hello_bfinal}) {
        const bytes& m = *msg;
        for (std::size_t i = 0; i <= m.size(); ++i) {
            for (std::size_t j = i; j <= m.size(); ++j) {
                corows::inflate_stream s;
                corows::byte_buffer out;
                auto ec = inflate_message(
                    s, {bytes(m.begin(), m.begin() + i), bytes(m.begin() + i, m.begin() + j),
                        bytes(m.begin() + j, m.end())},
                    out);
                BOOST_TEST(!ec);
                BOOST_TEST(out.view() == "Hello", "cuts " << i << "," << j);
                BOOST_TEST(inflate_one(s, hello_again) == "Hello");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(empty_messages) {
    corows::inflate_stream s;
    BOOST_TEST(inflate_one(s, {0x00}) == ""); // RFC 7692 §7.2.3.6
    BOOST_TEST(inflate_one(s, {}) == "");     // an empty payload takes no tail
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
    BOOST_TEST(inflate_one(s, {0x00}) == "");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
    // Empty frames before and between data change nothing.
    corows::byte_buffer out;
    BOOST_TEST(!inflate_message(s, {{}, {0xf2, 0x00}, {}, {0x11, 0x00, 0x00}, {}}, out));
    BOOST_TEST(out.view() == "Hello");
}

BOOST_AUTO_TEST_CASE(invalid_data_fails) {
    for (const bytes& bad : {
             bytes{0x07},                               // BTYPE 11 is reserved
             bytes{0xff, 0xff, 0xff, 0xff},
             bytes{0x00, 0x05, 0x00, 0x00, 0x00},       // stored block: NLEN != ~LEN
             bytes{0xf2, 0x48, 0xcd},                    // stops inside a block
             bytes{0x00, 0x05, 0x00, 0xfa, 0xff},       // stored block cut short (the tail
                                                        // gives it 4 of its 5 bytes)
             bytes{0xf2, 0x00, 0x11, 0x00, 0x00},       // refers to a window that is empty
         }) {
        corows::inflate_stream s;
        corows::byte_buffer out;
        BOOST_TEST((inflate_message(s, {bad}, out) == corows::error::inflate_failed));
    }
}

BOOST_AUTO_TEST_CASE(random_garbage_fails_or_decodes_without_crashing) {
    std::mt19937 rng(7);
    int failures = 0;
    for (int i = 0; i < 2000; ++i) {
        bytes junk(1 + rng() % 64);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        corows::inflate_stream s;
        corows::byte_buffer out;
        auto ec = inflate_message(s, {junk}, out, 1 << 16);
        if (ec) {
            ++failures;
            BOOST_TEST((ec == corows::error::inflate_failed || ec == corows::error::message_too_big));
        }
        BOOST_TEST(out.size() <= (1u << 16) + 1);
    }
    BOOST_TEST(failures > 1900); // random bytes are almost never a valid flushed message
}

BOOST_AUTO_TEST_CASE(one_byte_per_write_gives_the_same_output) {
    std::mt19937 rng(11);
    corows::deflate_stream d;
    corows::inflate_stream whole;
    corows::inflate_stream bytewise;
    for (int i = 0; i < 50; ++i) {
        std::string text = random_text(rng, 1 + rng() % 3000);
        std::error_code ec;
        auto payload = d.compress(corows::as_bytes(text), ec);
        BOOST_TEST_REQUIRE(!ec);
        corows::byte_buffer a;
        BOOST_TEST_REQUIRE(!inflate_message(whole, {bytes(payload.begin(), payload.end())}, a));
        corows::byte_buffer b;
        for (auto byte : payload) BOOST_TEST_REQUIRE(!bytewise.write({&byte, 1}, b, SIZE_MAX));
        BOOST_TEST_REQUIRE(!bytewise.finish(b, SIZE_MAX));
        BOOST_TEST_REQUIRE(a.view() == text);
        BOOST_TEST_REQUIRE(b.view() == text);
    }
}

BOOST_AUTO_TEST_CASE(limit_is_exact) {
    std::mt19937 rng(3);
    for (std::size_t n : {1u, 5u, 100u, 4095u, 4096u, 4097u, 70000u}) {
        std::string text = random_text(rng, n);
        bytes payload = zlib_compress(text);
        {
            corows::inflate_stream s;
            corows::byte_buffer out;
            BOOST_TEST(!inflate_message(s, {payload}, out, n), n);
            BOOST_TEST(out.view() == text);
        }
        {
            corows::inflate_stream s;
            corows::byte_buffer out;
            BOOST_TEST((inflate_message(s, {payload}, out, n - 1) == corows::error::message_too_big), n);
            BOOST_TEST(out.size() <= n);
        }
        // The limit covers the whole buffer, including what was in it before.
        {
            corows::inflate_stream s;
            corows::byte_buffer out;
            out.append(corows::as_bytes("xyz"));
            BOOST_TEST(!inflate_message(s, {payload}, out, n + 3), n);
            corows::inflate_stream s2;
            out.truncate(3);
            BOOST_TEST((inflate_message(s2, {payload}, out, n + 2) == corows::error::message_too_big));
        }
    }
}

BOOST_AUTO_TEST_CASE(bomb_stops_early) {
    std::string zeros(1 << 20, '\0');
    bytes payload = zlib_compress(zeros, 9);
    BOOST_TEST(payload.size() < 2000u);
    const std::size_t limit = 64 * 1024;
    corows::inflate_stream s;
    corows::byte_buffer out;
    // Fed in small frames, as a peer would send it, and all at once.
    std::error_code ec;
    for (std::size_t i = 0; i < payload.size() && !ec; i += 100)
        ec = s.write({payload.data() + i, std::min<std::size_t>(100, payload.size() - i)}, out, limit);
    BOOST_TEST((ec == corows::error::message_too_big));
    // Stopped at the limit; a full buffer is not grown just to hold the byte that proves it.
    BOOST_TEST(out.size() >= limit);
    BOOST_TEST(out.size() <= limit + 1);
    BOOST_TEST(out.capacity() <= limit);
    corows::inflate_stream s2;
    corows::byte_buffer out2;
    BOOST_TEST((s2.write(payload, out2, limit) == corows::error::message_too_big));
    BOOST_TEST(out2.capacity() <= limit);
}

BOOST_AUTO_TEST_CASE(inflates_into_reused_storage) {
    corows::inflate_stream s;
    corows::byte_buffer out;
    out.prepare(1 << 16);
    auto* before = out.data().data();
    BOOST_TEST(!inflate_message(s, {hello_compressed}, out));
    BOOST_TEST(out.view() == "Hello");
    BOOST_TEST(out.data().data() == before); // written in place, no reallocation
}

BOOST_AUTO_TEST_CASE(window_bits_are_clamped_and_reported) {
    BOOST_TEST(corows::inflate_stream(3).window_bits() == 8);
    BOOST_TEST(corows::inflate_stream(8).window_bits() == 8);
    BOOST_TEST(corows::inflate_stream(20).window_bits() == 15);
    BOOST_TEST(corows::inflate_stream(10, true).no_context_takeover());
    BOOST_TEST(!corows::inflate_stream(10, false).no_context_takeover());
}

BOOST_AUTO_TEST_CASE(small_window_rejects_far_references) {
    // 300 distinct bytes, then the same 300 again: a 15-bit compressor refers 300 back, which
    // a 256-byte window cannot resolve, and a 9-bit window (512) can.
    std::string block;
    std::mt19937 rng(5);
    for (int i = 0; i < 300; ++i) block += static_cast<char>('a' + rng() % 26);
    bytes payload = zlib_compress(block + block);
    corows::inflate_stream nine(9);
    BOOST_TEST(inflate_one(nine, payload) == block + block);
    // zlib checks distances against the history it holds plus what the current call wrote,
    // so one input byte per write keeps the current call's output too short to hide it.
    corows::inflate_stream eight(8);
    corows::byte_buffer out;
    std::error_code ec;
    for (std::size_t i = 0; i < payload.size() && !ec; ++i) ec = eight.write({&payload[i], 1}, out, SIZE_MAX);
    if (!ec) ec = eight.finish(out, SIZE_MAX);
    BOOST_TEST((ec == corows::error::inflate_failed));
}

BOOST_AUTO_TEST_CASE(move_keeps_the_context) {
    corows::inflate_stream a;
    BOOST_TEST(inflate_one(a, hello_compressed) == "Hello");
    corows::inflate_stream b(std::move(a));
    BOOST_TEST(inflate_one(b, hello_again) == "Hello");
    corows::inflate_stream c(9, true);
    c = std::move(b);
    BOOST_TEST(inflate_one(c, hello_again) == "Hello");
    BOOST_TEST(c.window_bits() == 15);
}

BOOST_AUTO_TEST_CASE(reset_abandons_a_message) {
    corows::inflate_stream s;
    corows::byte_buffer out;
    BOOST_TEST(!s.write(bytes{0xf2, 0x48, 0xcd}, out, SIZE_MAX));
    s.reset();
    BOOST_TEST(inflate_one(s, hello_compressed) == "Hello");
    BOOST_TEST(inflate_one(s, hello_again) == "Hello");
}

BOOST_AUTO_TEST_SUITE_END()
