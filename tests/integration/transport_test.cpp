// SPDX-License-Identifier: BSL-1.0
// The read pump and the writer under abuse, in both server modes (coroutine handlers and event
// handlers): a peer that floods pings and never reads, a peer that keeps its socket full of
// frames that cost us work but deliver nothing, broadcasts to readers that never read, and
// memory left behind by one large message. Each test shows the abuse bounded: memory by RSS
// (skipped under sanitizers), fairness by progress (another client is served while the flood
// is still going), never by timing.
#include "blocking_peer.hpp"
#include "loopback.hpp"
#include "server_thread.hpp"

#include <corows/prepared_message.hpp>
#include <corows/server.hpp>

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using corows::message;
using corows::message_kind;
using corows::options;
using std::chrono::milliseconds;

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

using mode = server_mode;

// An echo server in `m`: every message comes back.
std::unique_ptr<server_thread> echo_server(mode m, corows::server_options o = {}) {
    if (m == mode::coroutines) {
        return std::make_unique<server_thread>(std::move(o), [](tcp_ws& ws) -> asio::awaitable<void> {
            message msg;
            while (co_await ws.read_message(msg)) co_await ws.write_message(msg);
        });
    }
    corows::server::event_handlers h;
    h.on_message = [](tcp_ws& ws, const message& msg) { ws.send(msg); };
    return std::make_unique<server_thread>(std::move(o), std::move(h));
}

// `frame` repeated to fill about `size` bytes.
bytes repeated(const bytes& frame, std::size_t size) {
    bytes out;
    out.reserve(size + frame.size());
    while (out.size() < size) out.insert(out.end(), frame.begin(), frame.end());
    return out;
}

// ------------------------------------------------------------------------------ ping flood

// A client sends pings as fast as the socket takes them and never reads a pong. The server
// must answer the latest ping only (RFC 6455 §5.5.3), and stop reading, not queue, once its
// queue is full: all 300 MiB go in while its memory stays put.
void ping_flood(mode m) {
    BOOST_TEST_MESSAGE("ping flood, " << name(m));
    large_blocks_return_to_the_kernel();
    auto srv = echo_server(m);
    blocking_peer flooder(srv->port());
    flooder.upgrade(srv->port());
    const bytes pings = repeated(zero_key_frame(0x89, bytes(125, 'p')), 256 * KiB);
    constexpr std::size_t total = 300 * MiB;
    trim_heap();
    long before = rss_kib();
    reset_peak_rss();
    std::atomic<std::size_t> sent{0};
    std::thread flood([&] {
        while (sent < total && flooder.send(pings)) sent += pings.size();
    });
    // A server that stops reading for good would block the flood: give up after a minute.
    bool all_in = wait_until([&] { return sent >= total; }, 60s);
    if (!all_in) flooder.hang_up();
    flood.join();
    long growth = peak_rss_kib() - before;
    BOOST_TEST_MESSAGE("  " << sent / MiB << " MiB of pings in, peak RSS growth " << growth << " KiB");
    BOOST_TEST(all_in, "the server stopped reading the pings");
    if constexpr (memory_is_measurable) BOOST_TEST(growth < 64 * 1024L);
    // The server still serves others.
    BOOST_TEST(run_clients(1, [&](std::size_t) { return echo_check(srv->port(), "still serving"); }, 20s) == 1u);
}

// ------------------------------------------------------------------------------ fairness

// A flooder sends `first` once, then `unit` again and again (until it is told to stop, or it
// has sent `cap` bytes); an empty `first` means the flood is compressed (permessage-deflate
// is negotiated). Meanwhile a fresh client connects, handshakes and gets 20 echoes. It must
// be served while the flood is still going: one connection may not hold the thread.
void served_during_flood(mode m, const bytes& first, const bytes& unit, std::size_t cap) {
    const bool deflate = first.empty();
    corows::server_options so;
    so.connection.deflate.enabled = deflate;
    auto srv = echo_server(m, so);
    blocking_peer flooder(srv->port());
    flooder.upgrade(srv->port(), deflate ? "Sec-WebSocket-Extensions: permessage-deflate\r\n" : "");
    std::atomic<bool> stop{false}, flood_over{false};
    std::atomic<std::size_t> sent{0};
    std::thread flood([&] {
        if (first.empty() || flooder.send(first))
            while (!stop && sent < cap && flooder.send(unit)) sent += unit.size();
        flood_over = true;
    });
    struct joiner {
        std::atomic<bool>& stop;
        blocking_peer& peer;
        std::thread& t;
        ~joiner() {
            stop = true;
            peer.hang_up();
            t.join();
        }
    } join_at_exit{stop, flooder, flood};
    // The flood is under way before the fresh client arrives.
    BOOST_REQUIRE(wait_until([&] { return sent >= 4 * unit.size(); }, 20s));
    std::size_t at_start = sent;
    std::size_t ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect_ws_to(srv->port(), options{});
        message reply;
        for (int i = 0; i < 20; ++i) {
            co_await ws.write_text("fresh " + std::to_string(i));
            if (!co_await ws.read_message(reply))
                throw std::runtime_error("closed with " + std::to_string(ws.close_code()) + " before echo " + std::to_string(i));
            if (reply.text() != "fresh " + std::to_string(i)) throw std::runtime_error("wrong echo " + reply.str());
        }
        co_await ws.close(1000, "");
    }, 60s);
    std::size_t at_end = sent;
    bool flooding = !flood_over;
    BOOST_TEST_MESSAGE("  " << name(m) << ": fresh client served: " << ok << ", flood " << (at_end - at_start) / MiB
                            << " MiB during it, still going: " << flooding);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(flooding, "the fresh client was served only after the flood ended");
}

// ------------------------------------------------------------------------------ slow broadcast readers

// A chat room (as examples/chat_server): every message goes to every other member as one
// prepared message; a member whose queue is full is closed with 1008.
struct chat_room {
    std::set<tcp_ws*> members;
    std::atomic<int> dropped{0};

    void broadcast(const message& m, tcp_ws* from) {
        auto pm = corows::prepared_message::make(m.data(), m.kind());
        for (tcp_ws* ws : members) {
            if (ws == from || ws->send(pm) || ws->protocol().close_sent()) continue;
            ws->start_close(static_cast<std::uint16_t>(corows::close_code::policy_violation));
            ++dropped;
        }
    }
};

// Two members never read while a third talks: hundreds of thousands of empty messages, which
// cost 2 bytes each on the wire but a queue entry and a prepared message each in memory.
void slow_broadcast_readers(mode m) {
    BOOST_TEST_MESSAGE("slow broadcast readers, " << name(m));
    large_blocks_return_to_the_kernel();
    chat_room room;
    std::unique_ptr<server_thread> srv;
    if (m == mode::coroutines) {
        srv = std::make_unique<server_thread>(corows::server_options{}, [&](tcp_ws& ws) -> asio::awaitable<void> {
            room.members.insert(&ws);
            message msg;
            while (co_await ws.read_message(msg)) room.broadcast(msg, &ws);
            room.members.erase(&ws);
        });
    } else {
        corows::server::event_handlers h;
        h.on_open = [&](tcp_ws& ws) { room.members.insert(&ws); };
        h.on_message = [&](tcp_ws& ws, const message& msg) { room.broadcast(msg, &ws); };
        h.on_close = [&](tcp_ws& ws, corows::error_code) { room.members.erase(&ws); };
        srv = std::make_unique<server_thread>(corows::server_options{}, std::move(h));
    }
    blocking_peer reader1(srv->port(), 4096), reader2(srv->port(), 4096), talker(srv->port());
    reader1.upgrade(srv->port());
    reader2.upgrade(srv->port());
    talker.upgrade(srv->port());
    trim_heap();
    long before = rss_kib();
    reset_peak_rss();
    const bytes burst = repeated(zero_key_frame(0x81, {}), 6 * 10'000);
    std::size_t messages = 0;
    while (messages < 3'000'000 && room.dropped < 2) {
        BOOST_REQUIRE(talker.send(burst));
        messages += 10'000;
    }
    BOOST_TEST(wait_until([&] { return room.dropped == 2; }, 30s));
    long growth = peak_rss_kib() - before;
    BOOST_TEST_MESSAGE("  both readers dropped with 1008 after " << messages << " messages; peak RSS growth "
                                                                  << growth << " KiB");
    if constexpr (memory_is_measurable) BOOST_TEST(growth < 100 * 1024L);
}

// ------------------------------------------------------------------------------ memory after a large message

// A permessage-deflate compressor as a client keeps it (context takeover): each message's
// payload is the raw deflate data up to a sync flush, without its 00 00 FF FF tail.
class client_deflater {
public:
    client_deflater() { deflateInit2(&z_, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY); }
    ~client_deflater() { deflateEnd(&z_); }
    client_deflater(const client_deflater&) = delete;
    client_deflater& operator=(const client_deflater&) = delete;
    bytes compress(const bytes& in) {
        bytes out(deflateBound(&z_, static_cast<uLong>(in.size())) + 16);
        z_.next_in = const_cast<Bytef*>(in.data());
        z_.avail_in = static_cast<uInt>(in.size());
        z_.next_out = out.data();
        z_.avail_out = static_cast<uInt>(out.size());
        deflate(&z_, Z_SYNC_FLUSH);
        out.resize(out.size() - z_.avail_out - 4);
        return out;
    }

private:
    z_stream z_{};
};

// `n` connections each receive one 16 MiB message (fragmented, or compressed), then go idle.
// What they hold afterwards is what they held before it, within a few KiB each (plus what the
// thread's buffer pool may keep: at most 8 buffers of 256 KiB, whatever the connections).
void idle_after_large(mode m, bool compressed, bool echo = false) {
    BOOST_TEST_MESSAGE("idle after a large message, " << name(m) << (compressed ? ", compressed" : "")
                                                      << (echo ? ", echoed" : ""));
    large_blocks_return_to_the_kernel();
    // Fewer under a sanitizer: its allocator makes 16 MiB messages slow, and RSS is not checked.
    constexpr std::size_t n = memory_is_measurable ? 16 : 4, size = 16 * MiB;
    corows::server_options so;
    so.connection.deflate.enabled = compressed;
    std::atomic<std::size_t> received{0};
    std::unique_ptr<server_thread> srv;
    if (m == mode::coroutines) {
        srv = std::make_unique<server_thread>(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
            message msg;
            while (co_await ws.read_message(msg)) {
                if (msg.size() == size) ++received;
                if (echo && msg.size() == size) co_await ws.write_message(msg);
                else co_await ws.write_text("ok");
            }
        });
    } else {
        corows::server::event_handlers h;
        h.on_message = [&](tcp_ws& ws, const message& msg) {
            if (msg.size() == size) ++received;
            // An echo is copied into the queue: its 16 MiB buffer must not stay either.
            if (echo && msg.size() == size) ws.send(msg);
            else ws.send_text("ok");
        };
        srv = std::make_unique<server_thread>(so, std::move(h));
    }
    const bytes ok{0x81, 0x02, 'o', 'k'};
    const bytes big(size, 'x');
    std::vector<std::unique_ptr<blocking_peer>> peers;
    std::vector<bytes> wires; // each peer's large message, built before measuring
    for (std::size_t i = 0; i < n; ++i) {
        peers.push_back(std::make_unique<blocking_peer>(srv->port()));
        peers.back()->upgrade(srv->port(), compressed ? "Sec-WebSocket-Extensions: permessage-deflate\r\n" : "");
        if (compressed) {
            client_deflater z;
            // A first message fills the connection's inflater window (context takeover keeps
            // 32 KiB of it): what the connection holds before the large message.
            bytes warm(64 * KiB);
            for (std::size_t k = 0; k < warm.size(); ++k) warm[k] = static_cast<std::uint8_t>('a' + (k * 7919) % 26);
            peers.back()->send(zero_key_frame(0xC1, z.compress(warm)));
            wires.push_back(zero_key_frame(0xC2, z.compress(big)));
        } else {
            peers.back()->send(zero_key_frame(0x81, bytes{'h', 'i'}));
            // 64 fragments of 256 KiB: assembled in the server's message storage.
            bytes w;
            for (std::size_t k = 0; k < 64; ++k) {
                auto part = std::span<const std::uint8_t>(big).subspan(k * 256 * KiB, 256 * KiB);
                bytes f = zero_key_frame(static_cast<std::uint8_t>((k == 0 ? 0x02 : 0x00) | (k == 63 ? 0x80 : 0)), part);
                w.insert(w.end(), f.begin(), f.end());
            }
            wires.push_back(std::move(w));
        }
        BOOST_REQUIRE(peers.back()->read_exact(4) == ok);
    }
    trim_heap();
    long before = rss_kib();
    for (std::size_t i = 0; i < n; ++i) {
        BOOST_REQUIRE(peers[i]->send(wires[i]));
        if (echo) {
            bytes back = peers[i]->read_exact(10 + size); // 0x82, 127, an 8-byte length, the payload
            BOOST_REQUIRE(back[0] == 0x82);
            BOOST_REQUIRE(std::equal(back.begin() + 10, back.end(), big.begin()));
        } else {
            BOOST_REQUIRE(peers[i]->read_exact(4) == ok);
        }
    }
    BOOST_REQUIRE(received == n);
    // The server lets go of a message's buffers when it next waits for its peer: a ping
    // answered proves each connection got there.
    const bytes pong{0x8a, 0x01, '?'};
    for (auto& p : peers) {
        BOOST_REQUIRE(p->send(zero_key_frame(0x89, bytes{'?'})));
        BOOST_REQUIRE(p->read_exact(3) == pong);
    }
    trim_heap();
    long after = rss_kib();
    BOOST_TEST_MESSAGE("  RSS before " << before << " KiB, after " << after << " KiB: "
                                      << (after - before) * 1024 / static_cast<long>(n) << " bytes more per connection");
    constexpr long pool_kib = 8 * 256;
    if constexpr (memory_is_measurable) BOOST_TEST(after - before <= static_cast<long>(n) * 4 + pool_kib);
}

} // namespace

BOOST_AUTO_TEST_SUITE(transport)

BOOST_AUTO_TEST_CASE(a_ping_flood_from_a_peer_that_never_reads_stays_bounded) {
    ping_flood(mode::coroutines);
    ping_flood(mode::events);
}

BOOST_AUTO_TEST_CASE(a_fresh_client_is_served_while_another_floods_empty_frames) {
    // An endless fragmented message of empty continuation frames: no message, ever.
    const bytes unit = repeated(zero_key_frame(0x00, {}), 256 * KiB);
    for (mode m : {mode::coroutines, mode::events}) served_during_flood(m, zero_key_frame(0x01, {}), unit, SIZE_MAX);
}

BOOST_AUTO_TEST_CASE(a_fresh_client_is_served_while_another_floods_empty_deflate_blocks) {
    // Messages of 8 MiB of empty final blocks (03 00): each inflates to nothing, and each
    // block ends a deflate stream the inflater must restart.
    bytes blocks;
    for (std::size_t i = 0; i < 4 * MiB; ++i) {
        blocks.push_back(0x03);
        blocks.push_back(0x00);
    }
    bytes unit = zero_key_frame(0xC2, blocks);
    for (mode m : {mode::coroutines, mode::events})
        served_during_flood(m, {}, unit, 40 * unit.size());
}

BOOST_AUTO_TEST_CASE(never_reading_broadcast_readers_are_dropped_with_1008_before_memory_grows) {
    slow_broadcast_readers(mode::coroutines);
    slow_broadcast_readers(mode::events);
}

BOOST_AUTO_TEST_CASE(a_large_message_leaves_nothing_behind_when_the_connection_idles) {
    for (mode m : {mode::coroutines, mode::events}) {
        idle_after_large(m, false);
        idle_after_large(m, true);
        idle_after_large(m, false, true);
    }
}

BOOST_AUTO_TEST_SUITE_END()
