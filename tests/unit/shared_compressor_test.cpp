// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/protocol/inflate_stream.hpp>

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;

bytes str(std::string_view s) { return bytes(s.begin(), s.end()); }

bytes compress(const bytes& in, const corows::detail::shared_deflate_settings& s) {
    std::error_code ec;
    auto out = corows::detail::compress_shared(in, s, ec);
    BOOST_TEST_REQUIRE(!ec);
    return bytes(out.begin(), out.end());
}

// Inflates one payload the way a peer does (RFC 7692 §7.2.2) with zlib itself: a fresh raw
// inflater of exactly `bits`, the payload plus 00 00 FF FF. Returns nullopt unless the data
// inflates completely and ends on a block boundary (or, if `final_ok`, in a final block).
std::optional<bytes> zlib_inflate(const bytes& payload, int bits, bool final_ok = false) {
    z_stream zs{};
    if (inflateInit2(&zs, -bits) != Z_OK) return std::nullopt;
    bytes in = payload;
    in.insert(in.end(), {0x00, 0x00, 0xff, 0xff});
    bytes out(1 << 20);
    zs.next_in = in.data();
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&zs, Z_SYNC_FLUSH);
    bool ok = (rc == Z_OK && zs.avail_in == 0 && (zs.data_type & 128) != 0) ||
              (final_ok && rc == Z_STREAM_END);
    out.resize(zs.total_out);
    inflateEnd(&zs);
    if (!ok) return std::nullopt;
    return out;
}

std::string json(std::mt19937& rng, std::size_t size) {
    std::string s = "{\"items\":[";
    while (s.size() < size) {
        s += "{\"id\":" + std::to_string(rng() % 100000) + ",\"name\":\"user" +
             std::to_string(rng() % 1000) + "\",\"ok\":" + (rng() % 2 ? "true" : "false") + "},";
    }
    s.resize(size);
    return s;
}

corows::detail::shared_deflate_settings settings(int bits, int level, bool libdeflate,
                                                 bool final_block = false) {
    corows::detail::shared_deflate_settings s;
    s.window_bits = bits;
    s.level = level;
    s.use_libdeflate = libdeflate;
    s.final_block = final_block;
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_compressor)

// "Hello" without context takeover, message after message: zlib gives RFC 7692 §7.2.3.1's
// bytes; libdeflate stores so short an input, and the rewrite gives §7.2.3.3's bytes.
BOOST_AUTO_TEST_CASE(rfc_hello_exact_bytes) {
    const bytes hello = str("Hello");
    const bytes fixed{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    const bytes stored{0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00};
    for (int i = 0; i < 3; ++i) { // nothing carries over from one message to the next
        BOOST_TEST(compress(hello, settings(15, 6, false)) == fixed);
        BOOST_TEST(compress(hello, settings(15, 6, true)) ==
                   (corows::detail::libdeflate_available() ? stored : fixed));
    }
}

// RFC 7692 §7.2.3.4: the BFINAL form, sent only when asked for and only by libdeflate.
// zlib and our own inflater take it, message after message.
BOOST_AUTO_TEST_CASE(final_block_form) {
    if (!corows::detail::libdeflate_available()) return;
    auto out = compress(str("Hello"), settings(15, 6, true, true));
    BOOST_TEST(out == (bytes{0x01, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
    std::mt19937 rng(1);
    corows::inflate_stream in(15, true);
    for (int i = 0; i < 50; ++i) {
        auto text = i == 0 ? std::string("Hello") : json(rng, 1 + rng() % 20000);
        bytes msg(text.begin(), text.end());
        out = compress(msg, settings(15, 1 + i % 9, true, true));
        BOOST_TEST_REQUIRE(!out.empty());
        auto back = zlib_inflate(out, 15, true);
        BOOST_TEST_REQUIRE(back.has_value());
        BOOST_TEST_REQUIRE((*back == msg));
        corows::byte_buffer m;
        BOOST_TEST_REQUIRE(!in.write(out, m, 1 << 20));
        BOOST_TEST_REQUIRE(!in.finish(m, 1 << 20));
        BOOST_TEST_REQUIRE((bytes(m.data().begin(), m.data().end()) == msg));
    }
}

BOOST_AUTO_TEST_CASE(empty_message_is_one_zero_byte) {
    for (bool lib : {false, true})
        BOOST_TEST(compress({}, settings(15, 3, lib)) == bytes{0x00});
}

// Every output of libdeflate (rewritten to the flush form) and of zlib inflates with zlib under
// the negotiated window and no context: sizes around every window, text and random bytes.
BOOST_AUTO_TEST_CASE(outputs_inflate_under_the_negotiated_window) {
    std::mt19937 rng(7);
    int checked = 0;
    for (int bits = 8; bits <= 15; ++bits) {
        std::size_t w = std::size_t{1} << bits;
        for (std::size_t size : {std::size_t{1}, std::size_t{63}, std::size_t{200}, w - 1, w, w + 1,
                                 2 * w + 17, std::size_t{40000}}) {
            for (int kind = 0; kind < 2; ++kind) {
                bytes msg;
                if (kind == 0) {
                    auto s = json(rng, size);
                    msg.assign(s.begin(), s.end());
                } else {
                    msg.resize(size);
                    for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
                }
                for (bool lib : {false, true})
                    for (int level : {1, 3, 6, 9}) {
                        auto out = compress(msg, settings(bits, level, lib));
                        auto back = zlib_inflate(out, bits);
                        BOOST_TEST_REQUIRE(back.has_value(), "bits " << bits << " size " << size
                                                                      << " lib " << lib << " level " << level);
                        BOOST_TEST_REQUIRE((*back == msg));
                        ++checked;
                    }
            }
        }
    }
    BOOST_TEST(checked == 8 * 8 * 2 * 2 * 4);
}

// libdeflate's one-block outputs end at every bit position: whether the rewrite appends a
// zero byte (fewer than three padding bits) or not, zlib reads the flush form back exactly.
BOOST_AUTO_TEST_CASE(every_padding_after_a_single_block) {
    if (!corows::detail::libdeflate_available()) return;
    std::mt19937 rng(13);
    int appended = 0, as_is = 0;
    for (std::size_t size = 1; size <= 400; ++size)
        for (int level : {1, 6, 9}) {
            auto text = json(rng, size);
            bytes msg(text.begin(), text.end());
            auto flush = compress(msg, settings(15, level, true));
            auto final_form = compress(msg, settings(15, level, true, true));
            BOOST_TEST_REQUIRE((flush.size() == final_form.size() || flush.size() == final_form.size() + 1));
            (flush.size() > final_form.size() ? appended : as_is) += 1;
            auto back = zlib_inflate(flush, 15);
            BOOST_TEST_REQUIRE(back.has_value(), "size " << size << " level " << level);
            BOOST_TEST_REQUIRE((*back == msg));
        }
    BOOST_TEST(appended > 100);
    BOOST_TEST(as_is > 100);
}

// Many writers take turns on one thread's compressors with different settings; each message
// stands alone, so each inflates with a fresh inflater whatever ran in between.
BOOST_AUTO_TEST_CASE(many_writers_in_turn) {
    std::mt19937 rng(11);
    const corows::detail::shared_deflate_settings writers[] = {
        settings(15, 3, true), settings(15, 3, false), settings(9, 1, false),
        settings(12, 6, true), settings(10, 9, false), settings(15, 1, true),
    };
    for (int round = 0; round < 300; ++round) {
        const auto& s = writers[rng() % std::size(writers)];
        auto text = json(rng, 1 + rng() % 5000);
        bytes msg(text.begin(), text.end());
        auto out = compress(msg, s);
        auto back = zlib_inflate(out, s.window_bits);
        BOOST_TEST_REQUIRE(back.has_value());
        BOOST_TEST_REQUIRE((*back == msg));
    }
}

BOOST_AUTO_TEST_CASE(libdeflate_is_no_slower_in_bytes) {
    if (!corows::detail::libdeflate_available()) return;
    std::mt19937 rng(3);
    std::size_t lib = 0, zl = 0;
    for (int i = 0; i < 50; ++i) {
        auto text = json(rng, 1024);
        bytes msg(text.begin(), text.end());
        lib += compress(msg, settings(15, 6, true)).size();
        zl += compress(msg, settings(15, 6, false)).size();
    }
    // Measured: libdeflate's output is a little smaller; allow it to be 3% larger.
    BOOST_TEST(lib * 100 <= zl * 103);
}

BOOST_AUTO_TEST_SUITE_END()
