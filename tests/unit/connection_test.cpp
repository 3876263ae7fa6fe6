// SPDX-License-Identifier: BSL-1.0
// corows::connection driven with byte arrays: every rule a connection decides (pongs, close
// echoes, failure codes, timeouts, back-pressure, fairness, what it charges and keeps).
#include <corows/message.hpp>
#include <corows/protocol/connection.hpp>
#include <corows/protocol/frame.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
using corows::connection_event;
using corows::connection_state;
using corows::role;
using clock_type = corows::connection::clock;
using std::chrono::milliseconds;

const clock_type::time_point t0 = clock_type::time_point{} + std::chrono::hours(1);

bytes str(std::string_view s) { return bytes(s.begin(), s.end()); }

bytes cat(std::initializer_list<bytes> parts) {
    bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// One frame as a client sends it (masked with a fixed key) or a server sends it.
bytes frame(std::uint8_t b0, const bytes& payload, bool masked = true) {
    corows::frame_header h;
    h.fin = (b0 & 0x80) != 0;
    h.rsv1 = (b0 & 0x40) != 0;
    h.op = static_cast<corows::opcode>(b0 & 0x0F);
    h.payload_length = payload.size();
    h.masked = masked;
    h.key = {0x37, 0xfa, 0x21, 0x3d};
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    std::size_t n = corows::encode_frame_header(h, head);
    bytes out(head.begin(), head.begin() + static_cast<long>(n));
    for (std::size_t i = 0; i < payload.size(); ++i)
        out.push_back(static_cast<std::uint8_t>(payload[i] ^ (masked ? h.key[i % 4] : 0)));
    return out;
}

bytes close_payload(std::uint16_t code, std::string_view reason = {}) {
    bytes p(2 + reason.size());
    p[0] = static_cast<std::uint8_t>(code >> 8);
    p[1] = static_cast<std::uint8_t>(code);
    std::copy(reason.begin(), reason.end(), p.begin() + 2);
    return p;
}

std::shared_ptr<const corows::options> settings(corows::options o = {}) {
    return std::make_shared<const corows::options>(std::move(o));
}

// An open connection in `r` at t0.
std::unique_ptr<corows::connection> open_connection(role r, corows::options o = {},
                                            std::optional<corows::deflate_params> params = std::nullopt) {
    auto c = std::make_unique<corows::connection>(settings(std::move(o)));
    c->open(r, "", params, t0);
    return c;
}

// Puts `wire` in the connection's receive buffer, as transport reads would, at `now`.
void receive(corows::connection& c, const bytes& wire, clock_type::time_point now = t0) {
    std::size_t off = 0;
    while (off < wire.size()) {
        auto space = c.receive_space();
        std::size_t n = std::min(space.size(), wire.size() - off);
        std::copy_n(wire.begin() + static_cast<long>(off), n, space.begin());
        c.received(n, now);
        off += n;
    }
}

// Decodes until need_more, naming each event; a yield just starts a new turn.
std::vector<std::string> events(corows::connection& c, corows::message& m) {
    std::vector<std::string> out;
    for (;;) {
        switch (c.next_event(m)) {
        case connection_event::need_more: return out;
        case connection_event::message: out.push_back((m.is_text() ? "text:" : "binary:") + m.str()); break;
        case connection_event::ping: out.push_back("ping:" + std::string(c.control_payload().begin(), c.control_payload().end())); break;
        case connection_event::pong: out.push_back("pong:" + std::string(c.control_payload().begin(), c.control_payload().end())); break;
        case connection_event::close: out.push_back("close:" + std::to_string(c.peer_code())); break;
        case connection_event::failed: out.push_back("failed:" + c.error().message()); break;
        case connection_event::yield: c.begin_turn(); break;
        }
    }
}

std::vector<std::string> events(corows::connection& c) {
    corows::message m;
    return events(c, m);
}

// Everything the connection asks to send, in order, as the transport would write it.
bytes output(corows::connection& c) {
    bytes out;
    if (!c.has_output()) return out;
    c.take_output().for_each_piece([&](std::span<const std::uint8_t> piece) {
        out.insert(out.end(), piece.begin(), piece.end());
    });
    c.output_written();
    return out;
}

std::string fail(corows::error e) { return "failed:" + make_error_code(e).message(); }

} // namespace

BOOST_AUTO_TEST_SUITE(connection)

BOOST_AUTO_TEST_CASE(a_ping_gets_a_pong_with_its_payload_rfc_6455_5_7) {
    auto c = open_connection(role::server);
    receive(*c, frame(0x89, str("Hello")));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"ping:Hello"}));
    // The unmasked pong of RFC 6455 §5.7.
    BOOST_TEST(output(*c) == (bytes{0x8a, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}));
    BOOST_TEST((c->state() == connection_state::open));
}

BOOST_AUTO_TEST_CASE(a_client_masks_its_pong) {
    auto c = open_connection(role::client);
    receive(*c, frame(0x89, str("Hi"), false));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"ping:Hi"}));
    bytes out = output(*c);
    BOOST_REQUIRE(out.size() == 8u);
    BOOST_TEST(out[0] == 0x8a);
    BOOST_TEST(out[1] == 0x82);
    BOOST_TEST((out[6] ^ out[2]) == 'H');
    BOOST_TEST((out[7] ^ out[3]) == 'i');
}

BOOST_AUTO_TEST_CASE(a_flood_of_pings_queues_one_pong_for_the_latest) {
    auto c = open_connection(role::server);
    bytes wire;
    for (int i = 0; i < 1000; ++i) {
        auto f = frame(0x89, str("p" + std::to_string(i)));
        wire.insert(wire.end(), f.begin(), f.end());
    }
    receive(*c, wire);
    auto ev = events(*c);
    BOOST_TEST(std::count(ev.begin(), ev.end(), "ping:p999") == 1);
    BOOST_TEST(c->queued() == 6u);
    BOOST_TEST(output(*c) == cat({bytes{0x8a, 0x04}, str("p999")}));

    // A pong that is no longer last in the queue stays: the data after it keeps its place.
    receive(*c, frame(0x89, str("a")));
    events(*c);
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    receive(*c, frame(0x89, str("b")));
    events(*c);
    BOOST_TEST(output(*c) == cat({frame(0x8a, str("a"), false), frame(0x81, str("x"), false),
                                  frame(0x8a, str("b"), false)}));
}

BOOST_AUTO_TEST_CASE(a_pong_before_a_shared_frame_is_not_replaced_past_it) {
    auto c = open_connection(role::server);
    receive(*c, frame(0x89, str("a")));
    events(*c);
    auto pm = corows::prepared_message::make(str("shared"), corows::message_kind::text);
    BOOST_REQUIRE(!c->send_prepared(pm));
    receive(*c, frame(0x89, str("b")));
    events(*c);
    BOOST_TEST(output(*c) == cat({frame(0x8a, str("a"), false), frame(0x81, str("shared"), false),
                                  frame(0x8a, str("b"), false)}));
}

BOOST_AUTO_TEST_CASE(a_close_with_a_code_is_echoed_and_a_server_is_done) {
    auto c = open_connection(role::server);
    receive(*c, frame(0x88, close_payload(1001, "bye")));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"close:1001"}));
    BOOST_TEST(c->peer_code() == 1001);
    BOOST_TEST(c->peer_reason() == "bye");
    BOOST_TEST(output(*c) == (bytes{0x88, 0x02, 0x03, 0xe9}));
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->error() == make_error_code(corows::error::closed));
    BOOST_TEST(!c->timed_out());
}

BOOST_AUTO_TEST_CASE(a_close_without_a_code_gets_an_empty_close) {
    auto c = open_connection(role::server);
    receive(*c, frame(0x88, {}));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"close:1005"}));
    BOOST_TEST(output(*c) == (bytes{0x88, 0x00}));
}

BOOST_AUTO_TEST_CASE(a_client_waits_for_the_server_to_close_tcp) {
    corows::options o;
    o.close_timeout = milliseconds(300);
    auto c = open_connection(role::client, o);
    receive(*c, frame(0x88, close_payload(1000), false), t0 + milliseconds(10));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"close:1000"}));
    BOOST_TEST((c->state() == connection_state::closing));
    BOOST_TEST(output(*c).size() == 8u); // 88 82, key, masked code
    BOOST_TEST((c->deadline() == t0 + milliseconds(310)));
    // Bytes after the close frame mean nothing.
    receive(*c, frame(0x81, str("late"), false));
    BOOST_TEST(events(*c).empty());
    c->receive_closed();
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->peer_code() == 1000);
    BOOST_TEST(c->error() == make_error_code(corows::error::closed));
}

BOOST_AUTO_TEST_CASE(a_server_that_keeps_tcp_open_is_given_up_on_without_an_error) {
    corows::options o;
    o.close_timeout = milliseconds(300);
    auto c = open_connection(role::client, o);
    receive(*c, frame(0x88, close_payload(1000), false));
    events(*c);
    BOOST_TEST((c->on_timer(t0 + milliseconds(299)) == corows::timer_outcome::none));
    BOOST_TEST((c->on_timer(t0 + milliseconds(300)) == corows::timer_outcome::timed_out));
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->peer_code() == 1000);
    BOOST_TEST(c->error() == make_error_code(corows::error::closed));
    BOOST_TEST(!c->timed_out());
}

BOOST_AUTO_TEST_CASE(violations_fail_with_the_rfc_codes) {
    struct violation {
        bytes wire;
        corows::error error;
        std::uint16_t code;
    };
    corows::options small;
    small.max_message_size = 10;
    const violation cases[] = {
        {frame(0x81, str("unmasked"), false), corows::error::mask_required, 1002},
        {frame(0x83, str("x")), corows::error::reserved_opcode, 1002},
        {frame(0xC1, str("x")), corows::error::reserved_bits, 1002},
        {frame(0x80, str("x")), corows::error::bad_continuation, 1002},
        {cat({frame(0x01, str("a")), frame(0x81, str("b"))}), corows::error::expected_continuation, 1002},
        {frame(0x09, str("x")), corows::error::fragmented_control, 1002},
        {frame(0x81, bytes{0xc3, 0x28}), corows::error::invalid_utf8, 1007},
        {frame(0x88, close_payload(1005)), corows::error::bad_close_code, 1002},
        {frame(0x88, bytes{0x03}), corows::error::bad_close_payload, 1002},
        {frame(0x88, cat({close_payload(1000), bytes{0xff}})), corows::error::invalid_utf8, 1007},
        {frame(0x82, bytes(11, 0)), corows::error::message_too_big, 1009},
    };
    for (const auto& v : cases) {
        auto c = open_connection(role::server, small);
        receive(*c, v.wire);
        auto ev = events(*c);
        BOOST_REQUIRE(!ev.empty());
        BOOST_TEST(ev.back() == fail(v.error));
        BOOST_TEST((c->state() == connection_state::closed));
        BOOST_TEST(c->error() == make_error_code(v.error));
        bytes out = output(*c);
        // Our close frame: the code, then the violation's message as the reason.
        BOOST_REQUIRE(out.size() >= 4u);
        BOOST_TEST(out[0] == 0x88);
        BOOST_TEST((out[2] << 8 | out[3]) == v.code);
        std::string reason(out.begin() + 4, out.end());
        BOOST_TEST(reason == make_error_code(v.error).message().substr(0, 123));
        // Nothing more is decoded, sent, or accepted.
        receive(*c, frame(0x89, str("ping")));
        BOOST_TEST(events(*c).empty());
        BOOST_TEST(!c->has_output());
        BOOST_TEST(c->send_message(corows::message_kind::text, str("x"), false) ==
                   make_error_code(corows::error::closed));
    }
}

BOOST_AUTO_TEST_CASE(our_close_then_messages_in_flight_then_the_answer) {
    auto c = open_connection(role::server);
    BOOST_TEST(c->start_close(1000, "done", t0) == std::error_code{});
    BOOST_TEST(output(*c) == cat({bytes{0x88, 0x06, 0x03, 0xe8}, str("done")}));
    BOOST_TEST((c->state() == connection_state::closing));
    BOOST_TEST(c->close_sent());
    // Nothing more may be sent: not a message, not a pong, not a second close.
    BOOST_TEST(c->send_message(corows::message_kind::text, str("x"), false) == make_error_code(corows::error::closed));
    BOOST_TEST(c->start_close(1001, "", t0) == std::error_code{});
    receive(*c, cat({frame(0x81, str("in flight")), frame(0x89, str("p")), frame(0x88, close_payload(1000))}));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"text:in flight", "ping:p", "close:1000"}));
    BOOST_TEST(!c->has_output());
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->error() == make_error_code(corows::error::closed));
}

BOOST_AUTO_TEST_CASE(unsendable_close_codes_are_refused) {
    auto c = open_connection(role::server);
    for (std::uint16_t code : {999, 1004, 1005, 1006, 1015, 2999, 5000})
        BOOST_TEST(c->start_close(code, "", t0) == make_error_code(corows::error::bad_close_code));
    BOOST_TEST(!c->has_output());
    BOOST_TEST(c->start_close(0, "", t0) == std::error_code{});
    BOOST_TEST(output(*c) == (bytes{0x88, 0x00}));
}

BOOST_AUTO_TEST_CASE(a_long_close_reason_is_cut_at_a_character_boundary) {
    auto c = open_connection(role::server);
    std::string reason;
    for (int i = 0; i < 100; ++i) reason += "\xc3\xa9"; // é, two bytes each
    BOOST_REQUIRE(!c->start_close(1000, reason, t0));
    bytes out = output(*c);
    BOOST_TEST(out[1] == 2 + 122); // 61 whole characters fit in 123 bytes
}

BOOST_AUTO_TEST_CASE(a_dropped_transport_is_1006) {
    auto c = open_connection(role::server);
    c->receive_closed();
    BOOST_TEST(c->peer_code() == 1006);
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->error() == make_error_code(corows::error::closed));
    BOOST_TEST(!c->has_output());
}

BOOST_AUTO_TEST_CASE(handshake_timeout) {
    corows::options o;
    o.handshake_timeout = milliseconds(500);
    corows::connection c(settings(o));
    BOOST_TEST((c.state() == connection_state::connecting));
    BOOST_TEST((c.deadline() == clock_type::time_point::max()));
    c.begin_handshake(t0);
    BOOST_TEST((c.deadline() == t0 + milliseconds(500)));
    BOOST_TEST((c.on_timer(t0 + milliseconds(499)) == corows::timer_outcome::none));
    c.pause_handshake();
    BOOST_TEST((c.deadline() == clock_type::time_point::max()));
    c.begin_handshake(t0 + milliseconds(100));
    BOOST_TEST((c.on_timer(t0 + milliseconds(600)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c.error() == make_error_code(corows::error::timeout));
    BOOST_TEST(c.peer_code() == 0);
    BOOST_TEST(c.write_status() == make_error_code(corows::error::timeout));
}

BOOST_AUTO_TEST_CASE(a_bounded_handshake_keeps_one_deadline_through_every_phase) {
    // A server's deadline from accept: later phases and a pause keep it, an answer ends it.
    corows::options o;
    o.handshake_timeout = milliseconds(500);
    corows::connection c(settings(o));
    c.bound_handshake(t0 + milliseconds(500));
    BOOST_TEST(c.handshake_bounded());
    c.begin_handshake(t0 + milliseconds(300)); // the upgrade after a TLS handshake of 300 ms
    BOOST_TEST((c.deadline() == t0 + milliseconds(500)), "a later phase moved the deadline");
    c.pause_handshake();
    BOOST_TEST((c.deadline() == t0 + milliseconds(500)), "the application's decision stopped the deadline");
    BOOST_TEST((c.on_timer(t0 + milliseconds(500)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c.error() == make_error_code(corows::error::timeout));
    BOOST_TEST(!c.handshake_bounded(), "a connection that timed out is still in its handshake");

    corows::connection answered(settings(o));
    answered.bound_handshake(t0 + milliseconds(500));
    answered.end_handshake_bound();
    BOOST_TEST(!answered.handshake_bounded());
    answered.begin_handshake(t0 + milliseconds(400)); // the next request of a kept-alive connection
    BOOST_TEST((answered.deadline() == t0 + milliseconds(900)));
    answered.pause_handshake();
    BOOST_TEST((answered.deadline() == clock_type::time_point::max()));
}

BOOST_AUTO_TEST_CASE(traffic_moves_the_idle_timeout) {
    corows::options o;
    o.idle_timeout = milliseconds(100);
    auto c = open_connection(role::server, o);
    BOOST_TEST((c->deadline() == t0 + milliseconds(100)));
    receive(*c, frame(0x81, str("x")), t0 + milliseconds(50));
    events(*c);
    BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::none));
    BOOST_TEST((c->deadline() == t0 + milliseconds(150)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(150)) == corows::timer_outcome::timed_out));
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->timed_out());
    BOOST_TEST(c->peer_code() == 1006);
    BOOST_TEST(!c->has_output()); // no close frame: the peer is not listening
}

BOOST_AUTO_TEST_CASE(keepalive_pings_a_quiet_peer_then_the_idle_timeout_ends_it) {
    corows::options o;
    o.ping_interval = milliseconds(100);
    o.idle_timeout = milliseconds(250);
    auto c = open_connection(role::server, o);
    BOOST_TEST((c->deadline() == t0 + milliseconds(100)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::ping));
    BOOST_TEST(output(*c) == (bytes{0x89, 0x00}));
    BOOST_TEST((c->deadline() == t0 + milliseconds(200)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(200)) == corows::timer_outcome::ping));
    BOOST_TEST((c->deadline() == t0 + milliseconds(250)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(250)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c->error() == make_error_code(corows::error::timeout));
}

BOOST_AUTO_TEST_CASE(the_close_timeout_ends_an_unanswered_close) {
    corows::options o;
    o.close_timeout = milliseconds(300);
    o.ping_interval = milliseconds(100);
    auto c = open_connection(role::server, o);
    BOOST_REQUIRE(!c->start_close(1000, "", t0 + milliseconds(50)));
    // No keepalive once closing: only the close timeout runs.
    BOOST_TEST((c->deadline() == t0 + milliseconds(350)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(350)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c->timed_out());
    BOOST_TEST(c->peer_code() == 1006);
}

BOOST_AUTO_TEST_CASE(a_turn_ends_after_the_budget_however_small_the_frames) {
    // Empty continuation frames of one endless message, and pings: neither yields a message,
    // yet a turn must end once it has read turn_budget bytes. Reads of 4 KiB, each decoded
    // before the next, as a driver does.
    for (std::uint8_t filler : {std::uint8_t{0x00}, std::uint8_t{0x89}}) {
        auto c = open_connection(role::server);
        bytes wire = frame(0x01, {});
        bytes one = frame(filler, {});
        while (wire.size() < 3 * corows::connection::turn_budget) wire.insert(wire.end(), one.begin(), one.end());
        corows::message m;
        std::size_t turns = 1, read_in_turn = 0, most = 0;
        for (std::size_t off = 0; off < wire.size();) {
            auto space = c->receive_space();
            std::size_t n = std::min<std::size_t>({space.size(), 4096, wire.size() - off});
            std::copy_n(wire.begin() + static_cast<long>(off), n, space.begin());
            c->received(n, t0);
            off += n;
            read_in_turn += n;
            for (;;) {
                auto e = c->next_event(m);
                if (e == connection_event::need_more) break;
                if (e == connection_event::yield) {
                    // Everything read was decoded before the turn ended.
                    BOOST_TEST(c->buffered().size() < one.size());
                    BOOST_TEST(read_in_turn >= corows::connection::turn_budget);
                    most = std::max(most, read_in_turn);
                    read_in_turn = 0;
                    ++turns;
                    c->begin_turn();
                    break;
                }
                BOOST_REQUIRE((e == connection_event::ping));
            }
        }
        BOOST_TEST(turns >= 3u);
        BOOST_TEST(most <= corows::connection::turn_budget + 4096);
    }
}

BOOST_AUTO_TEST_CASE(reading_pauses_while_the_queue_is_full_until_the_close) {
    corows::options o;
    o.write_queue_limit = 100;
    auto c = open_connection(role::server, o);
    BOOST_TEST(!c->reading_paused());
    BOOST_TEST(c->has_room());
    BOOST_REQUIRE(!c->send_message(corows::message_kind::binary, bytes(200, 1), false));
    BOOST_TEST(c->reading_paused());
    BOOST_TEST(!c->has_room());
    auto& q = c->take_output();
    BOOST_TEST(q.size() == 204u);
    BOOST_TEST(c->reading_paused()); // in flight still counts
    c->output_written();
    BOOST_TEST(!c->reading_paused());
    BOOST_REQUIRE(!c->send_message(corows::message_kind::binary, bytes(200, 1), false));
    BOOST_REQUIRE(!c->start_close(1000, "", t0));
    BOOST_TEST(!c->reading_paused()); // the peer's close must still be read
}

BOOST_AUTO_TEST_CASE(a_shared_frame_is_charged_what_it_keeps_alive) {
    corows::options o;
    o.write_queue_limit = 64 * 1024;
    auto c = open_connection(role::server, o);
    auto pm = corows::prepared_message::make({}, corows::message_kind::text);
    BOOST_REQUIRE(!c->send_prepared(pm));
    std::size_t one = c->queued();
    // An empty message: the prepared message it keeps alive, not its 2 bytes of frame.
    BOOST_TEST(one >= sizeof(corows::prepared_message) + sizeof(corows::output_queue::shared_frame));
    // A large one: at least its frame.
    auto big = corows::prepared_message::make(bytes(10000, 1), corows::message_kind::binary);
    BOOST_TEST(corows::output_queue::charge(big->frame(), *big) >= big->frame().size());
    std::size_t queued = 1;
    while (c->has_room()) {
        BOOST_REQUIRE(!c->send_prepared(corows::prepared_message::make({}, corows::message_kind::text)));
        ++queued;
    }
    // Empty broadcasts fill the queue long before 32,768 of them (2 bytes each on the wire).
    BOOST_TEST(queued <= o.write_queue_limit / one + 1);
    BOOST_TEST(c->queued() < o.write_queue_limit + one);
}

BOOST_AUTO_TEST_CASE(a_large_message_leaves_no_large_buffer_behind) {
    auto c = open_connection(role::server);
    corows::message m;
    // Fragmented, so it is assembled in the message's storage.
    receive(*c, cat({frame(0x02, bytes(300 * 1024, 7)), frame(0x80, bytes(300 * 1024, 8))}));
    BOOST_TEST(events(*c, m).size() == 1u);
    BOOST_TEST(m.size() == 600u * 1024u);
    BOOST_TEST(corows::detail::message_access::storage(m).capacity() >= 600u * 1024u);
    // The driver reads the next message into `m` and waits: both buffers let go.
    c->release_idle_buffers(&m, false);
    BOOST_TEST(corows::detail::message_access::storage(m).capacity() <= corows::connection::idle_capacity);
    BOOST_TEST(m.size() == 0u);
    // A partly received message keeps what it has.
    receive(*c, frame(0x02, bytes(8 * 1024, 9)));
    BOOST_TEST(events(*c, m).empty());
    c->release_idle_buffers(&m, false);
    receive(*c, frame(0x80, str("!")));
    BOOST_TEST(events(*c, m).size() == 1u);
    BOOST_TEST(m.size() == 8u * 1024u + 1u);
}

BOOST_AUTO_TEST_CASE(an_unfragmented_message_is_borrowed_where_it_lies) {
    auto c = open_connection(role::server);
    corows::message m;
    receive(*c, frame(0x81, str("zero copy")));
    BOOST_TEST(events(*c, m) == (std::vector<std::string>{"text:zero copy"}));
    BOOST_TEST(m.borrowed());
}

BOOST_AUTO_TEST_CASE(rfc_7692_compressed_hello_is_inflated) {
    corows::options o;
    o.deflate.enabled = true;
    corows::deflate_params p;
    p.client_no_context_takeover = true;
    auto c = open_connection(role::server, o, p);
    corows::message m;
    // RFC 7692 §7.2.3.1: "Hello" compressed, one frame, masked by the client.
    receive(*c, frame(0xC1, bytes{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
    BOOST_TEST(events(*c, m) == (std::vector<std::string>{"text:Hello"}));
    BOOST_TEST(m.compressed());
    // §7.2.3.2: the same as two fragments.
    receive(*c, cat({frame(0x41, bytes{0xf2, 0x48, 0xcd}), frame(0x80, bytes{0xc9, 0xc9, 0x07, 0x00})}));
    BOOST_TEST(events(*c, m) == (std::vector<std::string>{"text:Hello"}));
    // Our messages go out compressed, with RSV1, and inflate back.
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str(std::string(200, 'a')), true));
    bytes out = output(*c);
    BOOST_TEST(out[0] == 0xC1);
    BOOST_TEST(out.size() < 50u);
}

BOOST_AUTO_TEST_CASE(rsv1_without_the_extension_is_a_violation) {
    auto c = open_connection(role::server);
    receive(*c, frame(0xC1, bytes{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}));
    BOOST_TEST(events(*c).back() == fail(corows::error::reserved_bits));
}

BOOST_AUTO_TEST_CASE(nothing_is_decoded_or_sent_before_the_handshake) {
    corows::connection c(settings());
    receive(c, frame(0x81, str("early")));
    BOOST_TEST(events(c).empty());
    BOOST_TEST(c.send_message(corows::message_kind::text, str("x"), false) == make_error_code(corows::error::closed));
    // The HTTP head is read from the same buffer.
    corows::connection d(settings());
    receive(d, str("GET / HTTP/1.1\r\n"));
    BOOST_TEST(d.buffered().size() == 16u);
    d.consume(16);
    BOOST_TEST(d.buffered().empty());
}

BOOST_AUTO_TEST_CASE(a_write_error_ends_sending) {
    auto c = open_connection(role::server);
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->write_failed(make_error_code(std::errc::broken_pipe));
    BOOST_TEST(!c->has_output());
    BOOST_TEST(c->queued() == 0u);
    BOOST_TEST(c->send_message(corows::message_kind::text, str("y"), false) ==
               make_error_code(std::errc::broken_pipe));
}

BOOST_AUTO_TEST_CASE(direct_writes_hold_back_data_frames) {
    auto c = open_connection(role::server);
    BOOST_TEST(c->goes_direct(64 * 1024, false));
    BOOST_TEST(!c->goes_direct(64 * 1024 - 1, false));
    c->begin_direct();
    BOOST_TEST(!c->has_room());
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    corows::mask_key key{};
    BOOST_TEST(c->direct_header(head, corows::opcode::binary, true, 70000, key) == 10u);
    BOOST_TEST(head[0] == 0x82);
    BOOST_TEST(head[1] == 127);
    c->end_direct();
    BOOST_TEST(c->has_room());
    auto client = open_connection(role::client);
    BOOST_TEST(!client->goes_direct(1 << 20, false));
}

// RFC 6455 §5.4: a fragmented message is its data opcode, then continuations, FIN on the last.
BOOST_AUTO_TEST_CASE(a_direct_message_is_cut_into_frames_of_frame_size) {
    corows::options o;
    o.frame_size = 4;
    auto c = open_connection(role::server, o);
    c->begin_direct();
    const bytes message = str("0123456789");
    std::span<const std::uint8_t> rest(message);
    std::vector<bytes> frames;
    do {
        std::array<std::uint8_t, corows::max_frame_header_size> head{};
        auto f = c->next_direct_frame(head, corows::message_kind::binary, rest);
        bytes frame(head.begin(), head.begin() + static_cast<long>(f.header_size));
        frame.insert(frame.end(), f.payload.begin(), f.payload.end());
        frames.push_back(frame);
    } while (!rest.empty());
    c->end_direct();
    BOOST_REQUIRE(frames.size() == 3u);
    const bytes first{0x02, 0x04, '0', '1', '2', '3'}, second{0x00, 0x04, '4', '5', '6', '7'},
        last{0x80, 0x02, '8', '9'};
    BOOST_TEST(frames[0] == first, boost::test_tools::per_element());
    BOOST_TEST(frames[1] == second, boost::test_tools::per_element());
    BOOST_TEST(frames[2] == last, boost::test_tools::per_element());
    // The next direct message starts with its own opcode again; an empty one is one frame.
    c->begin_direct();
    std::span<const std::uint8_t> none;
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    auto f = c->next_direct_frame(head, corows::message_kind::text, none);
    BOOST_TEST(f.header_size == 2u);
    BOOST_TEST(head[0] == 0x81);
    BOOST_TEST(head[1] == 0x00);
    BOOST_TEST(f.payload.empty());
    c->end_direct();
}

BOOST_AUTO_TEST_CASE(controls_go_between_direct_frames_until_our_close) {
    auto c = open_connection(role::server);
    c->begin_direct();
    BOOST_TEST(!c->controls_between_frames());
    BOOST_TEST(!c->send_ping(str("p"), t0));
    BOOST_TEST(c->controls_between_frames());
    const bytes ping{0x89, 0x01, 'p'};
    BOOST_TEST(output(*c) == ping, boost::test_tools::per_element());
    BOOST_TEST(!c->controls_between_frames());
    BOOST_TEST(!c->start_close(1000, "", t0));
    BOOST_TEST(!c->controls_between_frames()); // the close frame waits for the last fragment
    c->end_direct();
    BOOST_TEST(c->has_output());
}

// ---------------------------------------------------------------------- the send timeout

namespace {

// Only the send timeout runs: no idle timeout or keepalive to hide it.
corows::options send_timeout_only(milliseconds t) {
    corows::options o;
    o.send_timeout = t;
    o.idle_timeout = milliseconds(0);
    o.ping_interval = milliseconds(0);
    return o;
}

constexpr auto never = clock_type::time_point::max();

} // namespace

BOOST_AUTO_TEST_CASE(the_send_deadline_runs_only_while_a_write_waits_for_the_peer) {
    auto c = open_connection(role::server, send_timeout_only(milliseconds(500)));
    BOOST_TEST((c->deadline() == never));
    // A write the transport takes at once never starts the clock.
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    BOOST_TEST((c->deadline() == never));
    output(*c);
    BOOST_TEST((c->deadline() == never));
    // One that waits does, from when it began waiting.
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("y"), false));
    c->take_output();
    c->output_progress(t0 + milliseconds(10));
    BOOST_TEST((c->deadline() == t0 + milliseconds(510)));
    c->output_written();
    BOOST_TEST((c->deadline() == never));
    BOOST_TEST((c->on_timer(t0 + milliseconds(5000)) == corows::timer_outcome::none));
    BOOST_TEST((c->state() == connection_state::open));
}

BOOST_AUTO_TEST_CASE(progress_moves_the_send_deadline) {
    auto c = open_connection(role::server, send_timeout_only(milliseconds(500)));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::binary, bytes(100000, 7), false));
    c->take_output();
    c->output_progress(t0);
    // The peer takes a little every 400 ms: slower than the whole write's 500 ms, never cut.
    for (int i = 1; i <= 10; ++i) {
        auto now = t0 + milliseconds(400 * i);
        BOOST_TEST((c->on_timer(now) == corows::timer_outcome::none));
        c->output_progress(now);
        BOOST_TEST((c->deadline() == now + milliseconds(500)));
    }
    BOOST_TEST((c->state() == connection_state::open));
    BOOST_TEST(!c->write_status());
}

BOOST_AUTO_TEST_CASE(a_stalled_write_ends_the_connection_with_1008_send_timeout) {
    auto c = open_connection(role::server, send_timeout_only(milliseconds(500)));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::binary, bytes(1000, 7), false));
    c->take_output();
    c->output_progress(t0 + milliseconds(100));
    BOOST_TEST((c->on_timer(t0 + milliseconds(599)) == corows::timer_outcome::none));
    BOOST_TEST((c->on_timer(t0 + milliseconds(600)) == corows::timer_outcome::timed_out));
    BOOST_TEST((c->state() == connection_state::closed));
    BOOST_TEST(c->timed_out());
    BOOST_TEST(c->close_sent());
    BOOST_TEST(c->error() == make_error_code(corows::error::send_timeout));
    BOOST_TEST(c->closed_error() == make_error_code(corows::error::send_timeout));
    BOOST_TEST(c->write_status() == make_error_code(corows::error::send_timeout));
    BOOST_TEST(c->peer_code() == 1006); // the peer sent no close frame
    BOOST_TEST((c->deadline() == never));
    corows::close_info why = c->closed_why();
    BOOST_TEST(why.code == 1008);
    BOOST_TEST(why.reason == "too slow: send timeout");
    BOOST_TEST(why.error == make_error_code(corows::error::send_timeout));
    BOOST_TEST(!why.remote);
    BOOST_TEST(why.ended());
    // The 1008 is queued behind the stalled write, best effort: were that write to finish,
    // these bytes would follow it.
    c->output_written();
    BOOST_TEST(output(*c) == cat({bytes{0x88, 24, 0x03, 0xf0}, str("too slow: send timeout")}));
}

BOOST_AUTO_TEST_CASE(a_client_masks_its_send_timeout_close) {
    auto c = open_connection(role::client, send_timeout_only(milliseconds(500)));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->take_output();
    c->output_progress(t0);
    BOOST_TEST((c->on_timer(t0 + milliseconds(500)) == corows::timer_outcome::timed_out));
    c->output_written();
    bytes out = output(*c);
    BOOST_REQUIRE(out.size() == 2u + 4u + 24u);
    BOOST_TEST(out[0] == 0x88);
    BOOST_TEST(out[1] == (0x80 | 24));
}

BOOST_AUTO_TEST_CASE(a_send_timeout_of_zero_never_fires) {
    auto c = open_connection(role::server, send_timeout_only(milliseconds(0)));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->take_output();
    c->output_progress(t0);
    BOOST_TEST((c->deadline() == never));
    BOOST_TEST((c->on_timer(t0 + std::chrono::hours(24)) == corows::timer_outcome::none));
    BOOST_TEST((c->state() == connection_state::open));
}

BOOST_AUTO_TEST_CASE(the_send_deadline_joins_the_idle_and_keepalive_ones) {
    corows::options o;
    o.send_timeout = milliseconds(500);
    o.idle_timeout = milliseconds(2000);
    o.ping_interval = milliseconds(1000);
    auto c = open_connection(role::server, o);
    BOOST_TEST((c->deadline() == t0 + milliseconds(1000)));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->take_output();
    c->output_progress(t0 + milliseconds(100));
    BOOST_TEST((c->deadline() == t0 + milliseconds(600)));
    c->output_progress(t0 + milliseconds(900));
    BOOST_TEST((c->deadline() == t0 + milliseconds(1000))); // the keepalive comes first again
    BOOST_TEST((c->on_timer(t0 + milliseconds(1000)) == corows::timer_outcome::ping));
    BOOST_TEST((c->on_timer(t0 + milliseconds(1400)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c->error() == make_error_code(corows::error::send_timeout));
}

BOOST_AUTO_TEST_CASE(a_direct_write_is_watched_until_it_ends) {
    auto c = open_connection(role::server, send_timeout_only(milliseconds(500)));
    c->begin_direct();
    c->output_progress(t0);
    BOOST_TEST((c->deadline() == t0 + milliseconds(500)));
    // A pong written between its fragments does not end the watch.
    receive(*c, frame(0x89, str("p")));
    events(*c);
    output(*c);
    BOOST_TEST((c->deadline() == t0 + milliseconds(500)));
    c->end_direct();
    BOOST_TEST((c->deadline() == never));
    // A failed write ends it too.
    c->begin_direct();
    c->output_progress(t0);
    c->end_direct();
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->take_output();
    c->output_progress(t0);
    c->write_failed(make_error_code(std::errc::broken_pipe));
    BOOST_TEST((c->deadline() == never));
}

BOOST_AUTO_TEST_CASE(once_closing_the_close_timeout_bounds_a_stalled_write) {
    corows::options o = send_timeout_only(milliseconds(500));
    o.close_timeout = milliseconds(300);
    auto c = open_connection(role::server, o);
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("x"), false));
    c->take_output();
    c->output_progress(t0);
    BOOST_REQUIRE(!c->start_close(1000, "bye", t0 + milliseconds(100)));
    c->output_progress(t0 + milliseconds(200)); // progress does not extend the close timeout
    BOOST_TEST((c->deadline() == t0 + milliseconds(400)));
    BOOST_TEST((c->on_timer(t0 + milliseconds(400)) == corows::timer_outcome::timed_out));
    BOOST_TEST(c->error() == make_error_code(corows::error::timeout));
    corows::close_info why = c->closed_why();
    BOOST_TEST(why.code == 1000);
    BOOST_TEST(why.reason == "bye");
    BOOST_TEST(!why.remote);
}

// ---------------------------------------------------------------------- closed_why()

BOOST_AUTO_TEST_CASE(closed_why_names_the_first_close_whoever_sent_it) {
    {
        auto c = open_connection(role::server);
        BOOST_TEST(!c->closed_why().ended());
        receive(*c, frame(0x88, close_payload(4001, "bye")));
        events(*c);
        auto why = c->closed_why();
        BOOST_TEST(why.code == 4001);
        BOOST_TEST(why.reason == "bye");
        BOOST_TEST(why.remote);
        BOOST_TEST(why.error == make_error_code(corows::error::closed));
        BOOST_TEST(why.describe() == "closed by the peer with 4001 (bye)");
    }
    {
        auto c = open_connection(role::client);
        BOOST_REQUIRE(!c->start_close(1001, "going", t0));
        BOOST_TEST(c->closed_why().code == 1001); // closing: known before the answer
        BOOST_TEST(!c->closed_why().error);
        receive(*c, frame(0x88, close_payload(1000, "ok"), false));
        events(*c);
        c->receive_closed();
        auto why = c->closed_why();
        BOOST_TEST(why.code == 1001);
        BOOST_TEST(why.reason == "going");
        BOOST_TEST(!why.remote);
        BOOST_TEST(why.error == make_error_code(corows::error::closed));
    }
    {
        auto c = open_connection(role::server);
        BOOST_REQUIRE(!c->start_close(0, "", t0));
        BOOST_TEST(c->closed_why().code == 1005);
    }
}

BOOST_AUTO_TEST_CASE(closed_why_without_close_frames_and_after_a_violation) {
    {
        auto c = open_connection(role::server);
        c->receive_closed();
        auto why = c->closed_why();
        BOOST_TEST(why.code == 1006);
        BOOST_TEST(why.remote);
        BOOST_TEST(why.error == make_error_code(corows::error::closed));
    }
    {
        corows::options o;
        o.idle_timeout = milliseconds(100);
        o.ping_interval = milliseconds(0);
        auto c = open_connection(role::server, o);
        BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::timed_out));
        auto why = c->closed_why();
        BOOST_TEST(why.code == 1006);
        BOOST_TEST(!why.remote);
        BOOST_TEST(why.error == make_error_code(corows::error::timeout));
    }
    {
        auto c = open_connection(role::server);
        receive(*c, frame(0x83, {})); // reserved opcode
        events(*c);
        auto why = c->closed_why();
        BOOST_TEST(why.code == 1002);
        BOOST_TEST(why.reason == make_error_code(corows::error::reserved_opcode).message());
        BOOST_TEST(!why.remote);
        BOOST_TEST(why.error == make_error_code(corows::error::reserved_opcode));
    }
}

BOOST_AUTO_TEST_CASE(closed_why_tells_the_phase_it_ended_in) {
    using corows::close_phase;
    {
        // Gone before any HTTP (a server's TLS handshake): connecting.
        corows::connection c(settings());
        BOOST_TEST((c.closed_why().phase == close_phase::connecting));
        BOOST_TEST(c.closed_why().describe() == "not open yet");
        c.receive_closed();
        auto why = c.closed_why();
        BOOST_TEST((why.phase == close_phase::connecting));
        BOOST_TEST(why.code == 1006);
        BOOST_TEST(why.never_opened());
    }
    {
        // The upgrade began and timed out: handshake.
        corows::options o;
        o.handshake_timeout = milliseconds(500);
        corows::connection c(settings(o));
        c.begin_handshake(t0);
        BOOST_TEST((c.on_timer(t0 + milliseconds(500)) == corows::timer_outcome::timed_out));
        auto why = c.closed_why();
        BOOST_TEST((why.phase == close_phase::handshake));
        BOOST_TEST((why.by == corows::ended_by::timeout));
        BOOST_TEST(why.describe() == "failed in the handshake: " + make_error_code(corows::error::timeout).message());
    }
    {
        // The idle timeout of an open connection: open.
        corows::options o;
        o.idle_timeout = milliseconds(100);
        auto c = open_connection(role::server, o);
        BOOST_TEST(c->closed_why().describe() == "open");
        BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::timed_out));
        BOOST_TEST((c->closed_why().phase == close_phase::open));
    }
    for (role r : {role::server, role::client}) {
        // Our close, answered: a close handshake that completed ends from the open phase.
        auto c = open_connection(r);
        BOOST_REQUIRE(!c->start_close(1000, "", t0));
        BOOST_TEST((c->closed_why().phase == close_phase::closing)); // still waiting
        receive(*c, frame(0x88, close_payload(1000), r == role::server));
        events(*c);
        c->receive_closed();
        BOOST_TEST((c->closed_why().phase == close_phase::open));
        BOOST_TEST(c->closed_why().describe() == "closed by us with 1000");
    }
    {
        // Our close, never answered: the close timeout ends it in the closing phase.
        corows::options o;
        o.close_timeout = milliseconds(300);
        auto c = open_connection(role::server, o);
        BOOST_REQUIRE(!c->start_close(1001, "bye", t0));
        BOOST_TEST((c->on_timer(t0 + milliseconds(300)) == corows::timer_outcome::timed_out));
        auto why = c->closed_why();
        BOOST_TEST((why.phase == close_phase::closing));
        BOOST_TEST((why.by == corows::ended_by::timeout));
        BOOST_TEST(why.code == 1001);
        BOOST_TEST(why.describe() == "closed by us with 1001 (bye), the peer's close frame never came: " +
                                         make_error_code(corows::error::timeout).message() +
                                         "; received 0 messages (0 bytes), sent 0 messages (0 bytes)");
    }
    {
        // Our close, then the transport went without the peer's: closing too.
        auto c = open_connection(role::client);
        BOOST_REQUIRE(!c->start_close(1000, "", t0));
        c->receive_closed();
        BOOST_TEST((c->closed_why().phase == close_phase::closing));
        BOOST_TEST((c->closed_why().by == corows::ended_by::local));
    }
    {
        // The peer's close to a client, then the server's end of TCP: open.
        auto c = open_connection(role::client);
        receive(*c, frame(0x88, close_payload(1000), false));
        events(*c);
        c->receive_closed();
        BOOST_TEST((c->closed_why().phase == close_phase::open));
    }
}

BOOST_AUTO_TEST_CASE(closed_why_carries_what_the_connection_moved_counted_or_not) {
    // No count_into(): the connection's own counts, each way, every way of sending.
    corows::options o;
    o.frame_size = 4;
    auto c = open_connection(role::server, o);
    receive(*c, cat({frame(0x81, str("hello")), frame(0x82, bytes{1, 2, 3}), frame(0x89, str("p"))}));
    events(*c);
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("abc"), false));
    BOOST_REQUIRE(!c->send_prepared(corows::prepared_message::make(str("shared"), corows::message_kind::text)));
    output(*c);
    const bytes payload = str("0123456789");
    std::span<const std::uint8_t> rest(payload);
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    c->begin_direct();
    while (!rest.empty()) c->next_direct_frame(head, corows::message_kind::binary, rest);
    c->end_direct();
    const corows::traffic_counts& t = c->traffic();
    BOOST_TEST(t.messages_received == 2u);
    BOOST_TEST(t.payload_bytes_received == 8u);
    BOOST_TEST(t.messages_sent == 3u);
    BOOST_TEST(t.payload_bytes_sent == 3u + 6u + 10u);
    receive(*c, frame(0x88, close_payload(1000, "bye")));
    events(*c);
    auto why = c->closed_why();
    BOOST_TEST(why.traffic.messages_received == 2u);
    BOOST_TEST(why.traffic.messages_sent == 3u);
    BOOST_TEST(why.traffic.payload_bytes_sent == 19u);
    BOOST_TEST(why.describe() == "closed by the peer with 1000 (bye); received 2 messages (8 bytes), sent 3 messages (19 bytes)");
}

BOOST_AUTO_TEST_CASE(send_timeout_maps_to_1008) {
    BOOST_TEST((corows::close_code_for(corows::error::send_timeout) == corows::close_code::policy_violation));
    BOOST_TEST(make_error_code(corows::error::send_timeout).message().find("send timeout") == 0u);
}

// ---------------------------------------------------------------------- counting (count_into)

namespace {
// A connection in `r` that counts into `k` from before it opens (at t0).
std::unique_ptr<corows::connection> counted_connection(role r, corows::connection_counters& k, corows::options o = {}) {
    auto c = std::make_unique<corows::connection>(settings(std::move(o)));
    c->count_into(&k);
    c->open(r, "", std::nullopt, t0);
    return c;
}

std::uint64_t closed_by(const corows::connection_metrics& m, corows::ended_by e) {
    return m.closed_by[static_cast<std::size_t>(e)];
}
} // namespace

BOOST_AUTO_TEST_CASE(counts_messages_bytes_and_control_frames_each_way) {
    corows::connection_counters k;
    auto c = counted_connection(role::server, k);
    const bytes in = cat({frame(0x81, str("hello")), frame(0x82, bytes{1, 2, 3}), frame(0x89, str("p")),
                          frame(0x8a, str("q"))});
    receive(*c, in);
    BOOST_TEST(events(*c) == (std::vector<std::string>{"text:hello", "binary:\x01\x02\x03", "ping:p", "pong:q"}));
    BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("abc"), false));
    BOOST_REQUIRE(!c->send_ping(str("z"), t0));
    const bytes out = output(*c);
    // The pong (3 bytes), the text (5) and the ping (3), unmasked from a server.
    BOOST_TEST(out.size() == 11u);
    auto m = k.snapshot();
    BOOST_TEST(m.opened == 1u);
    BOOST_TEST(m.open() == 1u);
    BOOST_TEST(m.messages_received == 2u);
    BOOST_TEST(m.payload_bytes_received == 8u);
    BOOST_TEST(m.wire_bytes_received == in.size());
    BOOST_TEST(m.pings_received == 1u);
    BOOST_TEST(m.pongs_received == 1u);
    BOOST_TEST(m.messages_sent == 1u);
    BOOST_TEST(m.payload_bytes_sent == 3u);
    BOOST_TEST(m.pings_sent == 1u);
    BOOST_TEST(m.pongs_sent == 1u);
    BOOST_TEST(m.wire_bytes_sent == out.size());
    BOOST_TEST(m.frames_received == 4u);
    BOOST_TEST(m.frames_sent == 3u);
    BOOST_TEST(m.queued_output_bytes == 0u);
}

BOOST_AUTO_TEST_CASE(a_flood_of_pings_counts_the_pongs_that_go_out) {
    corows::connection_counters k;
    auto c = counted_connection(role::server, k);
    receive(*c, cat({frame(0x89, str("1")), frame(0x89, str("2")), frame(0x89, str("3"))}));
    events(*c);
    BOOST_TEST(output(*c).size() == 3u); // one pong, for the latest
    BOOST_TEST(k.snapshot().pings_received == 3u);
    BOOST_TEST(k.snapshot().pongs_sent == 1u);
}

BOOST_AUTO_TEST_CASE(a_shared_frame_counts_as_a_message_and_its_wire_bytes) {
    corows::connection_counters k;
    auto c = counted_connection(role::server, k);
    auto pm = corows::prepared_message::make(str("shared"), corows::message_kind::text);
    BOOST_REQUIRE(!c->send_prepared(pm));
    BOOST_TEST(output(*c) == cat({bytes{0x81, 0x06}, str("shared")}));
    auto m = k.snapshot();
    BOOST_TEST(m.messages_sent == 1u);
    BOOST_TEST(m.payload_bytes_sent == 6u);
    BOOST_TEST(m.wire_bytes_sent == 8u);
}

BOOST_AUTO_TEST_CASE(a_direct_message_counts_once_over_its_frames) {
    corows::options o;
    o.frame_size = 4;
    corows::connection_counters k;
    auto c = counted_connection(role::server, k, o);
    const bytes payload = str("0123456789");
    std::span<const std::uint8_t> rest(payload);
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    c->begin_direct();
    std::size_t wire = 0;
    while (!rest.empty()) {
        auto f = c->next_direct_frame(head, corows::message_kind::binary, rest);
        wire += f.header_size + f.payload.size();
    }
    c->end_direct();
    BOOST_TEST(wire == 3 * 2 + 10u);
    auto m = k.snapshot();
    BOOST_TEST(m.messages_sent == 1u);
    BOOST_TEST(m.payload_bytes_sent == 10u);
    BOOST_TEST(m.wire_bytes_sent == wire);
    BOOST_TEST(m.frames_sent == 3u);
    BOOST_TEST(m.queued_output_bytes == 0u); // a direct write is never queued
}

BOOST_AUTO_TEST_CASE(an_ending_counts_once_by_its_cause_and_close_code_and_closed_why_tells_the_cause) {
    using corows::ended_by;
    corows::connection_counters k;
    {
        // The peer closes with 1000; our echo and the transport's end count nothing more.
        auto c = counted_connection(role::server, k);
        receive(*c, frame(0x88, close_payload(1000)));
        events(*c);
        c->receive_closed();
        BOOST_TEST((c->closed_why().by == ended_by::peer));
    }
    {
        // We close with 1001 and the peer answers.
        auto c = counted_connection(role::server, k);
        BOOST_REQUIRE(!c->start_close(1001, "bye", t0));
        receive(*c, frame(0x88, close_payload(1001)));
        events(*c);
        BOOST_TEST((c->closed_why().by == ended_by::local));
        BOOST_TEST(c->closed_why().reason == "bye");
    }
    {
        // The peer breaks the protocol (an unmasked frame to a server): 1002, an error.
        auto c = counted_connection(role::server, k);
        receive(*c, frame(0x81, str("x"), false));
        events(*c);
        BOOST_TEST((c->closed_why().by == ended_by::error));
    }
    {
        // The idle timeout: 1006, ours.
        corows::options o;
        o.idle_timeout = milliseconds(100);
        auto c = counted_connection(role::server, k, o);
        BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::timed_out));
        BOOST_TEST((c->closed_why().by == ended_by::timeout));
    }
    {
        // A peer that takes nothing: 1008, a slow consumer.
        corows::options o;
        o.send_timeout = milliseconds(100);
        auto c = counted_connection(role::server, k, o);
        BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("y"), false));
        c->take_output();
        c->output_progress(t0);
        BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::timed_out));
        BOOST_TEST((c->closed_why().by == ended_by::slow_consumer));
        BOOST_TEST(c->closed_why().reason == "too slow: send timeout");
    }
    {
        // The transport went without a close frame: 1006, the peer's doing.
        auto c = counted_connection(role::server, k);
        c->receive_closed();
        BOOST_TEST((c->closed_why().by == ended_by::peer));
    }
    {
        // An application's code counts as "other".
        auto c = counted_connection(role::client, k);
        receive(*c, frame(0x88, close_payload(4000, "app"), false));
        events(*c);
        c->receive_closed();
        BOOST_TEST((c->closed_why().by == ended_by::peer));
        BOOST_TEST(c->closed_why().reason == "app");
    }
    {
        // The hub's close policy: too slow, though the close is ours.
        auto c = counted_connection(role::server, k);
        c->note_slow_consumer();
        BOOST_REQUIRE(!c->start_close(1008, "too slow", t0));
        receive(*c, frame(0x88, close_payload(1008)));
        events(*c);
        BOOST_TEST((c->closed_why().by == ended_by::slow_consumer));
    }
    {
        // A handshake that never opened is no connection ending.
        auto c = std::make_unique<corows::connection>(settings());
        c->count_into(&k);
        c->receive_closed();
    }
    auto m = k.snapshot();
    BOOST_TEST(m.opened == 8u);
    BOOST_TEST(m.closed() == 8u);
    BOOST_TEST(m.open() == 0u);
    BOOST_TEST(closed_by(m, ended_by::peer) == 3u);
    BOOST_TEST(closed_by(m, ended_by::local) == 1u);
    BOOST_TEST(closed_by(m, ended_by::error) == 1u);
    BOOST_TEST(closed_by(m, ended_by::timeout) == 1u);
    BOOST_TEST(closed_by(m, ended_by::slow_consumer) == 2u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1000)] == 1u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1001)] == 1u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1002)] == 1u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1006)] == 2u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(1008)] == 2u);
    BOOST_TEST(m.closed_by_code[corows::code_slot(4000)] == 1u);
    BOOST_TEST(corows::code_slot(4000) == corows::counted_codes - 1);
    BOOST_TEST(corows::code_slot(1015) == 15u);
    BOOST_TEST(corows::code_slot(999) == corows::counted_codes - 1);
}

BOOST_AUTO_TEST_CASE(counts_every_frame_each_way_fragments_and_control_frames_included) {
    corows::options o;
    o.frame_size = 4;
    corows::connection_counters k;
    auto c = counted_connection(role::server, k, o);
    // A text message in two fragments with a ping between them, a binary one in one frame,
    // and the peer's close: five frames, two messages.
    receive(*c, cat({frame(0x01, str("hel")), frame(0x89, str("p")), frame(0x80, str("lo")),
                     frame(0x82, bytes{1, 2, 3}), frame(0x88, close_payload(1000))}));
    BOOST_TEST(events(*c) == (std::vector<std::string>{"ping:p", "text:hello", "binary:\x01\x02\x03", "close:1000"}));
    auto m = k.snapshot();
    BOOST_TEST(m.frames_received == 5u);
    BOOST_TEST(m.messages_received == 2u);
    // The pong and the close echo so far.
    BOOST_TEST(m.frames_sent == 2u);
    BOOST_TEST(output(*c) == cat({bytes{0x8a, 0x01}, str("p"), bytes{0x88, 0x02, 0x03, 0xe8}}));

    // Ten bytes in frames of four: three frames for one message; then a ping.
    auto d = counted_connection(role::server, k, o);
    BOOST_REQUIRE(!d->send_message(corows::message_kind::binary, str("0123456789"), false));
    BOOST_REQUIRE(!d->send_ping({}, t0));
    BOOST_TEST(output(*d) == cat({bytes{0x02, 0x04}, str("0123"), bytes{0x00, 0x04}, str("4567"), bytes{0x80, 0x02},
                                  str("89"), bytes{0x89, 0x00}}));
    m = k.snapshot();
    BOOST_TEST(m.frames_sent == 2u + 4u);
    BOOST_TEST(m.messages_sent == 1u);
}

BOOST_AUTO_TEST_CASE(the_queued_bytes_gauge_follows_the_queue_and_returns_to_zero) {
    corows::connection_counters k;
    auto queued = [&] { return k.snapshot().queued_output_bytes; };
    {
        auto c = counted_connection(role::server, k);
        BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("abc"), false));
        BOOST_TEST(queued() == 5u);
        BOOST_REQUIRE(!c->send_ping(str("z"), t0));
        BOOST_TEST(queued() == 8u);
        c->take_output(); // in flight: still queued until written
        BOOST_TEST(queued() == 8u);
        BOOST_REQUIRE(!c->send_message(corows::message_kind::text, str("de"), false));
        BOOST_TEST(queued() == 12u);
        c->output_written();
        BOOST_TEST(queued() == 4u);
        BOOST_TEST(queued() == c->queued());
        // Pings flood in: one pong stays queued, replaced by the latest.
        receive(*c, cat({frame(0x89, str("1")), frame(0x89, str("22")), frame(0x89, str("333"))}));
        events(*c);
        BOOST_TEST(queued() == 4u + 5u);
        // A shared frame is charged as the queue charges it.
        auto pm = corows::prepared_message::make(str("shared"), corows::message_kind::text);
        BOOST_REQUIRE(!c->send_prepared(pm));
        BOOST_TEST(queued() == c->queued());
        BOOST_TEST(queued() > 4u + 5u + 8u);
        // Counting elsewhere takes the queue along.
        corows::connection_counters other;
        c->count_into(&other);
        BOOST_TEST(queued() == 0u);
        BOOST_TEST(other.snapshot().queued_output_bytes == c->queued());
        c->count_into(&k);
        BOOST_TEST(other.snapshot().queued_output_bytes == 0u);
        BOOST_TEST(queued() == c->queued());
    } // gone with its queue unwritten
    BOOST_TEST(queued() == 0u);
    {
        // A failed write drops the queue, and the send timeout's close frame is queued to no end.
        corows::options o;
        o.send_timeout = milliseconds(100);
        auto c = counted_connection(role::server, k, o);
        BOOST_REQUIRE(!c->send_message(corows::message_kind::binary, bytes(300, 7), false));
        c->take_output();
        c->output_progress(t0);
        BOOST_TEST((c->on_timer(t0 + milliseconds(100)) == corows::timer_outcome::timed_out));
        BOOST_TEST(queued() == 304u + 2u + 2u + 22u); // the message, and 1008 "too slow: send timeout"
        BOOST_TEST(queued() == c->queued());
        c->write_failed(make_error_code(corows::error::send_timeout));
        BOOST_TEST(queued() == 0u);
    }
    BOOST_TEST(queued() == 0u);
}

BOOST_AUTO_TEST_CASE(the_handshake_counts_from_the_time_given_to_its_opening) {
    corows::connection_counters k;
    {
        auto c = std::make_unique<corows::connection>(settings());
        c->count_into(&k);
        c->count_handshake_from(t0);
        c->open(role::server, "", std::nullopt, t0 + milliseconds(3));
    }
    {
        // Without a start, as a client's: no duration.
        auto c = counted_connection(role::client, k);
        BOOST_REQUIRE(c->has_opened());
    }
    corows::handshake_histogram h;
    k.add_handshakes_to(h);
    BOOST_TEST(h.count() == 1u);
    BOOST_TEST(h.buckets[2] == 1u); // over 2.5 ms, up to 5 ms
    BOOST_TEST(h.sum.count() == std::chrono::nanoseconds(milliseconds(3)).count());
}

BOOST_AUTO_TEST_SUITE_END()
