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

bytes to_vec(std::span<const std::uint8_t> s) { return {s.begin(), s.end()}; }

bytes compress(corows::deflate_stream& d, std::string_view text) {
    std::error_code ec;
    auto out = d.compress(corows::as_bytes(text), ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    return to_vec(out);
}

std::string inflate(corows::inflate_stream& s, const bytes& payload) {
    corows::byte_buffer out;
    auto ec = s.write(payload, out, SIZE_MAX);
    if (!ec) ec = s.finish(out, SIZE_MAX);
    BOOST_TEST(!ec, ec.message());
    return std::string(out.view());
}

// JSON-like messages where ids, names and values change from one message to the next.
class json_source {
public:
    explicit json_source(unsigned seed) : rng_(seed) {}
    std::string next() {
        static const char* const names[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
        static const char* const events[] = {"login", "logout", "trade", "quote", "heartbeat"};
        std::string s = "{\"id\":" + std::to_string(id_++) + ",\"event\":\"" + events[rng_() % 5] +
                        "\",\"user\":\"" + names[rng_() % 6] + std::to_string(rng_() % 1000) +
                        "\",\"items\":[";
        unsigned n = rng_() % 12;
        for (unsigned i = 0; i < n; ++i) {
            if (i) s += ',';
            s += "{\"sku\":" + std::to_string(rng_() % 100000) + ",\"price\":" +
                 std::to_string(rng_() % 10000) + "." + std::to_string(rng_() % 100) +
                 ",\"qty\":" + std::to_string(rng_() % 50) + "}";
        }
        s += "],\"ok\":" + std::string(rng_() % 2 ? "true" : "false") + "}";
        return s;
    }

private:
    std::mt19937 rng_;
    unsigned id_ = 1000;
};

// Inflates with raw zlib and a window of 2^bits, one output byte per call, so the only
// history zlib can resolve a distance against is its window: any reference further back than
// the window allows is reported as Z_DATA_ERROR ("invalid distance too far back").
bool strict_inflate(z_stream& zs, const bytes& payload, std::string& out) {
    bytes in = payload;
    in.insert(in.end(), {0x00, 0x00, 0xff, 0xff});
    zs.next_in = in.data();
    zs.avail_in = static_cast<uInt>(in.size());
    for (;;) {
        unsigned char c;
        zs.next_out = &c;
        zs.avail_out = 1;
        int rc = inflate(&zs, Z_SYNC_FLUSH);
        if (rc == Z_DATA_ERROR) return false;
        if (zs.avail_out == 0) out += static_cast<char>(c);
        if (rc == Z_BUF_ERROR || (zs.avail_in == 0 && zs.avail_out == 1)) return true;
        if (rc != Z_OK) return false;
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(deflate_stream)

BOOST_AUTO_TEST_CASE(rfc7692_hello) {
    // §7.2.3.1 and §7.2.3.2: zlib's output equals the RFC's bytes at every level but 0.
    for (int level : {-1, 1, 6, 9}) {
        corows::deflate_stream d(15, false, level);
        BOOST_TEST((compress(d, "Hello") == bytes{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}), level);
        BOOST_TEST((compress(d, "Hello") == bytes{0xf2, 0x00, 0x11, 0x00, 0x00}), level);
    }
}

BOOST_AUTO_TEST_CASE(no_context_takeover_repeats_the_first_output) {
    corows::deflate_stream d(15, true);
    for (int i = 0; i < 3; ++i)
        BOOST_TEST((compress(d, "Hello") == bytes{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
}

BOOST_AUTO_TEST_CASE(level_zero_sends_stored_blocks) {
    corows::deflate_stream d(15, false, 0);
    // §7.2.3.3's stored "Hello", with the empty stored block's header bits left at the end.
    bytes got = compress(d, "Hello");
    BOOST_TEST((got == bytes{0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00}));
    corows::inflate_stream s;
    BOOST_TEST(inflate(s, got) == "Hello");
}

BOOST_AUTO_TEST_CASE(empty_messages) {
    corows::deflate_stream d;
    corows::inflate_stream s;
    // §7.2.3.6: an empty message is the single byte 00, first or after others.
    BOOST_TEST((compress(d, "") == bytes{0x00}));
    BOOST_TEST(inflate(s, {0x00}) == "");
    bytes hello = compress(d, "Hello");
    BOOST_TEST(inflate(s, hello) == "Hello");
    BOOST_TEST((compress(d, "") == bytes{0x00}));
    BOOST_TEST((compress(d, "") == bytes{0x00}));
    BOOST_TEST(inflate(s, {0x00}) == "");
    BOOST_TEST((compress(d, "Hello") == bytes{0xf2, 0x00, 0x11, 0x00, 0x00}));
}

BOOST_AUTO_TEST_CASE(json_round_trip_with_context_takeover) {
    json_source src(42);
    corows::deflate_stream d;
    corows::inflate_stream s;
    corows::deflate_stream alone(15, true);
    std::size_t in_total = 0, out_total = 0, alone_total = 0;
    for (int i = 0; i < 10000; ++i) {
        std::string msg = src.next();
        bytes c = compress(d, msg);
        in_total += msg.size();
        out_total += c.size();
        alone_total += compress(alone, msg).size();
        BOOST_TEST_REQUIRE(inflate(s, c) == msg, "message " << i);
    }
    // The shared window must pay: these messages compress far better than alone.
    BOOST_TEST(out_total * 3 < in_total);
    BOOST_TEST(out_total * 10 < alone_total * 7);
}

BOOST_AUTO_TEST_CASE(json_round_trip_without_context_takeover) {
    json_source src(43);
    corows::deflate_stream d(15, true);
    corows::inflate_stream s(15, true);
    std::size_t in_total = 0, out_total = 0;
    for (int i = 0; i < 10000; ++i) {
        std::string msg = src.next();
        bytes c = compress(d, msg);
        in_total += msg.size();
        out_total += c.size();
        BOOST_TEST_REQUIRE(inflate(s, c) == msg, "message " << i);
        if (i % 10 == 0) {
            // After the reset the stream is as good as new: same bytes as a fresh one.
            corows::deflate_stream fresh(15, true);
            BOOST_TEST_REQUIRE((compress(fresh, msg) == c), "message " << i);
            corows::inflate_stream fresh_in(15, true);
            BOOST_TEST_REQUIRE(inflate(fresh_in, c) == msg);
        }
    }
    BOOST_TEST(out_total < in_total);
}

BOOST_AUTO_TEST_CASE(json_round_trip_every_window_and_mem_level) {
    json_source src(44);
    for (int bits = 8; bits <= 15; ++bits) {
        for (int mem : {1, 4, 8, 9}) {
            for (bool nct : {false, true}) {
                corows::deflate_stream d(bits, nct, 6, mem);
                corows::inflate_stream s(bits, nct);
                BOOST_TEST(d.window_bits() == bits);
                for (int i = 0; i < 150; ++i) {
                    std::string msg = src.next();
                    BOOST_TEST_REQUIRE(inflate(s, compress(d, msg)) == msg,
                                       "bits " << bits << " mem " << mem << " nct " << nct);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(window_8_output_fits_a_256_byte_window) {
    // The strict checker must catch a reference beyond 256 bytes: a 10-bit compressor makes
    // one when a 300-byte run repeats.
    std::mt19937 rng(9);
    std::string block;
    for (int i = 0; i < 300; ++i) block += static_cast<char>('a' + rng() % 26);
    {
        corows::deflate_stream d(10);
        z_stream zs{};
        BOOST_TEST_REQUIRE(inflateInit2(&zs, -8) == Z_OK);
        std::string out;
        BOOST_TEST(!strict_inflate(zs, compress(d, block + block), out));
        inflateEnd(&zs);
    }
    // The same input and 10,000 JSON messages from an 8-bit stream decode within 256 bytes,
    // at every level and across messages (context takeover).
    for (int level : {1, 6, 9}) {
        corows::deflate_stream d(8, false, level);
        BOOST_TEST(d.window_bits() == 8);
        z_stream zs{};
        BOOST_TEST_REQUIRE(inflateInit2(&zs, -8) == Z_OK);
        std::string out;
        BOOST_TEST_REQUIRE(strict_inflate(zs, compress(d, block + block), out));
        BOOST_TEST_REQUIRE(out == block + block);
        json_source src(45);
        for (int i = 0; i < (level == 6 ? 10000 : 1000); ++i) {
            std::string msg = src.next();
            out.clear();
            BOOST_TEST_REQUIRE(strict_inflate(zs, compress(d, msg), out), "message " << i);
            BOOST_TEST_REQUIRE(out == msg);
        }
        inflateEnd(&zs);
    }
}

BOOST_AUTO_TEST_CASE(message_in_parts) {
    json_source src(46);
    corows::deflate_stream d;
    corows::deflate_stream whole;
    corows::inflate_stream s;
    std::mt19937 rng(1);
    for (int i = 0; i < 500; ++i) {
        std::string msg = src.next();
        // Cut the message in 1 to 4 parts, sometimes with empty ones; each part's output is
        // a frame, inflated as it arrives.
        corows::byte_buffer out;
        std::size_t pos = 0;
        unsigned parts = 1 + rng() % 4;
        for (unsigned p = 0; p < parts; ++p) {
            bool fin = p + 1 == parts;
            std::size_t len = fin ? msg.size() - pos : rng() % (msg.size() - pos + 1);
            std::error_code ec;
            auto frame = d.compress_part(corows::as_bytes(msg).subspan(pos, len), fin, ec);
            BOOST_TEST_REQUIRE(!ec);
            BOOST_TEST_REQUIRE(!s.write(frame, out, SIZE_MAX));
            pos += len;
        }
        BOOST_TEST_REQUIRE(!s.finish(out, SIZE_MAX));
        BOOST_TEST_REQUIRE(out.view() == msg, "message " << i);
        // A message in one part is exactly compress().
        if (parts == 1) {
            corows::deflate_stream fresh;
            std::error_code ec;
            bytes a = to_vec(fresh.compress_part(corows::as_bytes(msg), true, ec));
            corows::deflate_stream fresh2;
            BOOST_TEST((a == compress(fresh2, msg)));
        }
    }
}

BOOST_AUTO_TEST_CASE(empty_final_part) {
    corows::deflate_stream d;
    corows::inflate_stream s;
    std::error_code ec;
    corows::byte_buffer out;
    auto f1 = d.compress_part(corows::as_bytes("Hello, "), false, ec);
    BOOST_TEST(!s.write(f1, out, SIZE_MAX));
    auto f2 = d.compress_part({}, true, ec);
    BOOST_TEST(!ec);
    BOOST_TEST(!f2.empty());
    BOOST_TEST(!s.write(f2, out, SIZE_MAX));
    BOOST_TEST(!s.finish(out, SIZE_MAX));
    BOOST_TEST(out.view() == "Hello, ");
    // An all-empty message in parts is the single 00 byte.
    BOOST_TEST(d.compress_part({}, false, ec).empty());
    BOOST_TEST((to_vec(d.compress_part({}, true, ec)) == bytes{0x00}));
}

BOOST_AUTO_TEST_CASE(output_buffer_is_reused_and_shrinks_after_a_huge_message) {
    corows::deflate_stream d;
    std::error_code ec;
    std::string small(2000, 'x');
    auto a = d.compress(corows::as_bytes(small), ec);
    auto* storage = a.data();
    auto b = d.compress(corows::as_bytes(small), ec);
    BOOST_TEST(b.data() == storage); // same buffer, no reallocation
    // Incompressible 4 MiB: the output needs more than 1 MiB of storage ...
    std::mt19937 rng(2);
    std::string big(4 << 20, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    corows::inflate_stream s;
    auto c = d.compress(corows::as_bytes(big), ec);
    BOOST_TEST(!ec);
    BOOST_TEST(c.size() > big.size());
    BOOST_TEST(d.output_capacity() > corows::deflate_stream::max_retained_output);
    // ... which is given back before the next ordinary message.
    d.compress(corows::as_bytes(small), ec);
    BOOST_TEST(d.output_capacity() <= 64u * 1024);
}

BOOST_AUTO_TEST_CASE(large_messages_round_trip) {
    std::mt19937 rng(4);
    corows::deflate_stream d;
    corows::inflate_stream s;
    for (std::size_t n : {65535u, 65536u, 1u << 20, 3u << 20}) {
        std::string text(n, '\0');
        for (auto& c : text) c = static_cast<char>('a' + rng() % 4);
        BOOST_TEST(inflate(s, compress(d, text)) == text);
    }
}

BOOST_AUTO_TEST_CASE(move_keeps_the_context) {
    corows::deflate_stream a;
    compress(a, "Hello");
    corows::deflate_stream b(std::move(a));
    BOOST_TEST((compress(b, "Hello") == bytes{0xf2, 0x00, 0x11, 0x00, 0x00}));
    corows::deflate_stream c(9, true);
    c = std::move(b);
    // The third "Hello" in a row: zlib refers back again, now with a shorter code.
    BOOST_TEST((compress(c, "Hello") == bytes{0x02, 0x13, 0x00, 0x00}));
    BOOST_TEST(c.window_bits() == 15);
    BOOST_TEST(!c.no_context_takeover());
}

BOOST_AUTO_TEST_CASE(reset_forgets_the_window) {
    corows::deflate_stream d;
    compress(d, "Hello");
    d.reset();
    BOOST_TEST((compress(d, "Hello") == bytes{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
}

BOOST_AUTO_TEST_CASE(parameters_are_clamped) {
    BOOST_TEST(corows::deflate_stream(3).window_bits() == 8);
    BOOST_TEST(corows::deflate_stream(16).window_bits() == 15);
    corows::deflate_stream d(15, false, 42, 0);
    corows::inflate_stream s;
    BOOST_TEST(inflate(s, compress(d, "clamped level and memLevel")) == "clamped level and memLevel");
}

BOOST_AUTO_TEST_SUITE_END()
