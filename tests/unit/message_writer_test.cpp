// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/protocol/inflate_stream.hpp>
#include <corows/protocol/mask.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/message_writer.hpp>

#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::message_kind;
using corows::role;

bytes to_vec(const corows::byte_buffer& b) { return bytes(b.data().begin(), b.data().end()); }

bytes str(std::string_view s) { return bytes(s.begin(), s.end()); }

} // namespace

BOOST_AUTO_TEST_SUITE(message_writer)

BOOST_AUTO_TEST_CASE(server_frames_are_exact_rfc_bytes) {
    corows::message_writer w(corows::writer_config{role::server, 0});
    corows::byte_buffer out;
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    BOOST_TEST(to_vec(out) == (bytes{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
    out.clear();
    w.append_control(out, corows::opcode::ping, str("Hello"));
    BOOST_TEST(to_vec(out) == (bytes{0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
    out.clear();
    // 256 bytes of binary: 16-bit length (RFC 6455 §5.7).
    BOOST_REQUIRE(!w.append_message(out, message_kind::binary, bytes(256, 0xAB), true));
    BOOST_TEST(out.size() == 4u + 256u);
    BOOST_TEST(to_vec(out)[0] == 0x82);
    BOOST_TEST(to_vec(out)[1] == 0x7E);
    BOOST_TEST(to_vec(out)[2] == 0x01);
    BOOST_TEST(to_vec(out)[3] == 0x00);
}

BOOST_AUTO_TEST_CASE(fragmentation_splits_at_frame_size) {
    corows::message_writer w(corows::writer_config{role::server, 2});
    corows::byte_buffer out;
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    BOOST_TEST(to_vec(out) == (bytes{0x01, 0x02, 'H', 'e', 0x00, 0x02, 'l', 'l', 0x80, 0x01, 'o'}));
    BOOST_TEST(w.last_message_frames() == 3u);
    // Exactly a frame's worth, and nothing: one frame each.
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hi"), true));
    BOOST_TEST(w.last_message_frames() == 1u);
    BOOST_REQUIRE(!w.append_message(out, message_kind::binary, {}, true));
    BOOST_TEST(w.last_message_frames() == 1u);
    BOOST_REQUIRE(!w.append_message(out, message_kind::binary, str("abcd"), true));
    BOOST_TEST(w.last_message_frames() == 2u);
}

BOOST_AUTO_TEST_CASE(client_frames_are_masked_with_fresh_keys) {
    corows::message_writer w(corows::writer_config{role::client, 0});
    corows::byte_buffer out;
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    auto v = to_vec(out);
    BOOST_REQUIRE(v.size() == 22u);
    BOOST_TEST(v[0] == 0x81);
    BOOST_TEST(v[1] == 0x85);
    bytes k1(v.begin() + 2, v.begin() + 6), k2(v.begin() + 13, v.begin() + 17);
    BOOST_TEST(k1 != k2);
    for (int i = 0; i < 5; ++i) BOOST_TEST(static_cast<char>(v[6 + i] ^ k1[i % 4]) == "Hello"[i]);
    for (int i = 0; i < 5; ++i) BOOST_TEST(static_cast<char>(v[17 + i] ^ k2[i % 4]) == "Hello"[i]);
}

BOOST_AUTO_TEST_CASE(compression_follows_rfc7692_and_the_threshold) {
    corows::message_writer w(corows::writer_config{role::server, 0});
    corows::deflate_config d;
    d.threshold = 4;
    w.enable_deflate(d);
    BOOST_TEST(!w.deflater_allocated());
    corows::byte_buffer out;
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("abc"), true));
    BOOST_TEST(to_vec(out) == (bytes{0x81, 0x03, 'a', 'b', 'c'})); // under the threshold
    BOOST_TEST(!w.deflater_allocated());
    out.clear();
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), false)); // opted out
    BOOST_TEST(to_vec(out)[0] == 0x81);
    out.clear();
    // RFC 7692 §7.2.3.1 then §7.2.3.2 (the window is shared).
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    BOOST_TEST(to_vec(out) == (bytes{0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
    BOOST_TEST(w.deflater_allocated());
    out.clear();
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    BOOST_TEST(to_vec(out) == (bytes{0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00}));
}

// Without context takeover every message comes from the thread's shared compressor: the
// writer allocates nothing, and each "Hello" is §7.2.3.1's bytes again, fragmented or not.
BOOST_AUTO_TEST_CASE(no_context_takeover_uses_the_shared_compressor) {
    for (std::size_t frame_size : {std::size_t{0}, std::size_t{3}})
        for (bool lib : {false, true}) {
            corows::message_writer w(corows::writer_config{role::server, frame_size});
            corows::deflate_config d;
            d.send.no_context_takeover = true;
            d.use_libdeflate = lib;
            w.enable_deflate(d);
            for (int i = 0; i < 3; ++i) {
                corows::byte_buffer out;
                BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
                if (frame_size == 0 && lib && corows::detail::libdeflate_available()) // §7.2.3.3's stored form
                    BOOST_TEST(to_vec(out) == (bytes{0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65,
                                                     0x6c, 0x6c, 0x6f, 0x00}));
                else if (frame_size == 0)
                    BOOST_TEST(to_vec(out) == (bytes{0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
                else
                    BOOST_TEST(to_vec(out) == (bytes{0x41, 0x03, 0xf2, 0x48, 0xcd, 0x00, 0x03, 0xc9,
                                                     0xc9, 0x07, 0x80, 0x01, 0x00}));
                BOOST_TEST(!w.deflater_allocated());
            }
        }
}

BOOST_AUTO_TEST_CASE(compressed_fragments_carry_rsv1_on_the_first_only) {
    corows::message_writer w(corows::writer_config{role::server, 3});
    corows::deflate_config d;
    w.enable_deflate(d);
    corows::byte_buffer out;
    BOOST_REQUIRE(!w.append_message(out, message_kind::text, str("Hello"), true));
    // Hello compresses to 7 bytes: frames of 3, 3 and 1.
    BOOST_TEST(to_vec(out) == (bytes{0x41, 0x03, 0xf2, 0x48, 0xcd, 0x00, 0x03, 0xc9, 0xc9, 0x07, 0x80, 0x01, 0x00}));
}

BOOST_AUTO_TEST_CASE(close_frames_and_reason_truncation) {
    corows::message_writer w(corows::writer_config{role::server, 0});
    corows::byte_buffer out;
    w.append_close(out, 1000, "bye");
    BOOST_TEST(to_vec(out) == (bytes{0x88, 0x05, 0x03, 0xe8, 'b', 'y', 'e'}));
    out.clear();
    w.append_close(out, 0, "ignored without a code");
    BOOST_TEST(to_vec(out) == (bytes{0x88, 0x00}));
    // 122 ASCII bytes then a 2-byte sequence: the cut at 123 would split it.
    std::string reason = std::string(122, 'a') + "\xc3\xa9";
    BOOST_TEST(corows::truncate_utf8(reason, 123).size() == 122u);
    BOOST_TEST(corows::truncate_utf8("short", 123) == "short");
    out.clear();
    w.append_close(out, 1001, reason);
    BOOST_TEST(out.size() == 2u + 2u + 122u);
}

BOOST_AUTO_TEST_CASE(random_round_trips_through_the_reader_both_roles) {
    std::mt19937 rng(7);
    for (role sender : {role::client, role::server}) {
        for (bool deflate : {false, true}) {
            for (bool no_takeover : {false, true}) {
                corows::message_writer w(corows::writer_config{sender, 0});
                role receiver = sender == role::client ? role::server : role::client;
                corows::message_reader r(corows::reader_config{receiver, 1 << 20});
                if (deflate) {
                    corows::deflate_config d;
                    d.send.no_context_takeover = no_takeover;
                    d.threshold = 16;
                    w.enable_deflate(d);
                    r.enable_deflate({15, no_takeover});
                }
                corows::byte_buffer wire;
                std::vector<bytes> sent;
                for (int i = 0; i < 300; ++i) {
                    bytes p(rng() % 3000);
                    for (auto& b : p) b = static_cast<std::uint8_t>('a' + rng() % 8);
                    BOOST_REQUIRE(!w.append_message(wire, message_kind::binary, p, true));
                    sent.push_back(std::move(p));
                }
                std::size_t pos = 0;
                corows::message m;
                for (const auto& p : sent) {
                    auto res = r.read(wire.data(), pos, m);
                    BOOST_REQUIRE((res.event == corows::read_event::message));
                    BOOST_TEST((bytes(m.data().begin(), m.data().end()) == p));
                }
                BOOST_TEST(pos == wire.size());
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
