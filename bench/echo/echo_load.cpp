// SPDX-License-Identifier: BSL-1.0
// Echo load generator: opens connections to a WebSocket echo server with corows' own client,
// keeps `depth` messages in flight on each, verifies every echo byte for byte and in order,
// and prints one line:
//
//   bench=echo server=NAME size=.. conns=.. depth=.. deflate=0|1 tls=0|1 msgs_per_s=.. mb_per_s=..
//   p50_us=.. p99_us=.. p999_us=.. errors=..
//
//   echo_load --url ws://127.0.0.1:9001/ [--name NAME] [--connections N] [--depth D]
//             [--size BYTES] [--text | --binary | --json] [--deflate [--browser [--replay]]] [--seconds S]
//             [--warmup S] [--server-pid PID]
//
// A wss:// URL runs the same over TLS, without verifying the server's certificate (the driver's
// servers use a throwaway one on loopback; the point is TLS's cost, not its trust). It offers
// the TLS 1.3 suites in the order Chrome and Firefox do, AES-128-GCM first, so every server
// negotiates what it would with browsers (OpenSSL's own client puts AES-256-GCM first).
// msgs_per_s counts echoes received in the measured window (after the warm-up); mb_per_s is
// their payload (one direction) in 10^6 bytes per second. Latency is from the write_message()
// call to the echo's arrival, so with depth > 1 it includes queueing behind earlier messages.
// --json sends text payloads that look like API traffic (compressible, no two alike in a
// row). With --deflate, each of those is a prepared message compressed once (at level 1,
// without context takeover) and sent again and again, masked afresh: compressing every message
// would cost the generator more than the fastest servers spend per echo. Such messages carry
// no sequence stamp, but the templates go round in turn, more of them than are in flight, so
// an echo of the wrong message still differs from the one expected.
// --browser (with --deflate) compresses as Chrome and Firefox do instead: every message afresh
// on the connection's own deflate stream, with context takeover, so the server inflates
// against a window that keeps moving. Each message is stamped, so no two are alike. The line
// then says deflate=browser. It costs the generator a compression per message, which is why
// the driver reports load_cpu beside the server's.
// --replay (with --browser, ws:// only) sends the same bytes without compressing each time: at
// the start it compresses one connection's sequence of `replay_cycle` stamped messages as a
// browser would (one deflate stream, context takeover, corows' client settings), and every
// connection sends that sequence in turn, masked afresh, again and again. A message compressed
// with takeover refers only to the messages before it in its cycle, so replaying the cycle
// after its own end is still a valid stream (checked at the start by inflating two cycles).
// The server inflates exactly what fresh compression would have sent, while the generator
// spends no compression per message: on two cores that is the difference between a server
// that is driven to saturation and one that waits for the generator. A server that imposes
// client_no_context_takeover gets the same messages compressed one by one. The line then says
// deflate=replay.
// The line ends with load_cpu= (this process's CPU time over the measured window, as a
// fraction of one core) and, with --server-pid, server_cpu= (the same for that process):
// whichever is near 1.0 is the bottleneck. server_sys= is the part of server_cpu spent in the
// kernel (system calls, TCP), which a server changes only through the system calls it makes.
//
// Hold mode, for memory measurements of the server:
//
//   echo_load --url ... --connections N --hold [--rounds R] [--size ..] [--json] [--deflate]
//
// opens N connections, sends R messages on each and waits for their echoes, prints
// "ready conns=N errors=E" and then holds the connections open until SIGTERM or SIGINT.
//
// It runs one io_context on one thread: the driver pins it to one core.
#include "../load_common.hpp"

#include <corows/prepared_message.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/inflate_stream.hpp>
#include <corows/protocol/message_writer.hpp>
#include <corows/protocol/url.hpp>
#include <corows/websocket.hpp>

#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#ifdef COROWS_HAS_TLS
#include <corows/tls_stream.hpp>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace {

using namespace corows_bench;
using clock_type = std::chrono::steady_clock;
using ws_t = corows::websocket<asio::ip::tcp::socket>;
#ifdef COROWS_HAS_TLS
// corows' own TLS stream: cheaper per message than asio::ssl::stream, so that the generator
// stays ahead of the servers it measures.
using wss_t = corows::websocket<corows::tls_stream>;
#endif

enum class payload_kind { binary, text, json };

struct settings {
    std::string url = "ws://127.0.0.1:9001/";
    std::string name = "unknown";
    std::size_t connections = 1;
    std::size_t depth = 1;
    std::size_t size = 32;
    payload_kind kind = payload_kind::binary;
    bool deflate = false;
    bool browser = false; // with deflate: compress each message, context takeover
    bool replay = false;  // with browser: send one precompressed cycle of such messages
    double seconds = 5;
    double warmup = 1;
    bool hold = false;
    std::size_t rounds = 0;
    long server_pid = 0;
};

settings parse_args(int argc, char** argv) {
    settings s;
    for (args a(argc, argv); a.next();) {
        std::string_view arg = a.arg();
        if (arg == "--url") s.url = a.value();
        else if (arg == "--name") s.name = a.value();
        else if (arg == "--connections") s.connections = a.count(1, 1e6);
        else if (arg == "--depth") s.depth = a.count(1, 1e5);
        else if (arg == "--size") s.size = a.count(0, 64.0 * 1024 * 1024);
        else if (arg == "--text") s.kind = payload_kind::text;
        else if (arg == "--binary") s.kind = payload_kind::binary;
        else if (arg == "--json") s.kind = payload_kind::json;
        else if (arg == "--deflate") s.deflate = true;
        else if (arg == "--browser") s.browser = true;
        else if (arg == "--replay") s.replay = true;
        else if (arg == "--seconds") s.seconds = a.number(0.01, 1e6);
        else if (arg == "--warmup") s.warmup = a.number(0, 1e6);
        else if (arg == "--hold") s.hold = true;
        else if (arg == "--rounds") s.rounds = a.count(0, 1e9);
        else if (arg == "--server-pid") s.server_pid = static_cast<long>(a.count(1, 1e9));
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
    if (s.browser && !s.deflate) throw std::invalid_argument("--browser needs --deflate");
    if (s.replay && !s.browser) throw std::invalid_argument("--replay needs --browser");
    if (s.replay && s.hold) throw std::invalid_argument("--replay measures; it does not --hold");
    return s;
}

// ---------------------------------------------------------------- payloads

// A small fast PRNG: the payloads only have to differ, not be unpredictable.
struct xorshift {
    std::uint64_t x;
    std::uint64_t next() noexcept {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    }
    std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(next() % n); }
};

// The room at the front of each payload where the message's sequence number is written, so
// that an echo of the wrong message (or one out of order) cannot pass as the right one.
constexpr std::size_t stamp_size = 16;

// JSON-like text of exactly `size` bytes: an object of records with varied keys' values.
// Compressible like real API traffic (repeated keys, small vocabulary), but no two alike.
std::string make_json(std::size_t size, xorshift& rng) {
    static constexpr std::array<std::string_view, 16> words = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
        "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa"};
    static constexpr std::array<std::string_view, 6> tags = {"new", "sale", "red", "blue", "large", "small"};
    // The stamp goes in the first field's value: {"seq":"0123456789abcdef", ...
    std::string out = "{\"seq\":\"";
    out.append(stamp_size, '0');
    out += "\",\"user\":{\"id\":";
    out += std::to_string(rng.below(1000000));
    out += ",\"name\":\"";
    out += words[rng.below(words.size())];
    out += '_';
    out += std::to_string(rng.below(10000));
    out += "\"},\"items\":[";
    bool first = true;
    // Stop early enough that the closing part and some padding always fit.
    while (out.size() + 200 < size) {
        if (!first) out += ',';
        first = false;
        out += "{\"id\":";
        out += std::to_string(rng.below(100000));
        out += ",\"name\":\"";
        out += words[rng.below(words.size())];
        out += '-';
        out += words[rng.below(words.size())];
        out += "\",\"price\":";
        out += std::to_string(rng.below(100000) / 100.0).substr(0, 6);
        out += ",\"qty\":";
        out += std::to_string(rng.below(50));
        out += ",\"tags\":[\"";
        out += tags[rng.below(tags.size())];
        out += "\",\"";
        out += tags[rng.below(tags.size())];
        out += "\"]}";
    }
    out += "],\"note\":\"";
    std::string tail = "\"}";
    while (out.size() + tail.size() < size) {
        std::string_view w = words[rng.below(words.size())];
        std::size_t room = size - tail.size() - out.size();
        out.append(w.substr(0, std::min(room, w.size())));
        if (out.size() + tail.size() < size) out += ' ';
    }
    out += tail;
    if (out.size() > size) out.resize(size); // tiny sizes: no longer valid JSON, still text
    return out;
}

std::vector<std::uint8_t> make_payload(payload_kind kind, std::size_t size, xorshift& rng) {
    std::vector<std::uint8_t> p(size);
    if (kind == payload_kind::json) {
        std::string j = make_json(size, rng);
        std::memcpy(p.data(), j.data(), size);
    } else if (kind == payload_kind::text) {
        static constexpr std::string_view chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
        for (auto& b : p) b = static_cast<std::uint8_t>(chars[rng.below(chars.size())]);
    } else {
        for (auto& b : p) b = static_cast<std::uint8_t>(rng.next() >> 56);
    }
    return p;
}

// Where the stamp goes: after `{"seq":"` for JSON, at the front otherwise.
std::size_t stamp_offset(payload_kind kind) { return kind == payload_kind::json ? 8 : 0; }

// Writes `seq` as hex digits (valid UTF-8 for text messages) into as much of the stamp room as
// the payload has.
void stamp(std::vector<std::uint8_t>& p, std::size_t offset, std::uint64_t seq) {
    static constexpr char hex[] = "0123456789abcdef";
    std::size_t n = p.size() > offset ? std::min(stamp_size, p.size() - offset) : 0;
    for (std::size_t i = 0; i < n; ++i) p[offset + n - 1 - i] = static_cast<std::uint8_t>(hex[(seq >> (4 * i)) & 15]);
}

// ---------------------------------------------------------------- --replay

// Messages in one replayed cycle: 512 KiB of 1 KiB JSON, many 32 KiB windows' worth.
constexpr std::size_t replay_cycle = 512;

// One connection's cycle of messages as a client compressing with `params` sends them.
struct replay_set {
    corows::deflate_params params;
    std::vector<std::vector<std::uint8_t>> plain;      // message k of the cycle
    std::vector<std::vector<std::uint8_t>> compressed; // its payload on the wire (RSV1 set)
};

// Compresses the cycle as corows' client would with `params`, and checks that two turns of it
// inflate back to the same messages; throws if not.
replay_set make_replay(const std::vector<std::vector<std::uint8_t>>& pool, payload_kind kind,
                       const corows::deflate_params& params) {
    replay_set r{params, {}, {}};
    corows::deflate_stream deflater(params.client_max_window_bits, params.client_no_context_takeover);
    for (std::size_t k = 0; k < replay_cycle; ++k) {
        auto p = pool[(k * 7) % pool.size()];
        stamp(p, stamp_offset(kind), k);
        std::error_code ec;
        auto out = deflater.compress(p, ec);
        if (ec) throw std::runtime_error("--replay: cannot compress: " + ec.message());
        r.compressed.emplace_back(out.begin(), out.end());
        r.plain.push_back(std::move(p));
    }
    corows::inflate_stream inflater(params.client_max_window_bits, params.client_no_context_takeover);
    corows::byte_buffer out;
    for (std::size_t k = 0; k < 2 * replay_cycle; ++k) {
        out.clear();
        const auto& want = r.plain[k % replay_cycle];
        if (inflater.write(r.compressed[k % replay_cycle], out, SIZE_MAX) || inflater.finish(out, SIZE_MAX) ||
            !std::equal(out.data().begin(), out.data().end(), want.begin(), want.end()))
            throw std::runtime_error("--replay: the replayed cycle does not inflate to what was compressed");
    }
    return r;
}

// ---------------------------------------------------------------- the run

struct run_state {
    const settings& cfg;
    corows::url target;
    asio::ip::tcp::endpoint endpoint;
    std::vector<std::vector<std::uint8_t>> pool; // payload templates
    // With --deflate (measuring, not holding): pool[i] prepared, compressed once each.
    std::vector<std::shared_ptr<const corows::prepared_message>> prepared;
    // With --replay: a cycle for each way the servers let clients compress.
    std::vector<std::unique_ptr<replay_set>> replays;
    histogram latency;
    bool measuring = false;
    bool stopping = false;
    std::uint64_t received = 0; // echoes in the measured window
    std::uint64_t errors = 0;
    std::size_t connected = 0;      // connections open (handshake done)
    std::size_t settled = 0;        // connection attempts that succeeded or failed
    std::size_t finished = 0;       // connection coroutines that ended
    std::size_t ready = 0;          // hold mode: connections done with their rounds
    std::vector<std::function<void()>> open; // aborts each connection still open at the end
#ifdef COROWS_HAS_TLS
    std::unique_ptr<asio::ssl::context> tls; // for wss:// URLs
#endif
    asio::steady_timer wake;        // signalled when `finished` or `ready` changes

    run_state(const settings& s, asio::any_io_executor ex) : cfg(s), wake(ex, clock_type::time_point::max()) {}
    void report_error(std::string_view what) {
        // The first few are worth reading; after that only the count matters.
        if (errors++ < 5) std::cerr << "echo_load: " << what << '\n';
    }
};

// The cycle for a connection that agreed to `params`, made on first use.
const replay_set& replay_for(run_state& st, const corows::deflate_params& params) {
    for (const auto& r : st.replays)
        if (r->params == params) return *r;
    st.replays.push_back(std::make_unique<replay_set>(make_replay(st.pool, st.cfg.kind, params)));
    return *st.replays.back();
}

// One slot per message in flight: what was sent and when.
struct in_flight {
    std::size_t tpl = 0;              // the template it came from (with --replay: the cycle's message)
    std::vector<std::uint8_t> bytes;  // the stamped copy sent (not for prepared or replayed messages)
    clock_type::time_point sent;
    // The bytes the echo must match.
    const std::vector<std::uint8_t>& expected(const run_state& st, const replay_set* replay) const {
        if (replay) return replay->plain[tpl];
        return st.prepared.empty() ? bytes : st.pool[tpl];
    }
};

// Fills `slot` with the next message. A plain function, not a coroutine: the load generator
// must cost less per message than the servers it measures.
void prepare_one(run_state& st, in_flight& slot, std::size_t conn, std::uint64_t seq, clock_type::time_point now,
                 const replay_set* replay) {
    slot.tpl = replay ? seq % replay_cycle : (conn * 7 + seq) % st.pool.size();
    if (st.prepared.empty() && !replay) {
        const auto& tpl = st.pool[slot.tpl];
        slot.bytes.assign(tpl.begin(), tpl.end());
        stamp(slot.bytes, stamp_offset(st.cfg.kind), seq);
    }
    slot.sent = now;
}

// Sends what prepare_one() put in `slot`. Not a coroutine itself: no frame of its own.
template <class WS>
asio::awaitable<void> send_one(run_state& st, WS& ws, const in_flight& slot, corows::message_kind kind) {
    if (st.prepared.empty()) return ws.write_message(slot.bytes, kind, true);
    return ws.write_prepared(st.prepared[slot.tpl]);
}

// Sends the cycle's message slot.tpl as one masked frame straight to the socket, framed by
// `writer` (a client's: a fresh mask key per frame) into `frame` (the connection's, reused).
// The websocket's own writer is idle meanwhile: while it measures, the generator sends nothing
// else, and the echo servers send no pings to answer (a pong from the writer could otherwise
// land inside a frame that took two writes).
asio::awaitable<void> send_replayed(ws_t& ws, const replay_set& r, const in_flight& slot, corows::message_kind kind,
                                    corows::message_writer& writer, corows::byte_buffer& frame) {
    frame.clear();
    writer.append_frame(frame, corows::data_opcode(kind), true, true, r.compressed[slot.tpl]);
    co_await asio::async_write(ws.next_layer(), asio::buffer(frame.data().data(), frame.size()),
                               asio::use_awaitable);
}

// Checks an echo against what was sent; false (and an error counted) if it differs.
bool verify(run_state& st, const corows::message& m, const in_flight& slot, const replay_set* replay) {
    bool kind_ok = m.is_text() == (st.cfg.kind != payload_kind::binary);
    auto got = m.data();
    const auto& sent = slot.expected(st, replay);
    if (kind_ok && got.size() == sent.size() && std::equal(got.begin(), got.end(), sent.begin()))
        return true;
    std::string what = "echo differs from what was sent (got ";
    what += std::to_string(got.size());
    what += " bytes, sent ";
    what += std::to_string(sent.size());
    what += kind_ok ? ")" : ", wrong kind)";
    st.report_error(what);
    return false;
}

// A connected client WebSocket over TCP, or over TLS when the URL is wss://.
asio::awaitable<ws_t> open_ws(run_state&, asio::ip::tcp::socket sock, const corows::options& o, ws_t*) {
    co_return ws_t(std::move(sock), o);
}
#ifdef COROWS_HAS_TLS
asio::awaitable<wss_t> open_ws(run_state& st, asio::ip::tcp::socket sock, const corows::options& o, wss_t*) {
    sock.set_option(asio::ip::tcp::no_delay(true));
    corows::tls_stream s(std::move(sock), *st.tls);
    s.release_openssl(); // records outside OpenSSL, as the servers' are: a cheaper generator
    co_await s.async_handshake(corows::tls_stream::client, asio::use_awaitable);
    co_return wss_t(std::move(s), o);
}
#endif

template <class WS>
asio::awaitable<void> connection(run_state& st, std::size_t id, bool& settled) {
    auto ex = co_await asio::this_coro::executor;
    corows::options o;
    o.max_message_size = 64 * 1024 * 1024;
    o.deflate.enabled = st.cfg.deflate;
    // Throughput: our messages without context takeover, so that each template is compressed
    // once (see st.prepared) and the servers' work, not ours, sets the pace; every server must
    // accept it (a promise about our own compressor). Memory (--hold): context takeover, as
    // browsers do, so each server keeps the window for what clients send.
    o.deflate.client_no_context_takeover = !st.cfg.hold && !st.cfg.browser;
    // Room for every message in flight: a writer that waited for the socket while nobody
    // reads the echoes could deadlock with a server that waits for us to read.
    o.write_queue_limit = std::max(o.write_queue_limit, 2 * st.cfg.depth * (st.cfg.size + 14));
    asio::ip::tcp::socket sock(ex);
    co_await sock.async_connect(st.endpoint, asio::use_awaitable);
    WS ws = co_await open_ws(st, std::move(sock), o, static_cast<WS*>(nullptr));
    co_await ws.handshake(st.target.host_field(), st.target.target);
    if (st.cfg.deflate && !ws.deflate()) st.report_error("the server did not accept permessage-deflate");
    st.open[id] = [&ws] { ws.abort(); };
    struct unlist {
        run_state& st;
        std::size_t id;
        ~unlist() { st.open[id] = nullptr; }
    } guard{st, id};
    ++st.connected;
    ++st.settled;
    settled = true;

    const auto kind = st.cfg.kind == payload_kind::binary ? corows::message_kind::binary : corows::message_kind::text;
    std::size_t depth = st.cfg.hold ? 1 : st.cfg.depth;
    const replay_set* replay = nullptr;
    corows::message_writer writer(corows::writer_config{corows::role::client});
    corows::byte_buffer frame;
    if constexpr (std::is_same_v<WS, ws_t>) {
        if (st.cfg.replay) {
            if (!ws.deflate()) co_return; // reported above
            replay = &replay_for(st, *ws.deflate());
        }
    }
    // Sends what prepare_one() put in `slot`.
    auto send = [&](const in_flight& slot) -> asio::awaitable<void> {
        if constexpr (std::is_same_v<WS, ws_t>)
            if (replay) return send_replayed(ws, *replay, slot, kind, writer, frame);
        return send_one(st, ws, slot, kind);
    };
    std::vector<in_flight> ring(depth);
    std::uint64_t next_seq = 0, next_echo = 0;
    corows::message m;
    bool holding = st.cfg.hold;
    std::size_t to_send = holding ? st.cfg.rounds : SIZE_MAX;
    while (next_seq < depth && next_seq < to_send) {
        prepare_one(st, ring[next_seq % depth], id, next_seq, clock_type::now(), replay);
        co_await send(ring[next_seq % depth]);
        ++next_seq;
    }
    if (holding && st.cfg.rounds == 0) {
        ++st.ready;
        st.wake.cancel();
    }
    for (;;) {
        bool got = co_await ws.read_message(m);
        if (!got) {
            if (!st.stopping) st.report_error("the server closed a connection");
            break;
        }
        if (next_echo == next_seq) {
            st.report_error("an echo arrived that was never sent");
            break;
        }
        const in_flight& slot = ring[next_echo % depth];
        auto now = clock_type::now();
        if (!verify(st, m, slot, replay)) break;
        ++next_echo;
        if (st.measuring && !st.stopping) {
            ++st.received;
            st.latency.record(static_cast<std::uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(now - slot.sent).count()));
        }
        if (holding && next_echo == st.cfg.rounds) {
            ++st.ready;
            st.wake.cancel();
        }
        if (st.stopping || next_seq >= to_send) {
            if (next_echo == next_seq && !holding) break; // drained
            continue;
        }
        // The echo's arrival time doubles as the next message's send time (one clock read per
        // message; it counts the check above, tens of nanoseconds, into that latency).
        prepare_one(st, ring[next_seq % depth], id, next_seq, now, replay);
        co_await send(ring[next_seq % depth]);
        ++next_seq;
    }
    if (ws.is_open() && st.stopping) {
        co_await ws.close(1000, "done", corows::use_tuple); // how it ends is not measured
    }
}

asio::awaitable<void> run_connection(run_state& st, std::size_t id) {
    bool settled = false;
    try {
#ifdef COROWS_HAS_TLS
        if (st.tls) co_await connection<wss_t>(st, id, settled);
        else co_await connection<ws_t>(st, id, settled);
#else
        co_await connection<ws_t>(st, id, settled);
#endif
    } catch (const std::exception& e) {
        if (!st.stopping) st.report_error(e.what());
    }
    if (!settled) ++st.settled;
    ++st.finished;
    st.wake.cancel();
}

// Connects in waves: a burst of thousands of SYNs would overflow the server's listen backlog.
asio::awaitable<void> open_all(run_state& st) {
    auto ex = co_await asio::this_coro::executor;
    constexpr std::size_t wave = 64;
    for (std::size_t i = 0; i < st.cfg.connections; ++i) {
        asio::co_spawn(ex, run_connection(st, i), asio::detached);
        while (i + 1 - st.settled >= wave) {
            asio::steady_timer t(ex, std::chrono::milliseconds(1));
            co_await t.async_wait(asio::use_awaitable);
        }
    }
    while (st.settled < st.cfg.connections) {
        asio::steady_timer t(ex, std::chrono::milliseconds(1));
        co_await t.async_wait(asio::use_awaitable);
    }
}

asio::awaitable<void> sleep_for(std::chrono::duration<double> d) {
    asio::steady_timer t(co_await asio::this_coro::executor,
                         std::chrono::duration_cast<clock_type::duration>(d));
    co_await t.async_wait(asio::use_awaitable);
}

// Waits until `done()` holds or `limit` passes; true if it holds.
template <class Pred>
asio::awaitable<bool> wait_until(run_state& st, Pred done, std::chrono::duration<double> limit) {
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(limit);
    while (!done()) {
        auto now = clock_type::now();
        if (now >= deadline) co_return false;
        // Re-armed each time: cancel() only wakes a wait already pending.
        st.wake.expires_at(std::min(deadline, now + std::chrono::milliseconds(100)));
        std::error_code ec;
        co_await st.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return true;
}

void abort_all(run_state& st) {
    for (auto& abort : st.open)
        if (abort) abort();
}

asio::awaitable<void> measure(run_state& st) {
    co_await open_all(st);
    if (st.connected < st.cfg.connections) {
        std::string what = "only ";
        what += std::to_string(st.connected);
        what += " connections opened";
        st.report_error(what);
    }
    co_await sleep_for(std::chrono::duration<double>(st.cfg.warmup));
    st.received = 0;
    st.measuring = true;
    auto t0 = clock_type::now();
    double cpu0 = own_cpu_seconds();
    const cpu_seconds server0 = process_cpu_times(st.cfg.server_pid);
    co_await sleep_for(std::chrono::duration<double>(st.cfg.seconds));
    st.stopping = true;
    double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    double load_cpu = (own_cpu_seconds() - cpu0) / secs;
    const cpu_seconds server1 = process_cpu_times(st.cfg.server_pid);
    std::uint64_t msgs = st.received;
    // Drain what is in flight (verifying it) and close; give up on stragglers after a while.
    bool drained = co_await wait_until(st, [&] { return st.finished == st.cfg.connections; }, std::chrono::seconds(10));
    if (!drained) {
        st.report_error("connections did not finish in 10 s after the run");
        abort_all(st);
        co_await wait_until(st, [&] { return st.finished == st.cfg.connections; }, std::chrono::seconds(2));
    }
    double rate = static_cast<double>(msgs) / secs;
    char line[512];
    std::snprintf(line, sizeof line,
                  "bench=echo server=%s size=%zu conns=%zu depth=%zu deflate=%s tls=%d msgs_per_s=%.0f mb_per_s=%.2f "
                  "p50_us=%.1f p99_us=%.1f p999_us=%.1f errors=%llu load_cpu=%.2f",
                  st.cfg.name.c_str(), st.cfg.size, st.cfg.connections, st.cfg.depth,
                  st.cfg.replay ? "replay" : st.cfg.browser ? "browser" : st.cfg.deflate ? "1" : "0", st.target.secure ? 1 : 0, rate,
                  rate * static_cast<double>(st.cfg.size) / 1e6, st.latency.quantile(0.5) / 1e3,
                  st.latency.quantile(0.99) / 1e3, st.latency.quantile(0.999) / 1e3,
                  static_cast<unsigned long long>(st.errors), load_cpu);
    std::cout << line;
    if (server0.total() >= 0 && server1.total() >= 0) {
        std::snprintf(line, sizeof line, " server_cpu=%.2f server_sys=%.2f", (server1.total() - server0.total()) / secs,
                      (server1.system - server0.system) / secs);
        std::cout << line;
    }
    std::cout << std::endl;
}

asio::awaitable<void> hold(run_state& st, asio::signal_set& signals) {
    co_await open_all(st);
    co_await wait_until(st, [&] { return st.ready + st.finished >= st.cfg.connections; }, std::chrono::hours(1));
    std::cout << "ready conns=" << st.connected - st.finished << " errors=" << st.errors << std::endl;
    std::error_code ec;
    co_await signals.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    st.stopping = true;
    abort_all(st);
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings cfg = parse_args(argc, argv);
        raise_fd_limit();
        asio::io_context ctx(1);
        run_state st(cfg, ctx.get_executor());
        st.target = corows::parse_url(cfg.url);
        if (cfg.replay && st.target.secure)
            throw std::invalid_argument("--replay writes frames to the socket itself: ws:// only");
        if (st.target.secure) {
#ifdef COROWS_HAS_TLS
            // The benchmark's servers use a throwaway self-signed certificate on loopback;
            // the generator measures TLS's cost, not its trust, so it verifies no peer.
            st.tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
            st.tls->set_verify_mode(asio::ssl::verify_none);
            if (SSL_CTX_set_ciphersuites(st.tls->native_handle(),
                                         "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                         "TLS_CHACHA20_POLY1305_SHA256") != 1)
                throw std::runtime_error("cannot set the TLS 1.3 cipher suites");
#else
            throw std::invalid_argument("wss:// needs a build with TLS (OpenSSL)");
#endif
        }
        asio::ip::tcp::resolver resolver(ctx);
        st.endpoint = *resolver.resolve(st.target.host, std::to_string(st.target.port)).begin();
        st.open.assign(cfg.connections, nullptr);
        xorshift rng{0x9e3779b97f4a7c15ULL};
        // Enough templates that a connection cycles through more than a 32 KiB deflate window
        // of distinct messages, few enough to stay small at 16 KiB.
        std::size_t templates = cfg.size <= 4096 ? 64 : 8;
        bool prepare = cfg.deflate && !cfg.hold && !cfg.browser;
        if (prepare) templates = std::max(templates, cfg.depth + 1); // more than are in flight
        for (std::size_t i = 0; i < templates; ++i) st.pool.push_back(make_payload(cfg.kind, cfg.size, rng));
        // Level 1, as when the generator compressed every message: the servers inflate the same.
        if (prepare)
            for (const auto& p : st.pool)
                st.prepared.push_back(std::make_shared<const corows::prepared_message>(
                    p, cfg.kind == payload_kind::binary ? corows::message_kind::binary : corows::message_kind::text, 1));
        asio::signal_set signals(ctx, SIGINT, SIGTERM);
        bool failed = false;
        auto on_done = [&](std::exception_ptr e) {
            if (!e) return;
            failed = true;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "echo_load: " << x.what() << '\n';
            }
        };
        if (cfg.hold) asio::co_spawn(ctx, hold(st, signals), on_done);
        else asio::co_spawn(ctx, measure(st), on_done);
        ctx.run();
        return failed || st.errors ? 1 : 0;
    } catch (const std::exception& e) {
        std::cerr << "echo_load: " << e.what() << '\n';
        return 2;
    }
}
