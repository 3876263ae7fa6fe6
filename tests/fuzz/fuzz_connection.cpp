// SPDX-License-Identifier: BSL-1.0
// corows::connection, the sans-I/O protocol state, fed arbitrary bytes in arbitrary chunks as
// either role, with or without permessage-deflate, while the driver echoes messages, pings,
// starts a close, fires timers, takes output at random points and releases idle buffers.
//
// Input: two option bytes (see `plan`), then what the peer sends. Beyond "no crash, no leak,
// no UB" it checks the rules a peer relies on: events stop once the connection is closed;
// the state only moves forward; the output is valid frames for the peer's role, carrying the
// echoes in order, each pong answering a ping, nothing after our close frame; a failure sends
// the close code RFC 6455 gives its error; the queue charges exactly what it holds; and the
// counters agree: the queued-bytes gauge is queued(), the frames sent are the frames the peer
// reads.
#include <corows/protocol/output_queue.hpp>
#include <corows/protocol/connection.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace {

using corows::connection;
using corows::connection_event;
using corows::connection_state;
using clock_type = connection::clock;
using bytes = std::vector<std::uint8_t>;

void check(bool ok) {
    if (!ok) std::abort();
}

constexpr std::size_t option_bytes = 2;

// What the option bytes select.
//   byte 0: bit 0 client role, bit 1 permessage-deflate, bit 2 server_no_context_takeover,
//           bit 3 client_no_context_takeover, bit 4 9-bit windows, bits 5-6 message size
//           limit, bit 7 a 64-byte write queue limit
//   byte 1: bits 0-2 read chunk sizes, bits 3-4 what the driver does after each message
//           (echo, echo and ping, close after two, echo with frame_size 3), bits 5-7 how
//           often it takes output (every event .. never until the end)
struct plan {
    corows::options opts;
    corows::role local = corows::role::server;
    std::optional<corows::deflate_params> deflate;
    std::size_t chunk_seed = 0;
    unsigned action = 0;
    unsigned take_every = 1;

    explicit plan(const std::uint8_t* o) {
        const std::uint8_t a = o[0], b = o[1];
        local = (a & 1) != 0 ? corows::role::client : corows::role::server;
        if ((a & 2) != 0) {
            opts.deflate.enabled = true;
            corows::deflate_params p;
            p.server_no_context_takeover = (a & 4) != 0;
            p.client_no_context_takeover = (a & 8) != 0;
            p.server_max_window_bits = p.client_max_window_bits = (a & 16) != 0 ? 9 : 15;
            opts.deflate.threshold = 0;
            deflate = p;
        }
        static constexpr std::size_t limits[] = {1u << 20, 64u << 10, 1000, 1};
        opts.max_message_size = limits[(a >> 5) & 3];
        if ((a & 0x80) != 0) opts.write_queue_limit = 64;
        chunk_seed = b & 7;
        action = (b >> 3) & 3;
        if (action == 3) opts.frame_size = 3;
        take_every = 1u + ((b >> 5) & 7) * 3;
        opts.close_timeout = std::chrono::milliseconds(100);
        opts.ping_interval = std::chrono::milliseconds(50);
        opts.idle_timeout = std::chrono::milliseconds(1000);
    }
};

struct driver {
    const plan& p;
    corows::connection_counters counts; // outlives conn, which counts into it
    connection conn;
    clock_type::time_point now = clock_type::time_point{} + std::chrono::hours(1);
    bytes out;                   // everything written, in order
    std::vector<bytes> echoes;   // messages queued back, in order
    std::vector<bytes> pings;    // payloads of received pings
    std::size_t messages = 0;
    std::size_t events = 0;
    bool we_closed = false;      // start_close() was called (our close frame is not a failure's)

    explicit driver(const plan& pl)
        : p(pl), conn(std::make_shared<const corows::options>(pl.opts)) {
        conn.count_into(&counts);
        conn.open(p.local, "", p.deflate, now);
    }

    void take() {
        check(counts.snapshot().queued_output_bytes == conn.queued());
        if (!conn.has_output()) return;
        const std::size_t charged = conn.queued();
        auto& q = conn.take_output();
        // The charge is the bytes plus each shared frame's own cost, nothing more.
        std::size_t expect = q.bytes.size();
        for (const auto& f : q.shared_frames())
            expect += corows::output_queue::charge(f.frame, *f.keep);
        check(q.size() == expect && charged == expect);
        q.for_each_piece([&](std::span<const std::uint8_t> piece) { out.insert(out.end(), piece.begin(), piece.end()); });
        conn.output_written();
        check(conn.queued() == 0);
        check(counts.snapshot().queued_output_bytes == 0);
    }

    void on_message(const corows::message& m) {
        ++messages;
        if (p.action == 2 && messages == 2) {
            check(!conn.start_close(1000, "bye", now));
            we_closed = true;
            return;
        }
        if (!conn.has_room()) return;
        std::error_code ec = conn.send_message(m.kind(), m.data(), true);
        if (!ec) echoes.emplace_back(m.data().begin(), m.data().end());
        if (p.action == 1 && !ec) {
            auto tag = m.data().first(std::min<std::size_t>(m.size(), 125));
            check(!conn.send_ping(tag, now));
        }
    }

    // Decodes everything received, as a pump would.
    void decode(corows::message& m) {
        for (;;) {
            const auto state_before = conn.state();
            connection_event e = conn.next_event(m);
            // Nothing is decoded once closed: at most a turn ends.
            if (state_before == connection_state::closed)
                check(e == connection_event::need_more || e == connection_event::yield);
            check(static_cast<int>(conn.state()) >= static_cast<int>(state_before));
            if (++events % p.take_every == 0) take();
            switch (e) {
            case connection_event::need_more:
                return;
            case connection_event::yield:
                conn.begin_turn();
                break;
            case connection_event::message:
                check(m.is_text() || m.kind() == corows::message_kind::binary);
                on_message(m);
                break;
            case connection_event::ping:
                check(conn.control_payload().size() <= 125);
                if (!conn.close_sent()) pings.emplace_back(conn.control_payload().begin(), conn.control_payload().end());
                break;
            case connection_event::pong:
                break;
            case connection_event::close:
                check(conn.close_received());
                check(conn.close_sent());
                break;
            case connection_event::failed:
                check(conn.state() == connection_state::closed);
                check(conn.error() && conn.error() != make_error_code(corows::error::closed));
                break;
            }
        }
    }
};

// Reads our output as the peer would: valid frames of our role; the echoes in order; each
// pong's payload a received ping's; nothing after a close frame; a failure's close code.
void check_output(const driver& d) {
    const corows::role peer = d.p.local == corows::role::server ? corows::role::client : corows::role::server;
    corows::message_reader reader(corows::reader_config{peer, SIZE_MAX});
    if (d.p.deflate) reader.enable_deflate(corows::make_deflate_config(*d.p.deflate, peer, d.p.opts.deflate).receive);
    bytes out = d.out;
    std::size_t pos = 0, echo = 0, frames = 0;
    bool closed = false;
    corows::message m;
    while (pos < out.size()) {
        check(!closed);
        const corows::read_result r = reader.read(out, pos, m);
        check(r.event != corows::read_event::failed);
        if (r.event == corows::read_event::need_more) break;
        if (r.event != corows::read_event::progress || r.frame_ended) ++frames;
        if (r.event == corows::read_event::message) {
            check(echo < d.echoes.size() && std::ranges::equal(m.data(), d.echoes[echo]));
            ++echo;
        } else if (r.event == corows::read_event::pong) {
            const bytes payload(r.payload.begin(), r.payload.end());
            check(std::ranges::find(d.pings, payload) != d.pings.end());
        } else if (r.event == corows::read_event::close) {
            closed = true;
            const std::error_code ec = d.conn.error();
            if (ec && ec != make_error_code(corows::error::closed) && ec != make_error_code(corows::error::timeout) &&
                !d.conn.close_received() && !d.we_closed)
                check(r.code == static_cast<std::uint16_t>(corows::close_code_for(ec)));
        }
    }
    check(pos == out.size());
    check(echo == d.echoes.size());
    check(d.counts.snapshot().frames_sent == frames);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < option_bytes) return 0;
    const plan p(data);
    std::span<const std::uint8_t> input(data + option_bytes, size - option_bytes);
    driver d(p);
    corows::message m;
    unsigned state = static_cast<unsigned>(p.chunk_seed) * 2654435761u + 1;
    while (!input.empty()) {
        state = state * 1103515245u + 12345u;
        const std::size_t want = p.chunk_seed == 0 ? input.size() : 1 + (state >> 16) % (p.chunk_seed * 40);
        auto space = d.conn.receive_space();
        check(!space.empty());
        const std::size_t n = std::min({want, space.size(), input.size()});
        std::copy_n(input.begin(), n, space.begin());
        input = input.subspan(n);
        d.now += std::chrono::milliseconds(7);
        d.conn.received(n, d.now);
        d.decode(m);
        if ((state >> 8) % 5 == 0) {
            // Time passes: a keepalive ping, or a timeout.
            auto at = d.conn.deadline();
            if (at != clock_type::time_point::max() && at > d.now) d.now = at;
            if (d.conn.on_timer(d.now) == corows::timer_outcome::timed_out) check(d.conn.state() == connection_state::closed);
        }
        if ((state >> 12) % 3 == 0) d.conn.release_idle_buffers(&m, false);
    }
    d.conn.receive_closed();
    check(d.conn.state() == connection_state::closed);
    d.take();
    check_output(d);
    return 0;
}
