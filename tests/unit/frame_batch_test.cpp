// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::decode_status;
using corows::frame_ref;
using corows::opcode;

using batch_fn = std::size_t (*)(std::span<std::uint8_t>, std::size_t&, const corows::frame_rules&,
                                 std::span<frame_ref>) noexcept;
// The loop with the inlined kernel and the loop through apply_mask().
const batch_fn both[] = {&corows::decode_frames, &corows::detail::decode_frames_portable};

bytes make_bytes(std::initializer_list<int> values) {
    bytes out;
    for (int v : values) out.push_back(static_cast<std::uint8_t>(v));
    return out;
}

std::string text_of(const bytes& buf, const frame_ref& r) {
    const auto* p = buf.data() + r.payload_pos;
    return std::string(p, p + r.payload_length());
}

/// What decode_frame() and apply_mask() make of `buf` from 0, frame by frame: the frames
/// until the first that is not complete, and the buffer unmasked.
struct reference {
    std::vector<frame_ref> frames;
    std::size_t stop = 0;
    bytes unmasked;
};

reference decode_reference(bytes buf, const corows::frame_rules& rules) {
    reference out;
    std::size_t pos = 0;
    for (;;) {
        const corows::decoded_frame f = corows::decode_frame(buf, pos, rules);
        if (f.status != decode_status::complete) break;
        if (f.header.masked)
            corows::apply_mask({buf.data() + f.payload_pos, static_cast<std::size_t>(f.header.payload_length)},
                               f.header.key);
        out.frames.push_back({f.payload_pos, f.header.payload_length | (std::uint64_t{buf[pos]} << 56)});
        pos = f.next_pos;
    }
    out.stop = pos;
    out.unmasked = std::move(buf);
    return out;
}

/// decode_frames() over `buf` from 0 with room for `room` frames per call, until a call
/// returns fewer than that; checks the result against decode_reference().
void check_against_reference(const bytes& input, const corows::frame_rules& rules, std::size_t room, batch_fn fn) {
    const reference want = decode_reference(input, rules);
    bytes buf = input;
    std::vector<frame_ref> got;
    std::vector<frame_ref> out(room);
    std::size_t pos = 0;
    for (;;) {
        const std::size_t before = pos;
        const std::size_t n = fn(buf, pos, rules, out);
        BOOST_TEST_REQUIRE(n <= room);
        if (n > 0) {
            BOOST_TEST(out[0].payload_pos > before);
        } else {
            BOOST_TEST(pos == before);
        }
        got.insert(got.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
        if (n < room) break;
    }
    BOOST_TEST_REQUIRE(got.size() == want.frames.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        BOOST_TEST(got[i].payload_pos == want.frames[i].payload_pos);
        BOOST_TEST(got[i].payload_length() == want.frames[i].payload_length());
        BOOST_TEST(got[i].first_byte() == want.frames[i].first_byte());
    }
    BOOST_TEST(pos == want.stop);
    BOOST_TEST(buf == want.unmasked);
}

corows::frame_header random_header(std::mt19937& rng, const corows::frame_rules& rules, std::size_t length) {
    corows::frame_header h;
    const opcode data_ops[] = {opcode::continuation, opcode::text, opcode::binary};
    const opcode control_ops[] = {opcode::close, opcode::ping, opcode::pong};
    if (length <= 125 && rng() % 5 == 0) {
        h.op = control_ops[rng() % 3];
    } else {
        h.op = data_ops[rng() % 3];
        h.fin = rng() % 2 == 0;
        h.rsv1 = rules.allow_rsv1 && rng() % 2 == 0;
    }
    h.payload_length = length;
    h.masked = rules.receiver == corows::role::server;
    for (auto& b : h.key) b = static_cast<std::uint8_t>(rng());
    return h;
}

std::size_t random_length(std::mt19937& rng) {
    switch (rng() % 8) {
    case 0: return rng() % 16;
    case 1: return 120 + rng() % 12;    // either side of the 7-bit limit
    case 2: return 200 + rng() % 3000;  // 16-bit lengths
    case 3: return 65536 + rng() % 100; // 64-bit lengths
    default: return rng() % 126;
    }
}

/// Frames under `rules`, now and then one that breaks them, and a random cut at the end.
bytes random_stream(std::mt19937& rng, const corows::frame_rules& rules) {
    bytes buf;
    const std::size_t frames = 1 + rng() % 40;
    for (std::size_t i = 0; i < frames; ++i) {
        corows::frame_header h = random_header(rng, rules, random_length(rng));
        std::array<std::uint8_t, corows::max_frame_header_size> head{};
        const std::size_t n = corows::encode_frame_header(h, head);
        buf.insert(buf.end(), head.begin(), head.begin() + static_cast<std::ptrdiff_t>(n));
        if (rng() % 50 == 0) buf[buf.size() - n] ^= static_cast<std::uint8_t>(0x10u << (rng() % 3)); // RSV bits
        if (rng() % 50 == 0) buf[buf.size() - n + 1] ^= 0x80u;                                      // MASK bit
        for (std::uint64_t j = 0; j < h.payload_length; ++j) buf.push_back(static_cast<std::uint8_t>(rng()));
    }
    if (rng() % 2 == 0) buf.resize(buf.size() - rng() % std::min<std::size_t>(buf.size(), 200));
    return buf;
}

} // namespace

BOOST_AUTO_TEST_SUITE(frame_batch)

BOOST_AUTO_TEST_CASE(rfc6455_masked_hello) {
    // RFC 6455 section 5.7: a single-frame masked text message, "Hello".
    for (const batch_fn fn : both) {
        bytes buf = make_bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
        std::array<frame_ref, 4> out{};
        std::size_t pos = 0;
        BOOST_TEST(fn(buf, pos, {corows::role::server, false, UINT64_MAX}, out) == 1u);
        BOOST_TEST(pos == buf.size());
        BOOST_TEST(out[0].payload_pos == 6u);
        BOOST_TEST(out[0].payload_length() == 5u);
        BOOST_TEST(out[0].fin());
        BOOST_TEST(!out[0].rsv1());
        BOOST_TEST((out[0].op() == opcode::text));
        BOOST_TEST(text_of(buf, out[0]) == "Hello");
    }
}

BOOST_AUTO_TEST_CASE(rfc6455_examples_in_one_packet) {
    // RFC 6455 section 5.7, unmasked as a client receives them: "Hello", the fragments "Hel"
    // and "lo", a ping with "Hello", and a 256-byte binary frame with a 16-bit length.
    bytes buf = make_bytes({0x81, 0x05, 'H', 'e', 'l', 'l', 'o', 0x01, 0x03, 'H', 'e', 'l', 0x80, 0x02, 'l', 'o',
                            0x89, 0x05, 'H', 'e', 'l', 'l', 'o', 0x82, 0x7E, 0x01, 0x00});
    buf.resize(buf.size() + 256, 0xab);
    for (const batch_fn fn : both) {
        bytes copy = buf;
        std::array<frame_ref, 8> out{};
        std::size_t pos = 0;
        BOOST_TEST_REQUIRE(fn(copy, pos, {corows::role::client, false, UINT64_MAX}, out) == 5u);
        BOOST_TEST(pos == copy.size());
        BOOST_TEST(text_of(copy, out[0]) == "Hello");
        BOOST_TEST((out[1].op() == opcode::text));
        BOOST_TEST(!out[1].fin());
        BOOST_TEST(text_of(copy, out[1]) == "Hel");
        BOOST_TEST((out[2].op() == opcode::continuation));
        BOOST_TEST(out[2].fin());
        BOOST_TEST(text_of(copy, out[2]) == "lo");
        BOOST_TEST((out[3].op() == opcode::ping));
        BOOST_TEST(text_of(copy, out[3]) == "Hello");
        BOOST_TEST((out[4].op() == opcode::binary));
        BOOST_TEST(out[4].payload_pos == 27u);
        BOOST_TEST(out[4].payload_length() == 256u);
        BOOST_TEST(copy == buf); // nothing to unmask
    }
}

BOOST_AUTO_TEST_CASE(stops_where_out_is_full_and_goes_on_from_there) {
    bytes buf;
    for (int i = 0; i < 5; ++i) {
        const bytes f = make_bytes({0x82, 0x80 | 1, 1, 2, 3, 4, i ^ 1});
        buf.insert(buf.end(), f.begin(), f.end());
    }
    for (const batch_fn fn : both) {
        bytes copy = buf;
        std::array<frame_ref, 2> out{};
        std::size_t pos = 0;
        std::string seen;
        for (std::size_t want : {2u, 2u, 1u, 0u}) {
            BOOST_TEST(fn(copy, pos, {}, out) == want);
            for (std::size_t i = 0; i < want; ++i) seen += static_cast<char>('0' + copy[out[i].payload_pos]);
        }
        BOOST_TEST(seen == "01234");
        BOOST_TEST(pos == copy.size());
        BOOST_TEST(fn(copy, pos, {}, std::span<frame_ref>{}) == 0u);
    }
}

BOOST_AUTO_TEST_CASE(stops_before_a_frame_that_breaks_the_rules) {
    // A good masked frame, then one with RSV2, then another good one.
    bytes buf = make_bytes({0x82, 0x81, 9, 9, 9, 9, 7, 0xA2, 0x81, 9, 9, 9, 9, 7, 0x82, 0x81, 9, 9, 9, 9, 7});
    for (const batch_fn fn : both) {
        bytes copy = buf;
        std::array<frame_ref, 4> out{};
        std::size_t pos = 0;
        BOOST_TEST(fn(copy, pos, {}, out) == 1u);
        BOOST_TEST(pos == 7u);
        BOOST_TEST(copy[6] == (7 ^ 9));
        BOOST_TEST(copy[13] == 7); // the bad frame's payload is left as it came
        const corows::decoded_frame f = corows::decode_frame(copy, pos, {});
        BOOST_TEST((f.status == decode_status::failed));
        BOOST_TEST((f.err == corows::error::reserved_bits));
        BOOST_TEST(fn(copy, pos, {}, out) == 0u);
        BOOST_TEST(pos == 7u);
    }
}

BOOST_AUTO_TEST_CASE(a_frame_limit_under_125_bytes_is_kept) {
    // 10 bytes allowed: a 10-byte frame passes, an 11-byte one stops the batch.
    bytes buf = make_bytes({0x82, 0x8A, 0, 0, 0, 0});
    buf.resize(buf.size() + 10, 1);
    const bytes second = make_bytes({0x82, 0x8B, 0, 0, 0, 0});
    buf.insert(buf.end(), second.begin(), second.end());
    buf.resize(buf.size() + 11, 1);
    buf.resize(buf.size() + 200, 0); // far from the end, where the unchecked path would run
    for (const batch_fn fn : both) {
        bytes copy = buf;
        std::array<frame_ref, 4> out{};
        std::size_t pos = 0;
        BOOST_TEST(fn(copy, pos, {corows::role::server, false, 10}, out) == 1u);
        BOOST_TEST(pos == 16u);
        BOOST_TEST((corows::decode_frame(copy, pos, {corows::role::server, false, 10}).err ==
                    corows::error::frame_too_big));
    }
}

BOOST_AUTO_TEST_CASE(every_split_point_of_a_stream) {
    // Short frames with every 7-bit length near the end of the buffer, where the loop cannot
    // assume that a frame's bytes are all there.
    std::mt19937 rng(7);
    bytes stream;
    const corows::frame_rules rules{};
    for (std::size_t length : {0u, 1u, 5u, 16u, 31u, 32u, 33u, 64u, 65u, 96u, 97u, 124u, 125u, 126u, 300u}) {
        const corows::frame_header h = random_header(rng, rules, length);
        std::array<std::uint8_t, corows::max_frame_header_size> head{};
        const std::size_t n = corows::encode_frame_header(h, head);
        stream.insert(stream.end(), head.begin(), head.begin() + static_cast<std::ptrdiff_t>(n));
        for (std::size_t j = 0; j < length; ++j) stream.push_back(static_cast<std::uint8_t>(rng()));
    }
    for (const batch_fn fn : both)
        for (std::size_t cut = 0; cut <= stream.size(); ++cut)
            check_against_reference(bytes(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(cut)), rules,
                                    64, fn);
}

BOOST_AUTO_TEST_CASE(random_streams_agree_with_decode_frame) {
    std::mt19937 rng(2026);
    const std::uint64_t limits[] = {UINT64_MAX, 5000, 125, 124, 0};
    for (int round = 0; round < 300; ++round) {
        const corows::frame_rules rules{rng() % 2 == 0 ? corows::role::server : corows::role::client, rng() % 2 == 0,
                                        limits[rng() % 5]};
        const bytes stream = random_stream(rng, rules);
        for (const std::size_t room : {1u, 3u, 64u})
            for (const batch_fn fn : both) check_against_reference(stream, rules, room, fn);
    }
}

BOOST_AUTO_TEST_SUITE_END()
