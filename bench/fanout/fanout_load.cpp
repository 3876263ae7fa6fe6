// SPDX-License-Identifier: BSL-1.0
// Fan-out load generator: one publisher and S subscribers spread over the nodes of a chat
// cluster (corows' examples/chat_server, or bench/fanout/socketio_node.js), on corows' own
// client. Every message the publisher sends must reach every subscriber exactly once and in
// order; it prints one line:
//
//   bench=fanout peer=NAME nodes=N subscribers=S messages=M size=B deliveries_per_s=..
//   p50_ms=.. p99_ms=.. server_cpu_us_per_delivery=.. redis_cpu_us_per_delivery=..
//   window=K|rate=R seconds=.. delivered=.. server_cpu=.. redis_cpu=.. load_cpu=.. errors=..
//
//   fanout_load --ports 9001,9002,9003 [--protocol corows|socketio] [--name NAME]
//               [--subscribers 1000] [--messages 500] [--size 64] [--window 32 | --rate R]
//               [--server-pids P1,P2,P3] [--redis-pid P] [--host 127.0.0.1] [--stall S]
//
// Subscriber i connects to port i mod N; the publisher to the first port. With --protocol
// corows each is a WebSocket to /chat?room=bench and a message is its text. With socketio each
// speaks Socket.IO 4 over its WebSocket transport (/socket.io/?EIO=4&transport=websocket):
// it waits for the open packet, joins the default namespace ("40"), answers pings ("2") with
// pongs ("3"); the publisher emits 42["msg","TEXT"] and subscribers receive the same packet.
// Compression is not offered, so neither server compresses.
//
// The text of message n is its sequence number and the time it was published (16 hex digits
// each), then letters that depend on n, `size` bytes in all: a subscriber checks each one
// whole, and that it is the next it expects. Before the first message, the publisher sends
// "probe" until every subscriber has one: a node's subscription to the backplane may lag its
// clients' handshakes, and a message lost that way would be the benchmark's fault.
//
// Pace: with --window K (the default, 32) the publisher sends message n only once every
// subscriber has message n - K, so it goes as fast as the slowest subscriber keeps up; with
// --rate R it sends R messages per second whatever happens, and latency runs from when each
// message was due (a late publisher does not hide a slow server).
//
// The figures cover the steady part: from the moment every subscriber has the first tenth of
// the messages to the moment every one has all but the last tenth. deliveries_per_s counts
// deliveries to subscribers (the publisher's own copy, which both servers send it, is read and
// not counted); latency covers the messages of that part, publish to arrival, on one clock.
// The CPU figures are the processes' user + system time over the same part (from
// /proc/PID/stat), divided by the deliveries in it; server_cpu, redis_cpu and load_cpu are the
// same times as fractions of one core. seconds= is the steady part's length: CPU time comes in
// 10 ms ticks, so the CPU figures of a steady part under a second or so are rough. A
// subscriber that misses, repeats or reorders a message, or whose connection closes, is
// counted in errors= and left out from then on; the exit status is then 1.
//
// It runs one io_context on one thread: the driver pins it to one core.
#include "../load_common.hpp"

#include <corows/websocket.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace corows_bench;
using clock_type = std::chrono::steady_clock;
using ws_t = corows::websocket<asio::ip::tcp::socket>;

enum class protocol { corows, socketio };

struct settings {
    std::string host = "127.0.0.1";
    std::vector<unsigned short> ports;
    protocol proto = protocol::corows;
    std::string name;
    std::size_t subscribers = 1000;
    std::size_t messages = 500;
    std::size_t size = 64;
    std::size_t window = 32;
    double rate = 0; // messages per second; 0: --window
    std::vector<long> server_pids;
    long redis_pid = 0;
    double stall = 10; // seconds without progress before giving up
};

// A comma-separated list of whole numbers in lo..hi.
std::vector<long> parse_list(std::string_view arg, const std::string& text, double lo, double hi) {
    std::vector<long> out;
    std::size_t start = 0;
    for (;;) {
        auto comma = text.find(',', start);
        out.push_back(static_cast<long>(parse_number(arg, text.substr(start, comma - start), lo, hi)));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

settings parse_args(int argc, char** argv) {
    settings s;
    for (args a(argc, argv); a.next();) {
        std::string_view arg = a.arg();
        if (arg == "--ports") {
            s.ports.clear();
            for (long p : parse_list(arg, a.value(), 1, 65535)) s.ports.push_back(static_cast<unsigned short>(p));
        } else if (arg == "--protocol") {
            auto v = a.value();
            if (v == "corows") s.proto = protocol::corows;
            else if (v == "socketio") s.proto = protocol::socketio;
            else throw std::invalid_argument("--protocol is corows or socketio");
        } else if (arg == "--name") s.name = a.value();
        else if (arg == "--host") s.host = a.value();
        else if (arg == "--subscribers") s.subscribers = a.count(1, 1e6);
        // At least 10: the first and last tenth are left out of the figures.
        else if (arg == "--messages") s.messages = a.count(10, 1e8);
        // Room for the sequence number and the time stamp; Socket.IO nodes refuse packets
        // over 1 MB by default.
        else if (arg == "--size") s.size = a.count(32, 1e6 - 100);
        else if (arg == "--window") s.window = a.count(1, 1e6), s.rate = 0;
        else if (arg == "--rate") s.rate = a.number(0.1, 1e8);
        else if (arg == "--server-pids") s.server_pids = parse_list(arg, a.value(), 1, 1e9);
        else if (arg == "--redis-pid") s.redis_pid = static_cast<long>(a.count(1, 1e9));
        else if (arg == "--stall") s.stall = a.number(0.1, 1e6);
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
    if (s.ports.empty()) throw std::invalid_argument("--ports is required");
    if (s.name.empty()) s.name = s.proto == protocol::corows ? "corows" : "socketio";
    return s;
}

// ---------------------------------------------------------------- messages

constexpr std::string_view probe_text = "probe";
constexpr std::string_view sio_event_head = "42[\"msg\",\"";
constexpr std::string_view sio_event_tail = "\"]";
constexpr std::size_t hex_digits = 16;

void put_hex(std::string& out, std::uint64_t v) {
    static constexpr char hex[] = "0123456789abcdef";
    for (int shift = 60; shift >= 0; shift -= 4) out += hex[(v >> shift) & 15];
}

bool get_hex(std::string_view text, std::uint64_t& v) {
    v = 0;
    for (char c : text) {
        unsigned d = c >= '0' && c <= '9' ? unsigned(c - '0') : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10) : 16;
        if (d == 16) return false;
        v = v << 4 | d;
    }
    return true;
}

// The letters after the header of message `seq`: they differ from one message to the next,
// so that a subscriber would notice a message put together from two others. Plain letters:
// the text goes into a JSON string as it is.
char filler(std::uint64_t seq, std::size_t i) { return static_cast<char>('a' + (seq + i) % 26); }

// Message `seq`, stamped `stamp_ns` (nanoseconds since the run's origin), `size` bytes.
std::string make_text(std::uint64_t seq, std::uint64_t stamp_ns, std::size_t size) {
    std::string out;
    out.reserve(size);
    put_hex(out, seq);
    put_hex(out, stamp_ns);
    for (std::size_t i = out.size(); i < size; ++i) out += filler(seq, i);
    return out;
}

// What the publisher writes: the text as it is, or as a Socket.IO event.
std::string frame(protocol p, std::string_view text) {
    if (p == protocol::corows) return std::string(text);
    std::string out;
    out.reserve(sio_event_head.size() + text.size() + sio_event_tail.size());
    out += sio_event_head;
    out += text;
    out += sio_event_tail;
    return out;
}

enum class packet { text, ping, other };

// What a received WebSocket message is; for packet::text, `text` is the chat text in it.
packet classify(protocol p, const corows::message& m, std::string_view& text) {
    if (!m.is_text()) return packet::other;
    std::string_view t = m.text();
    if (p == protocol::corows) {
        text = t;
        return packet::text;
    }
    if (t == "2") return packet::ping;
    if (!t.starts_with(sio_event_head) || !t.ends_with(sio_event_tail) ||
        t.size() < sio_event_head.size() + sio_event_tail.size())
        return packet::other;
    text = t.substr(sio_event_head.size(), t.size() - sio_event_head.size() - sio_event_tail.size());
    return packet::text;
}

// ---------------------------------------------------------------- the run

struct subscriber {
    ws_t* ws = nullptr;      // while its connection is open
    std::uint64_t next = 0;  // the sequence number it expects
    bool probed = false;
    bool failed = false;
};

// Counters and CPU times at one moment.
struct snapshot {
    clock_type::time_point at;
    std::uint64_t deliveries = 0;
    double own = 0, servers = 0, redis = 0;
};

struct run_state {
    const settings& cfg;
    std::vector<asio::ip::tcp::endpoint> endpoints;
    clock_type::time_point origin = clock_type::now();
    std::vector<subscriber> subs;
    std::vector<std::uint32_t> have;  // per message: subscribers that received it
    std::size_t watermark = 0;        // messages every live subscriber has
    std::size_t steady_from, steady_to;
    std::optional<snapshot> first, last;
    histogram latency;
    std::uint64_t deliveries = 0;
    std::uint64_t errors = 0;
    std::size_t joined = 0;   // subscribers in the room
    std::size_t settled = 0;  // subscribers that joined or failed to
    std::size_t failed = 0;   // subscribers left out (failed to join, or later)
    std::size_t probed = 0;   // live subscribers that received a probe
    std::size_t finished = 0; // subscriber coroutines that ended
    bool publisher_reading = false;
    bool stopping = false;
    asio::steady_timer wake; // cancelled when something above changes

    run_state(const settings& s, asio::any_io_executor ex)
        : cfg(s), subs(s.subscribers), have(s.messages, 0), steady_from(s.messages / 10),
          steady_to(s.messages - s.messages / 10), wake(ex, clock_type::time_point::max()) {}

    std::size_t live() const { return cfg.subscribers - failed; }
    void report_error(std::string_view what) {
        // The first few are worth reading; after that only the count matters.
        if (errors++ < 5) std::cerr << "fanout_load: " << what << '\n';
    }
};

snapshot take_snapshot(const run_state& st) {
    snapshot s;
    s.at = clock_type::now();
    s.deliveries = st.deliveries;
    s.own = own_cpu_seconds();
    for (long pid : st.cfg.server_pids) s.servers += process_cpu_seconds(pid);
    s.redis = st.cfg.redis_pid ? process_cpu_seconds(st.cfg.redis_pid) : 0;
    return s;
}

// Moves the watermark past every message that each live subscriber has, taking the
// snapshots at the ends of the steady part on the way.
void advance(run_state& st) {
    bool moved = false;
    while (st.watermark < st.have.size() && st.have[st.watermark] >= st.live()) {
        ++st.watermark;
        moved = true;
        if (st.watermark == st.steady_from) st.first = take_snapshot(st);
        if (st.watermark == st.steady_to) st.last = take_snapshot(st);
    }
    if (moved) st.wake.cancel();
}

// Leaves subscriber `id` out from now on: the others need not wait for it.
void fail(run_state& st, std::size_t id, std::string_view why) {
    auto& sub = st.subs[id];
    if (sub.failed) return;
    if (!st.stopping) st.report_error(why);
    sub.failed = true;
    ++st.failed;
    if (sub.probed) --st.probed;
    advance(st);
    st.wake.cancel();
}

// Checks what subscriber `id` received; false (and the subscriber failed) if it is wrong.
bool receive(run_state& st, std::size_t id, std::string_view text, clock_type::time_point now) {
    auto& sub = st.subs[id];
    if (text == probe_text) {
        if (sub.next != 0) {
            fail(st, id, "a probe arrived after the messages began");
            return false;
        }
        if (!sub.probed) {
            sub.probed = true;
            ++st.probed;
            st.wake.cancel();
        }
        return true;
    }
    std::uint64_t seq = 0, stamp = 0;
    bool whole = text.size() == st.cfg.size && get_hex(text.substr(0, hex_digits), seq) &&
                 get_hex(text.substr(hex_digits, hex_digits), stamp) && seq < st.cfg.messages;
    for (std::size_t i = 2 * hex_digits; whole && i < text.size(); ++i) whole = text[i] == filler(seq, i);
    if (!whole) {
        fail(st, id, "a message arrived that was never sent (or arrived damaged)");
        return false;
    }
    if (seq != sub.next) {
        std::string what = "a subscriber expecting message " + std::to_string(sub.next) + " received message " +
                           std::to_string(seq) + (seq < sub.next ? " (again or out of order)" : " (one was missed)");
        fail(st, id, what);
        return false;
    }
    ++sub.next;
    ++st.deliveries;
    if (seq >= st.steady_from && seq < st.steady_to) {
        auto sent = st.origin + std::chrono::nanoseconds(stamp);
        st.latency.record(static_cast<std::uint64_t>(std::chrono::nanoseconds(now - sent).count()));
    }
    if (++st.have[seq] >= st.live() && seq == st.watermark) advance(st);
    return true;
}

// Connects to `ep` and joins the room: the chat's WebSocket, or a Socket.IO session in the
// default namespace. Throws if any of it fails.
asio::awaitable<ws_t> join(const run_state& st, const asio::ip::tcp::endpoint& ep) {
    auto ex = co_await asio::this_coro::executor;
    asio::ip::tcp::socket sock(ex);
    co_await sock.async_connect(ep, asio::use_awaitable);
    // The publisher's messages must leave at once; it costs the subscribers nothing.
    sock.set_option(asio::ip::tcp::no_delay(true));
    corows::options o;
    // Socket.IO does not compress by default (perMessageDeflate: false) and chat_server does
    // when asked: neither is asked, so both send the same bytes.
    o.deflate.enabled = false;
    ws_t ws(std::move(sock), o);
    std::string host = st.cfg.host + ":" + std::to_string(ep.port());
    if (st.cfg.proto == protocol::corows) {
        co_await ws.handshake(host, "/chat?room=bench");
        co_return ws;
    }
    co_await ws.handshake(host, "/socket.io/?EIO=4&transport=websocket");
    corows::message m;
    if (!co_await ws.read_message(m)) throw std::runtime_error("the Socket.IO node closed before its open packet");
    if (!m.is_text() || !m.text().starts_with("0{"))
        throw std::runtime_error("no Engine.IO open packet from the Socket.IO node: " +
                                 std::string(m.text().substr(0, 100)));
    co_await ws.write_text("40");
    for (;;) {
        if (!co_await ws.read_message(m)) throw std::runtime_error("the Socket.IO node closed before the connect packet");
        std::string_view t = m.text();
        if (t == "2") {
            co_await ws.write_text("3");
            continue;
        }
        if (t.starts_with("40")) co_return ws;
        throw std::runtime_error("the Socket.IO node refused the namespace: " + std::string(t.substr(0, 100)));
    }
}

asio::awaitable<void> subscriber_session(run_state& st, std::size_t id) {
    auto& sub = st.subs[id];
    bool joined = false;
    try {
        ws_t ws = co_await join(st, st.endpoints[id % st.endpoints.size()]);
        sub.ws = &ws;
        struct unlist {
            subscriber& sub;
            ~unlist() { sub.ws = nullptr; }
        } guard{sub};
        joined = true;
        ++st.joined;
        ++st.settled;
        st.wake.cancel();
        corows::message m;
        for (;;) {
            if (!co_await ws.read_message(m)) {
                fail(st, id, "the server closed a subscriber's connection");
                break;
            }
            std::string_view text;
            auto what = classify(st.cfg.proto, m, text);
            if (what == packet::ping) {
                co_await ws.write_text("3");
                continue;
            }
            if (what == packet::other) {
                fail(st, id, "a subscriber received a packet that is not a chat message: " +
                                 std::string(m.text().substr(0, 60)));
                ws.abort();
                break;
            }
            if (!receive(st, id, text, clock_type::now())) {
                ws.abort();
                break;
            }
        }
    } catch (const std::exception& e) {
        fail(st, id, e.what());
    }
    if (!joined) ++st.settled;
    ++st.finished;
    st.wake.cancel();
}

// Reads the publisher's own copies (its socket would fill otherwise, and a server would take
// it for a slow consumer) and answers Socket.IO's pings.
asio::awaitable<void> publisher_reader(run_state& st, ws_t& ws) {
    st.publisher_reading = true;
    try {
        corows::message m;
        while (co_await ws.read_message(m)) {
            std::string_view text;
            if (classify(st.cfg.proto, m, text) == packet::ping) co_await ws.write_text("3");
        }
        if (!st.stopping) st.report_error("the server closed the publisher's connection");
    } catch (const std::exception& e) {
        if (!st.stopping) st.report_error(std::string("publisher: ") + e.what());
    }
    st.publisher_reading = false;
    st.wake.cancel();
}

asio::awaitable<void> sleep_until(clock_type::time_point t) {
    asio::steady_timer timer(co_await asio::this_coro::executor, t);
    co_await timer.async_wait(asio::use_awaitable);
}

// Waits until `done()` holds; false if `progress()` (a count) stays the same for `limit`.
template <class Done, class Progress>
asio::awaitable<bool> wait_until(run_state& st, Done done, Progress progress, std::chrono::duration<double> limit) {
    auto span = std::chrono::duration_cast<clock_type::duration>(limit);
    auto seen = progress();
    auto deadline = clock_type::now() + span;
    while (!done()) {
        auto now = clock_type::now();
        if (progress() != seen) {
            seen = progress();
            deadline = now + span;
        }
        if (now >= deadline) co_return false;
        // Re-armed each time: cancel() only wakes a wait already pending.
        st.wake.expires_at(std::min(deadline, now + std::chrono::milliseconds(100)));
        std::error_code ec;
        co_await st.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return true;
}

// Connects the subscribers in waves: a burst of a thousand SYNs would overflow a node's
// listen backlog, and Socket.IO's handshakes take a while.
asio::awaitable<void> open_all(run_state& st) {
    auto ex = co_await asio::this_coro::executor;
    constexpr std::size_t wave = 64;
    for (std::size_t i = 0; i < st.cfg.subscribers; ++i) {
        asio::co_spawn(ex, subscriber_session(st, i), asio::detached);
        while (i + 1 - st.settled >= wave) co_await sleep_until(clock_type::now() + std::chrono::milliseconds(1));
    }
    co_await wait_until(
        st, [&] { return st.settled == st.cfg.subscribers; }, [&] { return st.settled; }, std::chrono::seconds(30));
}

// Queues `text` on the publisher's connection; false if it failed. No exception: the
// publisher's reader refers to the connection, so run() must not leave early.
asio::awaitable<bool> send(run_state& st, ws_t& pub, std::string_view text) {
    auto [ec] = co_await pub.write_message(corows::as_bytes(text), corows::message_kind::text, false, corows::use_tuple);
    if (ec) st.report_error("publisher: " + ec.message());
    co_return !ec;
}

asio::awaitable<bool> publish(run_state& st, ws_t& pub, std::uint64_t seq, clock_type::time_point stamp) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(stamp - st.origin).count();
    co_return co_await send(st, pub, frame(st.cfg.proto, make_text(seq, static_cast<std::uint64_t>(ns), st.cfg.size)));
}

asio::awaitable<void> run(run_state& st) {
    auto ex = co_await asio::this_coro::executor;
    ws_t pub = co_await join(st, st.endpoints[0]);
    asio::co_spawn(ex, publisher_reader(st, pub), asio::detached);
    co_await open_all(st);
    if (st.joined < st.cfg.subscribers)
        st.report_error("only " + std::to_string(st.joined) + " of " + std::to_string(st.cfg.subscribers) +
                        " subscribers joined");

    // Probes until every subscriber has one: then every node is subscribed to the backplane.
    auto all_probed = [&] { return st.probed >= st.live(); };
    auto probe_deadline = clock_type::now() + std::chrono::seconds(30);
    bool sending = true;
    while (!all_probed() && clock_type::now() < probe_deadline && sending) {
        sending = co_await send(st, pub, frame(st.cfg.proto, probe_text));
        co_await wait_until(st, all_probed, [] { return 0; }, std::chrono::milliseconds(50));
    }
    if (!all_probed())
        st.report_error("only " + std::to_string(st.probed) + " of " + std::to_string(st.live()) +
                        " subscribers received a probe in 30 s");
    // The probes' stragglers must not fall into the measurement.
    co_await sleep_until(clock_type::now() + std::chrono::milliseconds(100));

    bool stalled = false;
    const auto start = clock_type::now();
    for (std::uint64_t seq = 0; seq < st.cfg.messages && !stalled && sending; ++seq) {
        if (st.cfg.rate > 0) {
            auto due = start + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>(static_cast<double>(seq) / st.cfg.rate));
            if (clock_type::now() < due) co_await sleep_until(due);
            sending = co_await publish(st, pub, seq, due);
            continue;
        }
        stalled = !co_await wait_until(
            st, [&] { return seq < st.watermark + st.cfg.window; }, [&] { return st.deliveries; },
            std::chrono::duration<double>(st.cfg.stall));
        if (!stalled) sending = co_await publish(st, pub, seq, clock_type::now());
    }
    if (sending && !stalled)
        stalled = !co_await wait_until(
            st, [&] { return st.watermark == st.cfg.messages; }, [&] { return st.deliveries; },
            std::chrono::duration<double>(st.cfg.stall));
    if (stalled)
        st.report_error("no delivery for " + std::to_string(st.cfg.stall) + " s; every subscriber has " +
                        std::to_string(st.watermark) + " messages");
    for (std::size_t i = 0; i < st.subs.size(); ++i)
        if (!st.subs[i].failed && st.subs[i].next != st.cfg.messages)
            fail(st, i, "a subscriber received " + std::to_string(st.subs[i].next) + " of " +
                            std::to_string(st.cfg.messages) + " messages");

    // Close everything; the readers finish each close handshake.
    st.stopping = true;
    pub.start_close();
    for (auto& sub : st.subs)
        if (sub.ws) sub.ws->start_close();
    auto closed = [&] { return st.finished == st.cfg.subscribers && !st.publisher_reading; };
    if (!co_await wait_until(st, closed, [&] { return st.finished; }, std::chrono::seconds(5))) {
        pub.abort();
        for (auto& sub : st.subs)
            if (sub.ws) sub.ws->abort();
        co_await wait_until(st, closed, [] { return 0; }, std::chrono::seconds(2));
    }
}

void report(const run_state& st) {
    const auto& c = st.cfg;
    double secs = 0, rate = 0, server_us = 0, redis_us = 0, server_cpu = 0, redis_cpu = 0, load_cpu = 0;
    std::uint64_t n = 0;
    if (st.first && st.last) {
        secs = std::chrono::duration<double>(st.last->at - st.first->at).count();
        n = st.last->deliveries - st.first->deliveries;
        if (secs > 0 && n > 0) {
            rate = static_cast<double>(n) / secs;
            server_us = (st.last->servers - st.first->servers) * 1e6 / static_cast<double>(n);
            redis_us = (st.last->redis - st.first->redis) * 1e6 / static_cast<double>(n);
            server_cpu = (st.last->servers - st.first->servers) / secs;
            redis_cpu = (st.last->redis - st.first->redis) / secs;
            load_cpu = (st.last->own - st.first->own) / secs;
        }
    }
    char pace[64];
    if (c.rate > 0) std::snprintf(pace, sizeof pace, "rate=%.0f", c.rate);
    else std::snprintf(pace, sizeof pace, "window=%zu", c.window);
    char redis_figure[32] = "n/a";
    if (c.redis_pid) std::snprintf(redis_figure, sizeof redis_figure, "%.3f", redis_us);
    char server_figure[32] = "n/a";
    if (!c.server_pids.empty()) std::snprintf(server_figure, sizeof server_figure, "%.3f", server_us);
    char line[768];
    std::snprintf(line, sizeof line,
                  "bench=fanout peer=%s nodes=%zu subscribers=%zu messages=%zu size=%zu deliveries_per_s=%.0f "
                  "p50_ms=%.3f p99_ms=%.3f server_cpu_us_per_delivery=%s redis_cpu_us_per_delivery=%s %s "
                  "seconds=%.2f delivered=%llu server_cpu=%.2f redis_cpu=%.2f load_cpu=%.2f errors=%llu",
                  c.name.c_str(), c.ports.size(), c.subscribers, c.messages, c.size, rate,
                  st.latency.quantile(0.5) / 1e6, st.latency.quantile(0.99) / 1e6, server_figure, redis_figure, pace,
                  secs, static_cast<unsigned long long>(st.deliveries), server_cpu, redis_cpu, load_cpu,
                  static_cast<unsigned long long>(st.errors));
    std::cout << line << std::endl;
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings cfg = parse_args(argc, argv);
        raise_fd_limit();
        asio::io_context ctx(1);
        run_state st(cfg, ctx.get_executor());
        asio::ip::tcp::resolver resolver(ctx);
        for (auto port : cfg.ports)
            st.endpoints.push_back(*resolver.resolve(cfg.host, std::to_string(port)).begin());
        bool failed = false;
        asio::co_spawn(ctx, run(st), [&](std::exception_ptr e) {
            if (!e) return;
            failed = true;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "fanout_load: " << x.what() << '\n';
            }
        });
        ctx.run();
        if (failed) return 2;
        report(st);
        return st.errors ? 1 : 0;
    } catch (const std::exception& e) {
        std::cerr << "fanout_load: " << e.what() << '\n';
        return 2;
    }
}
