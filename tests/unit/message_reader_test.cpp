// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/message_writer.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::read_event;

// Feeds `wire` to `reader` in chunks of `chunk` bytes the way the Asio layer does (append,
// decode until need_more, move the undecoded tail to the front) and records each event;
// counts in `frames` the frames each event says it ended.
std::vector<std::string> feed(corows::message_reader& reader, const bytes& wire, std::size_t chunk,
                              std::size_t* frames = nullptr) {
    std::vector<std::string> events;
    corows::byte_buffer buf;
    std::size_t pos = 0;
    corows::message m;
    for (std::size_t off = 0; off < wire.size();) {
        std::size_t n = std::min(chunk, wire.size() - off);
        buf.consume(pos);
        pos = 0;
        buf.append({wire.data() + off, n});
        off += n;
        for (;;) {
            auto r = reader.read(buf.data(), pos, m);
            if (r.event == read_event::need_more) break;
            if (frames && (r.event != read_event::progress || r.frame_ended)) ++*frames;
            if (r.event == read_event::progress) continue;
            switch (r.event) {
            case read_event::message:
                events.push_back(std::string(m.is_text() ? "text:" : "binary:") + m.str());
                break;
            case read_event::ping: events.push_back("ping:" + std::string(r.payload.begin(), r.payload.end())); break;
            case read_event::pong: events.push_back("pong:" + std::string(r.payload.begin(), r.payload.end())); break;
            case read_event::close:
                events.push_back("close:" + std::to_string(r.code) + ":" + std::string(r.reason));
                break;
            default:
                events.push_back("failed:" + r.ec.message());
                return events;
            }
        }
    }
    return events;
}

bytes frame(std::uint8_t b0, const std::string& payload, bool masked, bool rsv1 = false) {
    corows::frame_header h;
    h.fin = b0 & 0x80;
    h.op = static_cast<corows::opcode>(b0 & 0x0F);
    h.rsv1 = rsv1;
    h.payload_length = payload.size();
    h.masked = masked;
    h.key = {0x11, 0x22, 0x33, 0x44};
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    std::size_t n = corows::encode_frame_header(h, head);
    bytes out(head.begin(), head.begin() + static_cast<long>(n));
    for (std::size_t i = 0; i < payload.size(); ++i)
        out.push_back(static_cast<std::uint8_t>(payload[i]) ^ (masked ? h.key[i % 4] : 0));
    return out;
}

bytes cat(std::initializer_list<bytes> parts) {
    bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

corows::message_reader server_reader(std::size_t max = 1 << 20) {
    return corows::message_reader(corows::reader_config{corows::role::server, max});
}

std::string fail(corows::error e) { return "failed:" + make_error_code(e).message(); }

} // namespace

BOOST_AUTO_TEST_SUITE(message_reader)

BOOST_AUTO_TEST_CASE(unfragmented_message_is_borrowed_from_the_buffer) {
    auto reader = corows::message_reader(corows::reader_config{corows::role::client, 1024});
    // RFC 6455 §5.7: a single-frame unmasked text message.
    bytes wire{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    std::size_t pos = 0;
    corows::message m;
    auto r = reader.read(wire, pos, m);
    BOOST_TEST((r.event == read_event::message));
    BOOST_TEST(m.text() == "Hello");
    BOOST_TEST(m.borrowed());
    BOOST_TEST(m.data().data() == wire.data() + 2);
    BOOST_TEST(pos == wire.size());
    corows::message copy = m;
    BOOST_TEST(!copy.borrowed());
    BOOST_TEST(copy.text() == "Hello");
    m.own();
    wire[2] = 'J';
    BOOST_TEST(m.text() == "Hello");
}

BOOST_AUTO_TEST_CASE(fragments_with_interleaved_control_frames_at_every_split_point) {
    bytes wire = cat({frame(0x01, "Hel", true), frame(0x89, "ping!", true), frame(0x00, "lo ", true),
                      frame(0x8A, "", true), frame(0x80, "world", true), frame(0x82, "\x01\x02", true),
                      frame(0x81, "", true), frame(0x88, std::string("\x03\xe8") + "done", true)});
    std::vector<std::string> expected{"ping:ping!", "pong:", "text:Hello world", "binary:\x01\x02", "text:",
                                      "close:1000:done"};
    for (std::size_t chunk = 1; chunk <= wire.size(); ++chunk) {
        auto reader = server_reader();
        std::size_t frames = 0;
        BOOST_TEST(feed(reader, wire, chunk, &frames) == expected, "chunk " << chunk);
        BOOST_TEST(frames == 8u, "chunk " << chunk); // each frame ends once, however it is cut
    }
    // Every split into two reads, too.
    for (std::size_t split = 1; split < wire.size(); ++split) {
        auto reader = server_reader();
        std::vector<std::string> events;
        bytes a(wire.begin(), wire.begin() + static_cast<long>(split));
        bytes b(wire.begin() + static_cast<long>(split), wire.end());
        corows::byte_buffer buf;
        std::size_t pos = 0;
        corows::message m;
        for (const bytes* part : {&a, &b}) {
            buf.consume(pos);
            pos = 0;
            buf.append(*part);
            for (;;) {
                auto r = reader.read(buf.data(), pos, m);
                if (r.event == read_event::need_more) break;
                if (r.event == read_event::progress) continue;
                if (r.event == read_event::message) events.push_back((m.is_text() ? "text:" : "binary:") + m.str());
                else if (r.event == read_event::ping) events.push_back("ping:" + std::string(r.payload.begin(), r.payload.end()));
                else if (r.event == read_event::pong) events.push_back("pong:");
                else if (r.event == read_event::close) events.push_back("close:" + std::to_string(r.code) + ":" + std::string(r.reason));
                else events.push_back("failed");
            }
        }
        BOOST_TEST(events == expected, "split " << split);
    }
}

BOOST_AUTO_TEST_CASE(sequence_errors) {
    auto check = [](const bytes& wire, corows::error e) {
        auto reader = server_reader();
        auto ev = feed(reader, wire, wire.size());
        BOOST_REQUIRE(!ev.empty());
        BOOST_TEST(ev.back() == fail(e));
    };
    check(frame(0x80, "x", true), corows::error::bad_continuation);
    check(cat({frame(0x01, "a", true), frame(0x81, "b", true)}), corows::error::expected_continuation);
    check(frame(0x81, "x", false), corows::error::mask_required);
    check(frame(0x83, "x", true), corows::error::reserved_opcode);
    check(frame(0x81, "x", true, true), corows::error::reserved_bits); // RSV1 without deflate
    check(frame(0x88, "\x03", true), corows::error::bad_close_payload);
    check(frame(0x88, "\x03\xed", true), corows::error::bad_close_code); // 1005 may not be sent
    check(frame(0x88, "\x03\xe8\xff", true), corows::error::invalid_utf8);
    check(frame(0x09, "x", true), corows::error::fragmented_control);
}

BOOST_AUTO_TEST_CASE(valid_and_invalid_received_close_codes) {
    for (int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999}) {
        auto reader = server_reader();
        std::string p{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
        BOOST_TEST(feed(reader, frame(0x88, p, true), 64).back() == "close:" + std::to_string(code) + ":");
    }
    for (int code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}) {
        auto reader = server_reader();
        std::string p{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
        BOOST_TEST(feed(reader, frame(0x88, p, true), 64).back() == fail(corows::error::bad_close_code));
    }
    auto reader = server_reader();
    BOOST_TEST(feed(reader, frame(0x88, "", true), 64).back() == "close:1005:");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_fails_at_the_first_bad_byte_across_fragments) {
    // The first fragment ends inside a sequence; the second's first byte breaks it. The
    // final fragment never arrives: the failure must not wait for it.
    bytes wire = cat({frame(0x01, "ok \xce", true), frame(0x00, "\x41", true)});
    auto reader = server_reader();
    auto ev = feed(reader, wire, 1);
    BOOST_TEST(ev.back() == fail(corows::error::invalid_utf8));
    // A single frame fails as soon as the bad byte is read, before the frame is complete.
    bytes single = frame(0x81, std::string("abc\xff") + std::string(1000, 'x'), true);
    auto r2 = server_reader();
    bytes prefix(single.begin(), single.begin() + 2 + 4 + 4 + 4 + 1 + 4);
    BOOST_TEST(feed(r2, prefix, prefix.size()).back() == fail(corows::error::invalid_utf8));
}

BOOST_AUTO_TEST_CASE(size_limit_from_the_header_alone) {
    auto reader = server_reader(100);
    bytes big = frame(0x82, std::string(101, 'x'), true);
    bytes header_only(big.begin(), big.begin() + 8);
    BOOST_TEST(feed(reader, header_only, header_only.size()).back() == fail(corows::error::message_too_big));
    // Across fragments: 60 + 41 > 100.
    auto r2 = server_reader(100);
    bytes frag = cat({frame(0x02, std::string(60, 'a'), true), frame(0x80, std::string(41, 'b'), true)});
    BOOST_TEST(feed(r2, frag, 7).back() == fail(corows::error::message_too_big));
    auto r3 = server_reader(100);
    BOOST_TEST(feed(r3, frame(0x82, std::string(100, 'x'), true), 3).back() == "binary:" + std::string(100, 'x'));
}

BOOST_AUTO_TEST_CASE(compressed_messages) {
    auto reader = corows::message_reader(corows::reader_config{corows::role::client, 1024});
    reader.enable_deflate({15, false});
    // RFC 7692 §7.2.3.1 and §7.2.3.2: "Hello" compressed, then again sharing the window.
    bytes wire{0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00,
               0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00,
               // §7.2.3.1 split into two fragments.
               0x41, 0x03, 0xf2, 0x48, 0xcd, 0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00};
    for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, wire.size()}) {
        auto r = corows::message_reader(corows::reader_config{corows::role::client, 1024});
        r.enable_deflate({15, false});
        // The fragmented third message is self-contained literals, so the shared window does
        // not change it.
        std::vector<std::string> expected{"text:Hello", "text:Hello", "text:Hello"};
        std::size_t frames = 0;
        BOOST_TEST(feed(r, wire, chunk, &frames) == expected, "chunk " << chunk);
        BOOST_TEST(frames == 4u, "chunk " << chunk);
    }
    // RSV1 on a continuation frame, and on a control frame.
    bytes bad_cont{0x41, 0x03, 0xf2, 0x48, 0xcd, 0xc0, 0x04, 0xc9, 0xc9, 0x07, 0x00};
    auto r1 = corows::message_reader(corows::reader_config{corows::role::client, 1024});
    r1.enable_deflate({15, false});
    BOOST_TEST(feed(r1, bad_cont, bad_cont.size()).back() == fail(corows::error::bad_compressed_frame));
    bytes bad_ping{0xc9, 0x00};
    auto r2 = corows::message_reader(corows::reader_config{corows::role::client, 1024});
    r2.enable_deflate({15, false});
    BOOST_TEST(feed(r2, bad_ping, 2).back() == fail(corows::error::bad_compressed_frame));
    // Garbage deflate data.
    bytes garbage{0xc2, 0x03, 0xff, 0xff, 0xff};
    auto r3 = corows::message_reader(corows::reader_config{corows::role::client, 1024});
    r3.enable_deflate({15, false});
    BOOST_TEST(feed(r3, garbage, 5).back() == fail(corows::error::inflate_failed));
}

BOOST_AUTO_TEST_CASE(compressed_message_over_the_limit_is_refused) {
    // 100 KB of zeros compresses to a few hundred bytes; the limit is 10 KB.
    corows::message_writer w(corows::writer_config{corows::role::server, 0});
    corows::deflate_config d;
    w.enable_deflate(d);
    corows::byte_buffer out;
    bytes zeros(100'000, 0);
    BOOST_REQUIRE(!w.append_message(out, corows::message_kind::binary, zeros, true));
    BOOST_TEST(out.size() < 1000u);
    auto r = corows::message_reader(corows::reader_config{corows::role::client, 10'000});
    r.enable_deflate({15, false});
    bytes wire(out.data().begin(), out.data().end());
    BOOST_TEST(feed(r, wire, wire.size()).back() == fail(corows::error::message_too_big));
}

// The header of a data frame of `length` bytes, unmasked, with RSV1 when `compressed`.
bytes header_of(std::uint64_t length, bool compressed) {
    corows::frame_header h;
    h.op = corows::opcode::binary;
    h.rsv1 = compressed;
    h.payload_length = length;
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    std::size_t n = corows::encode_frame_header(h, head);
    return bytes(head.begin(), head.begin() + static_cast<long>(n));
}

BOOST_AUTO_TEST_CASE(largest_limit_admits_compressed_frames_over_64_mib) {
    // The frame limit is the message limit plus slack: computed in size_t, SIZE_MAX plus slack
    // wrapped round to 64 MiB + 1023 on 32-bit targets, refusing this frame with 1009.
    auto r = corows::message_reader(corows::reader_config{corows::role::client, SIZE_MAX});
    r.enable_deflate({15, false});
    BOOST_TEST(feed(r, header_of(128u << 20, true), 10).empty());
}

BOOST_AUTO_TEST_CASE(frame_longer_than_size_t_holds_is_refused_with_1009) {
    // On a 32-bit target a frame of 4 GiB can be announced but never counted: it is refused
    // from its header, whatever the limit, with close code 1009, rather than taken modulo 2^32.
    // A 64-bit size_t holds every length a frame can have (under 2^63): the largest is then
    // waited for.
    const bool narrow = std::numeric_limits<std::size_t>::digits < 64;
    const std::uint64_t length = narrow ? std::uint64_t{SIZE_MAX} + 1 : (std::uint64_t{1} << 63) - 1;
    for (bool compressed : {false, true}) {
        auto r = corows::message_reader(corows::reader_config{corows::role::client, SIZE_MAX});
        if (compressed) r.enable_deflate({15, false});
        const auto events = feed(r, header_of(length, compressed), 10);
        if (narrow)
            BOOST_TEST(events == std::vector<std::string>{fail(corows::error::frame_too_big)},
                       "compressed " << compressed);
        else
            BOOST_TEST(events.empty(), "compressed " << compressed);
    }
    BOOST_TEST((corows::close_code_for(corows::error::frame_too_big) == corows::close_code::message_too_big));
}

BOOST_AUTO_TEST_SUITE_END()
