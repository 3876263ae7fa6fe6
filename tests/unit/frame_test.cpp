// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::decode_status;
using corows::error;
using corows::opcode;

bytes make_bytes(std::initializer_list<int> values) {
    bytes out;
    for (int v : values) out.push_back(static_cast<std::uint8_t>(v));
    return out;
}

bytes text_bytes(const std::string& s) { return bytes(s.begin(), s.end()); }

corows::frame_rules server_rules(std::uint64_t max = UINT64_MAX, bool rsv1 = false) {
    return {corows::role::server, rsv1, max};
}

corows::frame_rules client_rules(std::uint64_t max = UINT64_MAX, bool rsv1 = false) {
    return {corows::role::client, rsv1, max};
}

bytes encode(const corows::frame_header& h) {
    std::array<std::uint8_t, corows::max_frame_header_size> out{};
    const std::size_t n = corows::encode_frame_header(h, out);
    BOOST_TEST_REQUIRE(n >= 2u);
    BOOST_TEST_REQUIRE(n <= 14u);
    return bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
}

corows::frame_header header(opcode op, std::uint64_t length, bool fin = true) {
    corows::frame_header h;
    h.op = op;
    h.payload_length = length;
    h.fin = fin;
    return h;
}

corows::frame_header masked_header(opcode op, std::uint64_t length, corows::mask_key key,
                                   bool fin = true) {
    corows::frame_header h = header(op, length, fin);
    h.masked = true;
    h.key = key;
    return h;
}

/// Whether two decode results say the same thing (fields that their status leaves
/// unspecified are not compared).
bool same_result(const corows::decoded_frame& a, const corows::decoded_frame& b) {
    if (a.status != b.status) return false;
    if (a.status == decode_status::failed) return a.err == b.err;
    if (a.missing != b.missing) return false;
    if (a.status == decode_status::need_more) return true;
    if (!(a.header == b.header) || a.payload_pos != b.payload_pos) return false;
    return a.status != decode_status::complete || a.next_pos == b.next_pos;
}

/// Decodes a complete frame alone in `wire` and returns its header and unmasked payload.
std::pair<corows::frame_header, bytes> decode_whole(bytes wire, const corows::frame_rules& rules) {
    const corows::decoded_frame f = corows::decode_frame(wire, 0, rules);
    BOOST_TEST_REQUIRE(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
    BOOST_TEST(f.next_pos == wire.size());
    std::span<std::uint8_t> payload(wire.data() + f.payload_pos, f.next_pos - f.payload_pos);
    if (f.header.masked) corows::apply_mask(payload, f.header.key);
    return {f.header, bytes(payload.begin(), payload.end())};
}

constexpr corows::mask_key rfc_key{0x37, 0xfa, 0x21, 0x3d};

} // namespace

BOOST_AUTO_TEST_SUITE(frame)

// --- RFC 6455 §5.7 examples -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(rfc_single_frame_unmasked_text) {
    const bytes wire = make_bytes({0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
    const auto [h, payload] = decode_whole(wire, client_rules());
    BOOST_TEST((h == header(opcode::text, 5)));
    BOOST_TEST(payload == text_bytes("Hello"));
    BOOST_TEST(encode(header(opcode::text, 5)) == bytes(wire.begin(), wire.begin() + 2));
}

BOOST_AUTO_TEST_CASE(rfc_single_frame_masked_text) {
    const bytes wire =
        make_bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
    const auto [h, payload] = decode_whole(wire, server_rules());
    BOOST_TEST((h == masked_header(opcode::text, 5, rfc_key)));
    BOOST_TEST(payload == text_bytes("Hello"));

    bytes built = encode(masked_header(opcode::text, 5, rfc_key));
    bytes body = text_bytes("Hello");
    corows::apply_mask(body, rfc_key);
    built.insert(built.end(), body.begin(), body.end());
    BOOST_TEST(built == wire);
}

BOOST_AUTO_TEST_CASE(rfc_fragmented_unmasked_text) {
    const bytes first = make_bytes({0x01, 0x03, 0x48, 0x65, 0x6c});
    const bytes second = make_bytes({0x80, 0x02, 0x6c, 0x6f});
    bytes wire = first;
    wire.insert(wire.end(), second.begin(), second.end());

    const auto f1 = corows::decode_frame(wire, 0, client_rules());
    BOOST_TEST_REQUIRE(static_cast<int>(f1.status) == static_cast<int>(decode_status::complete));
    BOOST_TEST((f1.header == header(opcode::text, 3, false)));
    BOOST_TEST(f1.payload_pos == 2u);
    BOOST_TEST(f1.next_pos == 5u);
    const auto f2 = corows::decode_frame(wire, f1.next_pos, client_rules());
    BOOST_TEST_REQUIRE(static_cast<int>(f2.status) == static_cast<int>(decode_status::complete));
    BOOST_TEST((f2.header == header(opcode::continuation, 2)));
    BOOST_TEST(f2.payload_pos == 7u);
    BOOST_TEST(f2.next_pos == wire.size());
    BOOST_TEST(bytes(wire.begin() + 2, wire.begin() + 5) == text_bytes("Hel"));
    BOOST_TEST(bytes(wire.begin() + 7, wire.end()) == text_bytes("lo"));

    BOOST_TEST(encode(header(opcode::text, 3, false)) == make_bytes({0x01, 0x03}));
    BOOST_TEST(encode(header(opcode::continuation, 2)) == make_bytes({0x80, 0x02}));
}

BOOST_AUTO_TEST_CASE(rfc_ping_and_masked_pong) {
    const bytes ping = make_bytes({0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
    const auto [hp, pp] = decode_whole(ping, client_rules());
    BOOST_TEST((hp == header(opcode::ping, 5)));
    BOOST_TEST(pp == text_bytes("Hello"));
    BOOST_TEST(encode(header(opcode::ping, 5)) == make_bytes({0x89, 0x05}));

    const bytes pong =
        make_bytes({0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
    const auto [hq, pq] = decode_whole(pong, server_rules());
    BOOST_TEST((hq == masked_header(opcode::pong, 5, rfc_key)));
    BOOST_TEST(pq == text_bytes("Hello"));
    BOOST_TEST(encode(masked_header(opcode::pong, 5, rfc_key)) ==
               make_bytes({0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d}));
}

BOOST_AUTO_TEST_CASE(rfc_256_byte_binary) {
    const bytes head = make_bytes({0x82, 0x7E, 0x01, 0x00});
    BOOST_TEST(encode(header(opcode::binary, 256)) == head);
    bytes wire = head;
    for (int i = 0; i < 256; ++i) wire.push_back(static_cast<std::uint8_t>(i));
    const auto [h, payload] = decode_whole(wire, client_rules());
    BOOST_TEST((h == header(opcode::binary, 256)));
    BOOST_TEST(payload == bytes(wire.begin() + 4, wire.end()));
}

BOOST_AUTO_TEST_CASE(rfc_64_kib_binary) {
    const bytes head = make_bytes({0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00});
    BOOST_TEST(encode(header(opcode::binary, 65536)) == head);
    bytes wire = head;
    wire.resize(head.size() + 65536, 0xAB);
    const auto [h, payload] = decode_whole(wire, client_rules());
    BOOST_TEST((h == header(opcode::binary, 65536)));
    BOOST_TEST(payload.size() == 65536u);
    BOOST_TEST(payload.front() == 0xABu);
}

// --- incomplete input -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(need_more_counts_missing_header_bytes) {
    struct shape {
        std::uint64_t length;
        bool masked;
        std::size_t header_size;
    };
    const shape shapes[] = {{5, false, 2},     {5, true, 6},      {300, false, 4},
                            {300, true, 8},    {70000, false, 10}, {70000, true, 14},
                            {0, false, 2},     {125, true, 6},    {65535, true, 8}};
    for (const shape& s : shapes) {
        corows::frame_header h = header(opcode::binary, s.length);
        h.masked = s.masked;
        h.key = {1, 2, 3, 4};
        const bytes wire = encode(h);
        BOOST_TEST_REQUIRE(wire.size() == s.header_size);
        const auto rules = s.masked ? server_rules() : client_rules();
        for (std::size_t have = 0; have < s.header_size; ++have) {
            BOOST_TEST_CONTEXT("length " << s.length << " masked " << s.masked << " have " << have) {
                const bytes part(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(have));
                const auto f = corows::decode_frame(part, 0, rules);
                BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::need_more));
                const std::size_t expected = have < 2 ? 2 - have : s.header_size - have;
                BOOST_TEST(f.missing == expected);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(partial_reports_payload_position_and_missing) {
    for (const std::uint64_t length : {1u, 125u, 126u, 1000u, 65536u}) {
        const corows::frame_header h = masked_header(opcode::binary, length, {9, 8, 7, 6});
        bytes wire = encode(h);
        const std::size_t header_size = wire.size();
        wire.resize(header_size + length, 0x55);
        // A few junk bytes in front: positions are offsets into the whole buffer.
        wire.insert(wire.begin(), 3, 0xEE);
        for (std::uint64_t present = 0; present <= length; present += (present < 130 ? 1 : 997)) {
            BOOST_TEST_CONTEXT("length " << length << " present " << present) {
                const std::span<const std::uint8_t> part(wire.data(),
                                                         3 + header_size + present);
                const auto f = corows::decode_frame(part, 3, server_rules());
                BOOST_TEST((f.header == h));
                BOOST_TEST(f.payload_pos == 3 + header_size);
                if (present < length) {
                    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::partial));
                    BOOST_TEST(f.missing == length - present);
                } else {
                    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
                    BOOST_TEST(f.next_pos == 3 + header_size + length);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(empty_tail_needs_two_bytes) {
    const bytes wire = make_bytes({0x81, 0x00});
    const auto f = corows::decode_frame(wire, 2, client_rules());
    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::need_more));
    BOOST_TEST(f.missing == 2u);
    const auto g = corows::decode_frame(std::span<const std::uint8_t>{}, 0, client_rules());
    BOOST_TEST(static_cast<int>(g.status) == static_cast<int>(decode_status::need_more));
    BOOST_TEST(g.missing == 2u);
}

BOOST_AUTO_TEST_CASE(empty_payload_is_complete_with_header_alone) {
    const bytes wire = encode(masked_header(opcode::close, 0, {1, 2, 3, 4}));
    const auto f = corows::decode_frame(wire, 0, server_rules());
    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
    BOOST_TEST(f.payload_pos == 6u);
    BOOST_TEST(f.next_pos == 6u);
}

// --- streams fed in pieces ----------------------------------------------------------------------

namespace {

struct received_frame {
    corows::frame_header header;
    bytes payload;
    friend bool operator==(const received_frame&, const received_frame&) = default;
};

/// A receiver as the connection layer will be: appends whatever arrives, re-decodes from the
/// first frame it has not finished, and unmasks and takes partial payloads as they come.
class receiver {
public:
    explicit receiver(corows::frame_rules rules) : rules_(rules) {}

    /// Appends `chunk` and takes every frame it completes; records the first inconsistency.
    void feed(std::span<const std::uint8_t> chunk) {
        buffer_.insert(buffer_.end(), chunk.begin(), chunk.end());
        while (problem.empty()) {
            const auto f = corows::decode_frame(buffer_, frame_pos_, rules_);
            if (f.status == decode_status::failed) {
                problem = "failed";
                return;
            }
            if (f.status == decode_status::need_more) {
                if (f.missing == 0 || f.missing > corows::max_frame_header_size)
                    problem = "need_more with missing " + std::to_string(f.missing);
                return;
            }
            const std::size_t end = f.status == decode_status::complete ? f.next_pos : buffer_.size();
            if (f.status == decode_status::partial &&
                f.missing != f.header.payload_length - (end - f.payload_pos))
                problem = "partial with missing " + std::to_string(f.missing);
            const std::size_t from = f.payload_pos + taken_;
            std::span<std::uint8_t> fresh(buffer_.data() + from, end - from);
            if (f.header.masked) corows::apply_mask(fresh, f.header.key, taken_);
            payload_.insert(payload_.end(), fresh.begin(), fresh.end());
            taken_ += fresh.size();
            if (f.status == decode_status::partial) return;
            frames.push_back({f.header, std::move(payload_)});
            payload_.clear();
            taken_ = 0;
            frame_pos_ = f.next_pos;
        }
    }

    /// Whether everything decoded so far equals `expected`.
    bool received(const std::vector<received_frame>& expected) const {
        return problem.empty() && frames == expected;
    }

    std::string problem;
    std::vector<received_frame> frames;

private:
    corows::frame_rules rules_;
    bytes buffer_;
    std::size_t frame_pos_ = 0;
    std::size_t taken_ = 0;
    bytes payload_;
};

struct stream {
    bytes wire;
    std::vector<received_frame> frames;
    std::vector<std::size_t> boundaries; // where each frame starts
};

/// Frames of every length class, masked with varied keys, with control frames between
/// fragments: the stream a client might send a server.
stream make_stream(bool with_64_bit_frame) {
    std::mt19937 rng(7);
    stream s;
    const auto add = [&](opcode op, std::size_t length, bool fin) {
        received_frame f;
        f.header = masked_header(op, length, {}, fin);
        for (auto& b : f.header.key) b = static_cast<std::uint8_t>(rng());
        for (std::size_t i = 0; i < length; ++i) f.payload.push_back(static_cast<std::uint8_t>(rng()));
        s.boundaries.push_back(s.wire.size());
        const bytes head = encode(f.header);
        s.wire.insert(s.wire.end(), head.begin(), head.end());
        bytes body = f.payload;
        corows::apply_mask(body, f.header.key);
        s.wire.insert(s.wire.end(), body.begin(), body.end());
        s.frames.push_back(std::move(f));
    };
    add(opcode::text, 5, true);
    add(opcode::binary, 0, true);
    add(opcode::text, 125, false);
    add(opcode::ping, 3, true);
    add(opcode::continuation, 126, false);
    add(opcode::pong, 125, true);
    add(opcode::continuation, 300, true);
    add(opcode::binary, 7, true);
    if (with_64_bit_frame) add(opcode::binary, 70000, true);
    add(opcode::close, 2, true);
    s.boundaries.push_back(s.wire.size());
    return s;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_split_point_of_a_stream_decodes_the_same) {
    const stream s = make_stream(false);
    for (std::size_t split = 0; split <= s.wire.size(); ++split) {
        BOOST_TEST_CONTEXT("split at " << split) {
            receiver r(server_rules());
            r.feed(std::span(s.wire).first(split));
            r.feed(std::span(s.wire).subspan(split));
            BOOST_TEST_REQUIRE(r.received(s.frames));
        }
    }
}

BOOST_AUTO_TEST_CASE(every_pair_of_split_points_around_headers) {
    // Three pieces, both cuts anywhere within a few bytes of a frame boundary.
    const stream s = make_stream(false);
    std::vector<std::size_t> cuts;
    for (std::size_t b : s.boundaries)
        for (std::size_t d = 0; d < 16; ++d) {
            if (b >= d) cuts.push_back(b - d);
            if (b + d <= s.wire.size()) cuts.push_back(b + d);
        }
    for (std::size_t a : cuts)
        for (std::size_t b : cuts) {
            if (a > b) continue;
            receiver r(server_rules());
            r.feed(std::span(s.wire).first(a));
            r.feed(std::span(s.wire).subspan(a, b - a));
            r.feed(std::span(s.wire).subspan(b));
            BOOST_TEST_REQUIRE(r.received(s.frames), "cuts at " << a << " and " << b);
        }
}

BOOST_AUTO_TEST_CASE(stream_with_64_bit_length_frame_byte_by_byte_and_split) {
    const stream s = make_stream(true);
    {
        receiver r(server_rules());
        for (std::size_t i = 0; i < s.wire.size(); ++i) r.feed(std::span(s.wire).subspan(i, 1));
        BOOST_TEST(r.received(s.frames));
    }
    // Every split near a frame boundary, a stride through the long payload.
    for (std::size_t split = 0; split <= s.wire.size(); ++split) {
        const bool near_boundary = std::any_of(s.boundaries.begin(), s.boundaries.end(),
            [&](std::size_t b) { return split + 20 >= b && split <= b + 20; });
        if (!near_boundary && split % 331 != 0) continue;
        receiver r(server_rules());
        r.feed(std::span(s.wire).first(split));
        r.feed(std::span(s.wire).subspan(split));
        BOOST_TEST_REQUIRE(r.received(s.frames), "split at " << split);
    }
}

BOOST_AUTO_TEST_CASE(random_chunking_of_a_stream) {
    const stream s = make_stream(true);
    std::mt19937 rng(99);
    for (int round = 0; round < 50; ++round) {
        receiver r(server_rules());
        std::size_t pos = 0;
        while (pos < s.wire.size()) {
            const std::size_t n = std::min<std::size_t>(s.wire.size() - pos, rng() % 3000);
            r.feed(std::span(s.wire).subspan(pos, n));
            pos += n;
        }
        BOOST_TEST_REQUIRE(r.received(s.frames), "round " << round);
    }
}

// --- random round trips -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(random_headers_round_trip) {
    std::mt19937_64 rng(2024);
    const opcode ops[] = {opcode::continuation, opcode::text, opcode::binary,
                          opcode::close,        opcode::ping, opcode::pong};
    const std::uint64_t boundaries[] = {0,       1,       125,     126,         127,
                                        65535,   65536,   65537,   1ull << 32,  (1ull << 32) - 1,
                                        (1ull << 63) - 1, (1ull << 63) - 2};
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 20000; ++i) {
        corows::frame_header h;
        h.op = ops[rng() % 6];
        const bool control = corows::is_control(h.op);
        h.fin = control || rng() % 2 == 0;
        h.rsv1 = rng() % 2 == 0;
        h.masked = rng() % 2 == 0;
        for (auto& b : h.key) b = static_cast<std::uint8_t>(rng());
        if (!h.masked) h.key = {};
        switch (rng() % 4) {
        case 0: h.payload_length = rng() % 126; break;
        case 1: h.payload_length = 126 + rng() % (65536 - 126); break;
        case 2: h.payload_length = 65536 + rng() % ((1ull << 63) - 65536); break;
        default: h.payload_length = boundaries[rng() % std::size(boundaries)]; break;
        }
        if (control) h.payload_length %= 126;

        const bytes wire = encode(h);
        const std::size_t length_bytes = h.payload_length < 126 ? 0 : h.payload_length < 65536 ? 2 : 8;
        BOOST_TEST_REQUIRE(wire.size() == 2 + length_bytes + (h.masked ? 4u : 0u));
        ++counts[length_bytes == 0 ? 0 : length_bytes == 2 ? 1 : 2];

        const corows::frame_rules rules{h.masked ? corows::role::server : corows::role::client,
                                        true, UINT64_MAX};
        const auto f = corows::decode_frame(wire, 0, rules);
        BOOST_TEST_REQUIRE(static_cast<int>(f.status) !=
                           static_cast<int>(decode_status::failed), "iteration " << i);
        BOOST_TEST_REQUIRE((f.header == h), "iteration " << i);
        BOOST_TEST_REQUIRE(f.payload_pos == wire.size());
        if (h.payload_length == 0) {
            BOOST_TEST_REQUIRE(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
            BOOST_TEST_REQUIRE(f.next_pos == wire.size());
        } else {
            BOOST_TEST_REQUIRE(static_cast<int>(f.status) == static_cast<int>(decode_status::partial));
            BOOST_TEST_REQUIRE(f.missing == h.payload_length);
        }
    }
    for (int c : counts) BOOST_TEST(c > 1000);
}

BOOST_AUTO_TEST_CASE(length_encoding_boundaries) {
    struct row {
        std::uint64_t length;
        bytes head;
    };
    const row rows[] = {
        {0, make_bytes({0x82, 0x00})},
        {125, make_bytes({0x82, 0x7D})},
        {126, make_bytes({0x82, 0x7E, 0x00, 0x7E})},
        {65535, make_bytes({0x82, 0x7E, 0xFF, 0xFF})},
        {65536, make_bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0})},
        {1ull << 32, make_bytes({0x82, 0x7F, 0, 0, 0, 1, 0, 0, 0, 0})},
        {(1ull << 63) - 1, make_bytes({0x82, 0x7F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})},
    };
    for (const row& r : rows) {
        BOOST_TEST_CONTEXT("length " << r.length) {
            BOOST_TEST(encode(header(opcode::binary, r.length)) == r.head);
            const auto f = corows::decode_frame(r.head, 0, client_rules());
            BOOST_TEST(f.header.payload_length == r.length);
            BOOST_TEST(static_cast<int>(f.status) ==
                       static_cast<int>(r.length == 0 ? decode_status::complete
                                                      : decode_status::partial));
        }
    }
}

BOOST_AUTO_TEST_CASE(encode_sets_every_flag_bit) {
    corows::frame_header h = header(opcode::text, 1, false);
    h.rsv1 = true;
    BOOST_TEST(encode(h) == make_bytes({0x41, 0x01}));
    h.rsv1 = false;
    h.rsv2 = true;
    BOOST_TEST(encode(h) == make_bytes({0x21, 0x01}));
    h.rsv2 = false;
    h.rsv3 = true;
    BOOST_TEST(encode(h) == make_bytes({0x11, 0x01}));
    h.rsv3 = false;
    h.fin = true;
    h.op = opcode::pong;
    BOOST_TEST(encode(h) == make_bytes({0x8A, 0x01}));
}

// --- violations ---------------------------------------------------------------------------------

namespace {

void check_fails(const bytes& wire, const corows::frame_rules& rules, error expected) {
    const auto f = corows::decode_frame(wire, 0, rules);
    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::failed));
    BOOST_TEST(static_cast<int>(f.err) == static_cast<int>(expected));
}

/// `wire` fails with `expected` from its first `shown` bytes on, and not before.
void check_fails_from(const bytes& wire, std::size_t shown, const corows::frame_rules& rules,
                      error expected) {
    for (std::size_t n = 0; n <= wire.size(); ++n) {
        BOOST_TEST_CONTEXT("first " << n << " bytes") {
            const bytes part(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(n));
            const auto f = corows::decode_frame(part, 0, rules);
            if (n < shown) {
                BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::need_more));
            } else {
                BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::failed));
                BOOST_TEST(static_cast<int>(f.err) == static_cast<int>(expected));
            }
        }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(reserved_opcodes_fail_on_first_byte) {
    for (int op : {3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF}) {
        BOOST_TEST_CONTEXT("opcode " << op) {
            check_fails_from(make_bytes({0x80 | op, 0x80, 1, 2, 3, 4}), 1, server_rules(),
                             error::reserved_opcode);
            check_fails_from(make_bytes({op, 0x00}), 1, client_rules(), error::reserved_opcode);
        }
    }
}

BOOST_AUTO_TEST_CASE(reserved_bits_fail_on_first_byte) {
    check_fails_from(make_bytes({0xA1, 0x80, 1, 2, 3, 4}), 1, server_rules(), error::reserved_bits);
    check_fails_from(make_bytes({0x91, 0x80, 1, 2, 3, 4}), 1, server_rules(), error::reserved_bits);
    check_fails_from(make_bytes({0xC1, 0x80, 1, 2, 3, 4}), 1, server_rules(), error::reserved_bits);
    // RSV2 and RSV3 stay reserved even with permessage-deflate.
    check_fails_from(make_bytes({0xE1, 0x80, 1, 2, 3, 4}), 1, server_rules(UINT64_MAX, true),
                     error::reserved_bits);
    check_fails_from(make_bytes({0xD1, 0x00}), 1, client_rules(UINT64_MAX, true),
                     error::reserved_bits);
}

BOOST_AUTO_TEST_CASE(rsv1_accepted_once_allowed_on_any_opcode) {
    // Whether RSV1 fits the opcode is the message layer's call (bad_compressed_frame).
    for (int op : {0x0, 0x1, 0x2, 0x8, 0x9, 0xA}) {
        const bytes wire = make_bytes({0xC0 | op, 0x80, 1, 2, 3, 4});
        const auto f = corows::decode_frame(wire, 0, server_rules(UINT64_MAX, true));
        BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
        BOOST_TEST(f.header.rsv1);
        BOOST_TEST(static_cast<int>(f.header.op) == op);
    }
}

BOOST_AUTO_TEST_CASE(fragmented_control_fails_on_first_byte) {
    for (int op : {0x8, 0x9, 0xA})
        check_fails_from(make_bytes({op, 0x80, 1, 2, 3, 4}), 1, server_rules(),
                         error::fragmented_control);
}

BOOST_AUTO_TEST_CASE(control_too_big_fails_on_second_byte) {
    for (int op : {0x88, 0x89, 0x8A}) {
        check_fails_from(make_bytes({op, 0x80 | 126, 0x00, 0x7E, 1, 2, 3, 4}), 2, server_rules(),
                         error::control_too_big);
        check_fails_from(make_bytes({op, 127, 0, 0, 0, 0, 0, 1, 0, 0}), 2, client_rules(),
                         error::control_too_big);
    }
    // 125 is the largest allowed.
    bytes ok = make_bytes({0x89, 0x7D});
    ok.resize(2 + 125);
    const auto f = corows::decode_frame(ok, 0, client_rules());
    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
}

BOOST_AUTO_TEST_CASE(bad_lengths_fail_as_soon_as_shown) {
    // 16-bit length below 126.
    check_fails_from(make_bytes({0x82, 0x7E, 0x00, 0x7D}), 4, client_rules(), error::bad_length);
    check_fails_from(make_bytes({0x82, 0xFE, 0x00, 0x00, 1, 2, 3, 4}), 4, server_rules(),
                     error::bad_length);
    // 64-bit length with the top bit set: shown by its first byte.
    check_fails_from(make_bytes({0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0}), 3, client_rules(),
                     error::bad_length);
    check_fails_from(make_bytes({0x82, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), 3,
                     client_rules(), error::bad_length);
    // 64-bit length below 65536: shown once six zero bytes are in.
    check_fails_from(make_bytes({0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 1, 2, 3, 4}), 8,
                     server_rules(), error::bad_length);
    check_fails_from(make_bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 0, 0x00, 0x7E}), 8, client_rules(),
                     error::bad_length);
    // Exactly at the boundaries they are fine.
    for (const bytes& ok : {make_bytes({0x82, 0x7E, 0x00, 0x7E}),
                            make_bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}),
                            make_bytes({0x82, 0x7F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})}) {
        const auto f = corows::decode_frame(ok, 0, client_rules());
        BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::partial));
    }
}

BOOST_AUTO_TEST_CASE(mask_bit_must_match_role) {
    check_fails_from(make_bytes({0x81, 0x05, 'H', 'e', 'l', 'l', 'o'}), 2, server_rules(),
                     error::mask_required);
    check_fails_from(make_bytes({0x81, 0x85, 1, 2, 3, 4, 0, 0, 0, 0, 0}), 2, client_rules(),
                     error::unexpected_mask);
    check_fails(make_bytes({0x88, 0x00}), server_rules(), error::mask_required);
    check_fails(make_bytes({0x8A, 0x80, 1, 2, 3, 4}), client_rules(), error::unexpected_mask);
}

BOOST_AUTO_TEST_CASE(frame_too_big_from_header_alone) {
    // 7-bit length.
    check_fails_from(make_bytes({0x82, 0x80 | 101, 1, 2, 3, 4}), 2, server_rules(100),
                     error::frame_too_big);
    // 16-bit length: 1001 > 1000, needs both length bytes (0x03 0xE9); 0x04 alone is enough.
    check_fails_from(make_bytes({0x82, 0x7E, 0x03, 0xE9}), 4, client_rules(1000),
                     error::frame_too_big);
    check_fails_from(make_bytes({0x82, 0x7E, 0x04, 0x00}), 3, client_rules(1000),
                     error::frame_too_big);
    // 64-bit length: a first byte of 1 already means at least 2^56.
    check_fails_from(make_bytes({0x82, 0xFF, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}), 3,
                     server_rules(1ull << 40), error::frame_too_big);
    check_fails_from(make_bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 1}), 10, client_rules(65536),
                     error::frame_too_big);
    // Exactly the limit is fine, even with no payload present yet.
    for (const auto& [wire, max] :
         {std::pair{make_bytes({0x82, 0x7E, 0x03, 0xE8}), std::uint64_t{1000}},
          std::pair{make_bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}), std::uint64_t{65536}},
          std::pair{make_bytes({0x82, 0x05}), std::uint64_t{5}}}) {
        const auto f = corows::decode_frame(wire, 0, client_rules(max));
        BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::partial));
    }
    // A zero limit refuses any payload but not empty frames.
    check_fails(make_bytes({0x82, 0x01, 0x00}), client_rules(0), error::frame_too_big);
    const auto empty = corows::decode_frame(make_bytes({0x82, 0x00}), 0, client_rules(0));
    BOOST_TEST(static_cast<int>(empty.status) == static_cast<int>(decode_status::complete));
}

BOOST_AUTO_TEST_CASE(first_violation_in_header_order_wins) {
    // RSV2 and a reserved opcode: the RSV bits come first.
    check_fails(make_bytes({0xA3, 0x80}), server_rules(), error::reserved_bits);
    // Reserved opcode with FIN=0 and control bit set.
    check_fails(make_bytes({0x0B, 0x80}), server_rules(), error::reserved_opcode);
    // Fragmented, unmasked, oversized ping to a server: the FIN check is on byte 1.
    check_fails(make_bytes({0x09, 0x7E}), server_rules(), error::fragmented_control);
    // Unmasked and too big for a control frame: the mask bit comes first.
    check_fails(make_bytes({0x89, 0x7E}), server_rules(), error::mask_required);
    // Too big for a control frame and for the limit: control first.
    check_fails(make_bytes({0x89, 0x7E, 0x10, 0x00}), client_rules(10), error::control_too_big);
    // Non-minimal and over the limit: bad_length first.
    check_fails(make_bytes({0x82, 0x7E, 0x00, 0x10}), client_rules(10), error::bad_length);
}

BOOST_AUTO_TEST_CASE(decodes_at_any_position) {
    bytes wire = make_bytes({0xEE, 0xEE, 0xEE});
    const bytes frame = make_bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58});
    wire.insert(wire.end(), frame.begin(), frame.end());
    const auto f = corows::decode_frame(wire, 3, server_rules());
    BOOST_TEST(static_cast<int>(f.status) == static_cast<int>(decode_status::complete));
    BOOST_TEST(f.payload_pos == 9u);
    BOOST_TEST(f.next_pos == 14u);
}

BOOST_AUTO_TEST_CASE(inline_decoder_agrees_with_general_decoder) {
    // The inline fast path and the out-of-line decoder must agree on every input; random
    // headers near the interesting values exercise both sides of every branch.
    std::mt19937 rng(31337);
    const int first_bytes[] = {0x80, 0x81, 0x82, 0x88, 0x89, 0x8A, 0x00, 0x01, 0x02, 0x08, 0xC1,
                               0xA1, 0x91, 0x83, 0x8B, 0x41, 0xC8};
    const int second_bytes[] = {0x00, 0x05, 0x7D, 0x7E, 0x7F, 0x80, 0x85, 0xFD, 0xFE, 0xFF};
    const std::uint64_t limits[] = {0, 5, 125, 126, 1000, 65535, 65536, UINT64_MAX};
    for (int i = 0; i < 200000; ++i) {
        bytes wire(2 + rng() % 20);
        wire[0] = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() : first_bytes[rng() % std::size(first_bytes)]);
        wire[1] = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() : second_bytes[rng() % std::size(second_bytes)]);
        for (std::size_t j = 2; j < wire.size(); ++j)
            wire[j] = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() : (rng() % 2 ? 0 : 0xFF));
        const std::size_t size = rng() % (wire.size() + 1);
        const corows::frame_rules rules{rng() % 2 ? corows::role::server : corows::role::client,
                                        rng() % 2 == 0, limits[rng() % std::size(limits)]};
        const std::span<const std::uint8_t> buf(wire.data(), size);
        const std::size_t pos = size == 0 ? 0 : rng() % 3 == 0 ? rng() % size : 0;
        const auto a = corows::decode_frame(buf, pos, rules);
        const auto b = corows::detail::decode_frame_general(buf, pos, rules);
        BOOST_TEST_REQUIRE(same_result(a, b), "iteration " << i << ": status "
                                                  << static_cast<int>(a.status) << " vs "
                                                  << static_cast<int>(b.status));
    }
}

BOOST_AUTO_TEST_SUITE_END()
