// SPDX-License-Identifier: BSL-1.0
// Frames a misbehaving peer sends, byte for byte, and the RFC's answer on the wire: close 1002
// for protocol violations, 1007 for invalid UTF-8, 1009 for oversized messages. Also frames
// that are legal but unusual: control frames between the fragments of a message.
#include "loopback.hpp"

#include <corows/protocol/deflate_stream.hpp>

#include <boost/test/unit_test.hpp>

namespace {

using namespace corows::test;
using corows::error;
using corows::message;
using corows::options;
using std::chrono::milliseconds;

// Sends `writes` (one socket write each) from a raw client after the handshake; the corows
// server's read must fail with `expected_ec` and the client must then see a close frame with
// `expected_code`, and TCP closing.
void client_violation(const options& o, const std::vector<bytes>& writes, std::uint16_t expected_code,
                      corows::error_code expected_ec, const std::string& extra_request_lines) {
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            message m;
            corows::error_code ec;
            // Complete messages before the violation are delivered; the read after them fails.
            do {
                ec = co_await corows::test::read_or_closed(ws, m);
            } while (!ec);
            BOOST_TEST(ec == expected_ec);
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), extra_request_lines);
            for (const auto& w : writes) co_await p.try_send(w);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == expected_code);
            BOOST_TEST(!c.reason.empty(), "the reason names the violation");
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

void client_violation(const std::vector<bytes>& writes, std::uint16_t code, corows::error_code ec) {
    client_violation(options{}, writes, code, ec, "");
}

// As client_violation, with a raw server misbehaving towards a corows client.
void server_violation(const std::vector<bytes>& writes, std::uint16_t expected_code, corows::error_code expected_ec) {
    run_raw_server({},
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            message m;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(ec == expected_ec);
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            for (const auto& w : writes) co_await p.try_send(w);
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f.has_value());
            BOOST_TEST(f->op == 0x8);
            BOOST_TEST(f->masked);
            BOOST_TEST(parse_close(*f).code == expected_code);
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

bytes raw(std::initializer_list<std::uint8_t> b) { return bytes(b); }

options with_deflate(std::size_t max_message_size) {
    options o;
    o.max_message_size = max_message_size;
    o.deflate.enabled = true;
    o.deflate.threshold = 0;
    return o;
}

const std::string deflate_offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n";

// A compressed frame of `payload` (RSV1, masked).
bytes compressed_frame(std::uint8_t op, const bytes& payload) {
    corows::deflate_stream d;
    corows::error_code ec;
    auto out = d.compress(payload, ec);
    BOOST_REQUIRE(!ec);
    return encode(raw_frame{op, true, 4, true, bytes(out.begin(), out.end())});
}

} // namespace

BOOST_AUTO_TEST_SUITE(protocol)

BOOST_AUTO_TEST_CASE(reserved_opcodes_get_1002) {
    client_violation({client_frame(reserved_data_opcode, "x")}, 1002, err(error::reserved_opcode));
    client_violation({client_frame(0x7, "x")}, 1002, err(error::reserved_opcode));
    client_violation({client_frame(0xB, "x")}, 1002, err(error::reserved_opcode));
    client_violation({client_frame(0xF, "")}, 1002, err(error::reserved_opcode));
    server_violation({server_frame(0x3, "x")}, 1002, err(error::reserved_opcode));
}

BOOST_AUTO_TEST_CASE(reserved_bits_without_extension_get_1002) {
    client_violation({client_frame(0x1, "x", true, 2)}, 1002, err(error::reserved_bits));
    client_violation({client_frame(0x2, "x", true, 1)}, 1002, err(error::reserved_bits));
    // RSV1 is only meaningful once permessage-deflate was negotiated.
    client_violation({client_frame(0x1, "x", true, 4)}, 1002, err(error::reserved_bits));
    client_violation({client_frame(0x9, "", true, 4)}, 1002, err(error::reserved_bits));
    server_violation({server_frame(0x2, "x", true, 4)}, 1002, err(error::reserved_bits));
}

BOOST_AUTO_TEST_CASE(unmasked_client_frame_gets_1002) {
    client_violation({server_frame(0x1, "unmasked")}, 1002, err(error::mask_required));
    client_violation({server_frame(0x9, "")}, 1002, err(error::mask_required));
}

BOOST_AUTO_TEST_CASE(masked_server_frame_gets_1002) {
    server_violation({client_frame(0x1, "masked")}, 1002, err(error::unexpected_mask));
    server_violation({client_frame(0x8, close_payload(1000))}, 1002, err(error::unexpected_mask));
}

BOOST_AUTO_TEST_CASE(continuation_without_start_gets_1002) {
    client_violation({client_frame(0x0, "orphan")}, 1002, err(error::bad_continuation));
    // A complete message ends the fragmented state: another continuation is an orphan.
    client_violation({concat(client_frame(0x1, "a", false), client_frame(0x0, "b"), client_frame(0x0, "c"))},
                     1002, err(error::bad_continuation));
    server_violation({server_frame(0x0, "orphan", false)}, 1002, err(error::bad_continuation));
}

BOOST_AUTO_TEST_CASE(new_message_inside_fragmented_message_gets_1002) {
    client_violation({client_frame(0x1, "part", false), client_frame(0x2, "new")}, 1002,
                     err(error::expected_continuation));
    client_violation({client_frame(0x2, "part", false), client_frame(0x1, "new", false)}, 1002,
                     err(error::expected_continuation));
}

BOOST_AUTO_TEST_CASE(fragmented_control_gets_1002) {
    client_violation({client_frame(0x9, "ping", false)}, 1002, err(error::fragmented_control));
    client_violation({client_frame(0xA, "pong", false)}, 1002, err(error::fragmented_control));
    client_violation({client_frame(0x8, close_payload(1000), false)}, 1002, err(error::fragmented_control));
}

BOOST_AUTO_TEST_CASE(control_over_125_bytes_gets_1002) {
    client_violation({client_frame(0x9, std::string(126, 'p'))}, 1002, err(error::control_too_big));
    client_violation({client_frame(0x8, close_payload(1000, std::string(124, 'r')))}, 1002,
                     err(error::control_too_big));
    // The header alone is enough: 126 as a control frame's length byte.
    client_violation({raw({0x89, 0x80 | 126})}, 1002, err(error::control_too_big));
}

BOOST_AUTO_TEST_CASE(non_minimal_lengths_get_1002) {
    // Length 5 in the 16-bit form, and a 64-bit length with the top bit set.
    client_violation({raw({0x82, 0x80 | 126, 0x00, 0x05, 1, 2, 3, 4, 0, 0, 0, 0, 0})}, 1002, err(error::bad_length));
    client_violation({raw({0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0})}, 1002, err(error::bad_length));
}

BOOST_AUTO_TEST_CASE(invalid_utf8_text_gets_1007) {
    for (std::string bad : {"\xff", "ok \xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "cut \xe2\x82"}) {
        BOOST_TEST_CONTEXT("payload " << bad.size() << " bytes") {
            client_violation({client_frame(0x1, bad)}, 1007, err(error::invalid_utf8));
        }
    }
    server_violation({server_frame(0x1, "\xc3\x28")}, 1007, err(error::invalid_utf8));
    // Binary messages are not checked.
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(!m->is_text());
            BOOST_TEST(m->size() == 2u);
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(client_frame(0x2, "\xc3\x28"));
            co_await expect_close(p);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(utf8_checked_across_fragments) {
    // A character split between fragments is fine...
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "price: \xe2\x82\xac" "5");
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(client_frame(0x1, "price: \xe2", false));
            co_await p.send(client_frame(0x0, "\x82", false));
            co_await p.send(client_frame(0x0, "\xac" "5", true));
            co_await expect_close(p);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
    // ...a bad continuation byte in the second fragment fails before the message ends (the
    // final fragment is never sent)...
    client_violation({client_frame(0x1, "abc\xe2\x82", false), client_frame(0x0, "\x28 more", false)}, 1007,
                     err(error::invalid_utf8));
    // ...and a sequence left open by the final fragment fails at the end.
    client_violation({client_frame(0x1, "abc", false), client_frame(0x0, "\xe2\x82", true)}, 1007,
                     err(error::invalid_utf8));
}

BOOST_AUTO_TEST_CASE(utf8_fails_when_the_bad_byte_arrives) {
    // One 1000-byte text frame sent in pieces: valid bytes, a pause, then one bad byte.
    // The close must come before the remaining bytes are sent (they never are).
    std::string prefix = "valid prefix \xe2\x82";
    bytes head = encode_announcing(raw_frame{0x1, true, 0, true, bytes(prefix.begin(), prefix.end())}, 1000);
    // encode_announcing masked only the bytes it had, from offset 0: the bad byte must be
    // masked at its own offset.
    bytes bad{0x28};
    corows::apply_mask(bad, {0x37, 0xfa, 0x21, 0x3d}, prefix.size());
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            message m;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(ec == err(error::invalid_utf8));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(head);
            p.set_timeout(milliseconds(100));
            auto early = co_await p.read_frame();
            BOOST_TEST(!early.has_value(), "closed before the bad byte was sent");
            BOOST_TEST(p.last_error() == asio::error::timed_out);
            p.set_timeout(milliseconds(5000));
            co_await p.send(bad);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1007);
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

BOOST_AUTO_TEST_CASE(oversized_message_refused_from_its_header) {
    options o;
    o.max_message_size = 1024 * 1024;
    // Only the header of a 1 TiB frame: refused without waiting for a payload byte.
    client_violation(o, {encode_announcing(raw_frame{0x2, true, 0, true, {}}, std::uint64_t{1} << 40)}, 1009,
                     err(error::frame_too_big), "");
    // Only the header of a frame one byte over the limit.
    client_violation(o, {encode_announcing(raw_frame{0x2, true, 0, true, {}}, o.max_message_size + 1)}, 1009,
                     err(error::message_too_big), "");
    // Two fragments that add up to more than the limit: refused at the second header.
    client_violation(o,
                     {encode(raw_frame{0x2, false, 0, true, bytes(600 * 1024, 7)}),
                      encode_announcing(raw_frame{0x0, true, 0, true, {}}, 600 * 1024)},
                     1009, err(error::message_too_big), "");
}

BOOST_AUTO_TEST_CASE(message_of_exactly_the_limit_is_accepted) {
    options o;
    o.max_message_size = 256 * 1024;
    const bytes whole = encode(raw_frame{0x2, true, 0, true, bytes(o.max_message_size, 1)});
    const bytes first = encode(raw_frame{0x2, false, 0, true, bytes(o.max_message_size - 1, 1)});
    const bytes last = encode(raw_frame{0x0, true, 0, true, bytes(1, 1)});
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            for (int i = 0; i < 2; ++i) {
                auto m = co_await ws.read_message();
                BOOST_REQUIRE(m.has_value());
                BOOST_TEST(m->size() == o.max_message_size);
            }
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(whole);
            co_await p.send(first);
            co_await p.send(last);
            co_await expect_close(p);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(compressed_message_inflating_over_limit_gets_1009) {
    // 16 MiB of zeros deflate to about 72 KiB: the limit applies to the inflated size.
    bytes bomb = compressed_frame(0x2, bytes(16 * 1024 * 1024, 0));
    BOOST_TEST(bomb.size() < 128 * 1024u);
    client_violation(with_deflate(1024 * 1024), {bomb}, 1009, err(error::message_too_big), deflate_offer);
}

BOOST_AUTO_TEST_CASE(compressed_protocol_errors) {
    auto o = with_deflate(1024 * 1024);
    // Not deflate data at all.
    client_violation(o, {encode(raw_frame{0x2, true, 4, true, bytes(64, 0xff)})}, 1002, err(error::inflate_failed),
                     deflate_offer);
    // RSV1 belongs on the first frame only, and never on control frames.
    client_violation(o, {concat(client_frame(0x2, "a", false), client_frame(0x0, "b", true, 4))},
                     1002, err(error::bad_compressed_frame), deflate_offer);
    client_violation(o, {client_frame(0x9, "", true, 4)}, 1002, err(error::bad_compressed_frame), deflate_offer);
    // Compressed text is checked after inflation.
    client_violation(o, {compressed_frame(0x1, bytes(100, 0xff))}, 1007, err(error::invalid_utf8), deflate_offer);
}

BOOST_AUTO_TEST_CASE(control_frames_between_fragments) {
    // text "Hel", ping, "lo, ", unsolicited pong, ping, "world": the pongs come back while
    // the message is still open, and the message arrives whole.
    std::vector<std::string> pongs_seen;
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            ws.on_pong([&](std::span<const std::uint8_t> p) { pongs_seen.emplace_back(p.begin(), p.end()); });
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->is_text());
            BOOST_TEST(m->text() == "Hello, world");
            co_await ws.write_message(*m);
            auto end = co_await ws.read_message();
            BOOST_TEST(!end.has_value());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(client_frame(0x1, "Hel", false));
            co_await p.send(client_frame(0x9, "first"));
            auto pong = co_await p.read_frame();
            BOOST_REQUIRE(pong.has_value());
            BOOST_TEST(pong->op == 0xA);
            BOOST_TEST(std::string(pong->payload.begin(), pong->payload.end()) == "first");
            // Several frames in one segment: fragment, pong, ping, final fragment.
            co_await p.send(concat(client_frame(0x0, "lo, ", false), client_frame(0xA, "unsolicited"),
                                   client_frame(0x9, "second"), client_frame(0x0, "world", true)));
            pong = co_await p.read_frame();
            BOOST_REQUIRE(pong.has_value());
            BOOST_TEST(pong->op == 0xA);
            BOOST_TEST(std::string(pong->payload.begin(), pong->payload.end()) == "second");
            auto echo = co_await p.read_frame();
            BOOST_REQUIRE(echo.has_value());
            BOOST_TEST(echo->op == 0x1);
            BOOST_TEST(echo->fin);
            BOOST_TEST(std::string(echo->payload.begin(), echo->payload.end()) == "Hello, world");
            co_await p.send(client_frame(0x8, close_payload(1000)));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await expect_eof(p);
        });
    BOOST_TEST(pongs_seen.size() == 1u);
    if (!pongs_seen.empty()) BOOST_TEST(pongs_seen[0] == "unsolicited");
}

BOOST_AUTO_TEST_CASE(compressed_fragments_with_control_frames_between) {
    // A compressed message in three fragments with a ping between each: the inflater keeps
    // its state across the control frames.
    std::string text;
    for (int i = 0; i < 200; ++i) text += "{\"id\":" + std::to_string(i) + ",\"ok\":true}";
    corows::deflate_stream d;
    corows::error_code ec;
    auto z = d.compress(corows::as_bytes(text), ec);
    bytes zb(z.begin(), z.end());
    BOOST_REQUIRE(zb.size() > 30u);
    std::size_t third = zb.size() / 3;
    bytes f1 = encode(raw_frame{0x1, false, 4, true, bytes(zb.begin(), zb.begin() + third)});
    bytes f2 = encode(raw_frame{0x0, false, 0, true, bytes(zb.begin() + third, zb.begin() + 2 * third)});
    bytes f3 = encode(raw_frame{0x0, true, 0, true, bytes(zb.begin() + 2 * third, zb.end())});
    run_raw_client(with_deflate(1024 * 1024),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            BOOST_TEST(ws.deflate().has_value());
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->compressed());
            BOOST_TEST(m->text() == text);
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), deflate_offer);
            co_await p.send(concat(f1, client_frame(0x9, "a"), f2, client_frame(0x9, "b"), f3));
            // The latest ping gets its pong; the first one too only if the server read it on
            // its own (RFC 6455 §5.5.3 lets a pong answer just the most recent ping).
            auto pong = co_await p.read_frame();
            BOOST_REQUIRE(pong.has_value());
            BOOST_TEST(pong->op == 0xA);
            if (std::string(pong->payload.begin(), pong->payload.end()) == "a") {
                pong = co_await p.read_frame();
                BOOST_REQUIRE(pong.has_value());
                BOOST_TEST(pong->op == 0xA);
            }
            BOOST_TEST(std::string(pong->payload.begin(), pong->payload.end()) == "b");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(frames_split_byte_by_byte) {
    // Every byte of a fragmented text message with a ping inside arrives in its own segment.
    bytes all = concat(client_frame(0x1, "sp\xc3", false), client_frame(0x9, "x"), client_frame(0x0, "\xa9lit", true));
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "sp\xc3\xa9lit");
            co_await ws.close();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            for (std::size_t i = 0; i < all.size(); ++i) {
                co_await p.send(std::span<const std::uint8_t>(all).subspan(i, 1));
                co_await sleep(milliseconds(1));
            }
            auto pong = co_await p.read_frame();
            BOOST_REQUIRE(pong.has_value());
            BOOST_TEST(pong->op == 0xA);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_SUITE_END()
