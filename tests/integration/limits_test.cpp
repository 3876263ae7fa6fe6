// SPDX-License-Identifier: BSL-1.0
// Faults and limits at scale: a 1 GiB decompression bomb, absurd frame lengths, slow and
// silent peers against a server's timeouts, peers that vanish at every awkward moment, a
// 1 GiB write to a peer that stops reading, 10,000 connections in waves, 100,000 messages
// that must all arrive, and a graceful stop with 1,000 open connections. Memory is measured
// from /proc/self; those bounds are skipped under AddressSanitizer (its allocator and
// quarantine make RSS meaningless) but the behaviour is still checked there.
#include "loopback.hpp"
#include "server_thread.hpp"

#include <corows/server.hpp>

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <mutex>
#include <thread>

namespace {

using namespace corows::test;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using corows::error;
using corows::message;
using corows::message_kind;
using corows::options;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

/// Drops the connection with an RST instead of a FIN (SO_LINGER with a zero timeout).
void reset_connection(tcp::socket& s) {
    corows::error_code ignored;
    s.set_option(asio::socket_base::linger(true, 0), ignored);
    s.close(ignored);
}

// ------------------------------------------------------------------------------ zlib by hand

// A raw (windowBits -15) zlib deflater, independent of corows' deflate_stream.
class raw_deflater {
public:
    explicit raw_deflater(int level, int strategy) {
        if (deflateInit2(&z_, level, Z_DEFLATED, -15, 8, strategy) != Z_OK) throw std::bad_alloc();
    }
    ~raw_deflater() { deflateEnd(&z_); }
    raw_deflater(const raw_deflater&) = delete;
    raw_deflater& operator=(const raw_deflater&) = delete;

    /// Compresses `in` and sync-flushes: the output ends on a byte boundary with 00 00 ff ff.
    bytes sync_flush(std::span<const std::uint8_t> in) {
        bytes out;
        std::array<std::uint8_t, 64 * 1024> chunk{};
        z_.next_in = const_cast<Bytef*>(in.data());
        z_.avail_in = static_cast<uInt>(in.size());
        do {
            z_.next_out = chunk.data();
            z_.avail_out = static_cast<uInt>(chunk.size());
            if (deflate(&z_, Z_SYNC_FLUSH) == Z_STREAM_ERROR) throw std::runtime_error("deflate failed");
            out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - z_.avail_out));
        } while (z_.avail_out == 0 || z_.avail_in != 0);
        return out;
    }

private:
    z_stream z_{};
};

// Counts what a raw inflater makes of `in` (plus the stripped tail), and whether it is all zeros.
std::size_t inflated_zeros(std::span<const std::uint8_t> in, bool& all_zero) {
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) throw std::bad_alloc();
    static const std::array<std::uint8_t, 4> tail{0x00, 0x00, 0xff, 0xff};
    std::vector<std::uint8_t> out(MiB);
    std::size_t total = 0;
    all_zero = true;
    for (auto part : {in, std::span<const std::uint8_t>(tail)}) {
        z.next_in = const_cast<Bytef*>(part.data());
        z.avail_in = static_cast<uInt>(part.size());
        int rc = Z_OK;
        do {
            z.next_out = out.data();
            z.avail_out = static_cast<uInt>(out.size());
            rc = inflate(&z, Z_SYNC_FLUSH);
            std::size_t n = out.size() - z.avail_out;
            total += n;
            if (std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), [](auto b) { return b != 0; }))
                all_zero = false;
        } while (rc == Z_OK && (z.avail_in != 0 || z.avail_out == 0));
    }
    inflateEnd(&z);
    return total;
}

// A gibibyte of zeros as RFC 7692 payload, built from zlib's own output: the first MiB
// compressed with a sync flush, then the next MiB, which (the window being all zeros and the
// output byte-aligned) compresses to the same bytes every time, so 1023 copies of it continue
// the stream. Both facts are checked, not assumed.
struct zero_bomb {
    bytes first;  // the first MiB
    bytes next;   // every later MiB
    static constexpr std::size_t mebibytes = 1024;

    zero_bomb() {
        raw_deflater d(9, Z_RLE);
        const bytes zeros(MiB, 0);
        first = d.sync_flush(zeros);
        next = d.sync_flush(zeros);
        bytes third = d.sync_flush(zeros);
        BOOST_REQUIRE_MESSAGE(third == next, "zlib's output for a MiB of zeros is not periodic");
        bool all_zero = false;
        bytes three = concat(first, next, third);
        three.resize(three.size() - 4);
        BOOST_REQUIRE_EQUAL(inflated_zeros(three, all_zero), 3 * MiB);
        BOOST_REQUIRE(all_zero);
    }
    /// The whole message payload: the 00 00 ff ff tail stripped (RFC 7692 §7.2.1).
    bytes message() const {
        bytes out = first;
        out.reserve(first.size() + (mebibytes - 1) * next.size());
        for (std::size_t i = 1; i < mebibytes; ++i) out.insert(out.end(), next.begin(), next.end());
        out.resize(out.size() - 4);
        return out;
    }
};

const std::string deflate_offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n";

// ------------------------------------------------------------------------------ message streams

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Message `i` of the stream seeded `seed`: mostly 0..8 KiB, one in a hundred up to 64 KiB, text
// or binary, of words drawn from a small vocabulary (valid UTF-8, and it compresses like
// chatty JSON does, so the deflate run exercises matches, not only literals).
message_kind fill_message(std::uint64_t seed, std::size_t i, bytes& out) {
    static constexpr std::array<std::string_view, 16> words{
        "id", "name", "value", "timestamp", "ok", "true", "false", "null",
        "{\"type\":", "\"update\",", "[1,2,3]", "price", "quantity", "Ünïcödé", "\u00e9", "42"};
    std::uint64_t r = splitmix(seed * 0x100000001b3ULL + i);
    std::size_t size = 0;
    if (r % 100 == 0) size = (r >> 8) % (64 * KiB + 1);
    else if (r % 100 < 40) size = (r >> 8) % 257;
    else size = (r >> 8) % (8 * KiB + 1);
    out.clear();
    std::uint64_t x = splitmix(r);
    for (unsigned bits = 0; out.size() < size; bits += 4) {
        if (bits == 64) {
            x = splitmix(x);
            bits = 0;
        }
        std::string_view w = words[(x >> bits) & 0xf];
        out.insert(out.end(), w.begin(), w.end());
        out.push_back(' ');
    }
    // Cut on an ASCII byte, so text stays valid UTF-8.
    std::size_t cut = size;
    while (cut > 0 && cut < out.size() && (out[cut] & 0xc0) == 0x80) --cut;
    out.resize(cut);
    return (r >> 7) % 2 ? message_kind::text : message_kind::binary;
}

// Follows a stream of unmasked server frames as it arrives, without keeping it: counts binary
// messages of `size` bytes whose bytes all equal (index * 7 + 1) and remembers the close code.
class frame_follower {
public:
    explicit frame_follower(std::size_t size) : size_(size) {}

    void feed(const std::uint8_t* p, std::size_t n) {
        while (n > 0 && !closed_) {
            if (!in_payload_) {
                head_.push_back(*p++);
                --n;
                if (head_.size() < 2) continue;
                std::size_t len7 = head_[1] & 0x7f;
                std::size_t need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
                if (head_.size() < need) continue;
                op_ = head_[0] & 0x0f;
                remaining_ = len7;
                if (len7 >= 126) {
                    remaining_ = 0;
                    for (std::size_t i = 2; i < need; ++i) remaining_ = remaining_ << 8 | head_[i];
                }
                length_ = remaining_;
                bad_bytes_ = 0;
                close_payload_.clear();
                head_.clear();
                in_payload_ = true;
                if (remaining_ == 0) end_frame();
                continue;
            }
            std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, remaining_));
            if (op_ == 0x2) {
                auto want = static_cast<std::uint8_t>(messages_ * 7 + 1);
                for (std::size_t k = 0; k < take; ++k) bad_bytes_ += p[k] != want;
            } else if (op_ == 0x8) {
                close_payload_.insert(close_payload_.end(), p, p + take);
            }
            p += take;
            n -= take;
            remaining_ -= take;
            if (remaining_ == 0) end_frame();
        }
    }

    std::size_t messages() const noexcept { return messages_; }
    std::size_t good() const noexcept { return good_; }
    bool closed() const noexcept { return closed_; }
    std::uint16_t close_code() const noexcept { return close_code_; }

private:
    void end_frame() {
        in_payload_ = false;
        if (op_ == 0x2) {
            if (length_ == size_ && bad_bytes_ == 0) ++good_;
            ++messages_;
        } else if (op_ == 0x8) {
            closed_ = true;
            if (close_payload_.size() >= 2)
                close_code_ = static_cast<std::uint16_t>(close_payload_[0] << 8 | close_payload_[1]);
        }
    }

    std::size_t size_;
    bytes head_;
    bool in_payload_ = false;
    std::uint8_t op_ = 0;
    std::uint64_t remaining_ = 0, length_ = 0;
    std::size_t bad_bytes_ = 0;
    std::size_t messages_ = 0, good_ = 0;
    bytes close_payload_;
    bool closed_ = false;
    std::uint16_t close_code_ = 0;
};

// ------------------------------------------------------------------------------ shared scenarios

// A raw client sends `frames` (already encoded, in one write, while it also reads) after an
// upgrade with `extra_lines`; the corows server's read must fail with `expected_ec`, and the
// client must get a close frame with `expected_code` within `answer_within`, then TCP's end.
// Returns the peak RSS growth in KiB during the exchange.
long refused(const options& o, const std::string& extra_lines, const bytes& frames, std::uint16_t expected_code,
             corows::error_code expected_ec, milliseconds answer_within) {
    long before = rss_kib();
    reset_peak_rss();
    long answered_ms = -1;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            message m;
            corows::error_code ec;
            do {
                ec = co_await corows::test::read_or_closed(ws, m);
            } while (!ec);
            BOOST_TEST(ec == expected_ec, "read failed with " << ec.message());
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), extra_lines);
            p.set_timeout(milliseconds(5000));
            auto t0 = clock_type::now();
            // The server may close while the frames are still going out: send and read at once.
            auto sent_and_closed = co_await (p.try_send(frames) && expect_close(p));
            corows::error_code send_ec = std::get<0>(sent_and_closed);
            close_info c = std::get<1>(sent_and_closed);
            answered_ms = static_cast<long>(ms_since(t0));
            BOOST_TEST(c.code == expected_code);
            BOOST_TEST(!c.reason.empty(), "the reason names the violation");
            BOOST_TEST_MESSAGE("  close " << c.code << " (" << c.reason << ") after " << answered_ms
                               << " ms; sending " << (send_ec ? send_ec.message() : "completed"));
            // Whatever of our frames the server had not read when it closed may turn its FIN
            // into an RST: both end the stream.
            std::string rest = co_await p.read_to_end();
            BOOST_TEST(p.saw_eof(), "TCP not closed: " << p.last_error().message());
        },
        milliseconds(60'000));
    BOOST_TEST(answered_ms >= 0);
    BOOST_TEST(answered_ms < answer_within.count());
    return peak_rss_kib() - before;
}

} // namespace

BOOST_AUTO_TEST_SUITE(limits)

// ------------------------------------------------------------------------------ decompression bomb

BOOST_AUTO_TEST_CASE(decompression_bomb_of_one_gib_gets_1009_with_bounded_memory) {
    large_blocks_return_to_the_kernel();
    const zero_bomb bomb;
    const bytes whole = bomb.message();
    BOOST_TEST_MESSAGE("1 GiB of zeros deflates to " << whole.size() << " bytes (first MiB " << bomb.first.size()
                       << ", each later MiB " << bomb.next.size() << ")");
    BOOST_TEST(whole.size() < 1100 * KiB);

    options o;
    o.max_message_size = 16 * MiB;
    o.deflate.enabled = true;
    const long limit_kib = static_cast<long>(o.max_message_size / KiB);

    // One frame of about 1 MiB that inflates to 1 GiB.
    const bytes one_frame = encode(raw_frame{0x2, true, 4, true, whole});
    // The same message as 1024 fragments of about 1 KiB, each inflating to 1 MiB.
    const bytes fragments = [&] {
        bytes all;
        for (std::size_t i = 0; i < zero_bomb::mebibytes; ++i) {
            bool last = i + 1 == zero_bomb::mebibytes;
            bytes payload = i == 0 ? bomb.first : bomb.next;
            if (last) payload.resize(payload.size() - 4);
            bytes f = encode(raw_frame{static_cast<std::uint8_t>(i == 0 ? 0x2 : 0x0), last,
                                       static_cast<std::uint8_t>(i == 0 ? 4 : 0), true, payload});
            all.insert(all.end(), f.begin(), f.end());
        }
        return all;
    }();

    for (const bytes* frames : {&one_frame, &fragments}) {
        const char* name = frames == &one_frame ? "one 1 MiB frame" : "1024 fragments of 1 KiB";
        BOOST_TEST_MESSAGE(name << ":");
        long growth = refused(o, deflate_offer, *frames, 1009, err(error::message_too_big), milliseconds(10'000));
        BOOST_TEST_MESSAGE("  peak RSS growth " << growth << " KiB (limit " << limit_kib << " KiB)");
        if constexpr (memory_is_measurable) {
            // The message buffer grows to the limit and no further (inflate_stream probes for
            // the byte past it instead of doubling a full buffer). Its last doubling copies
            // half the limit into a fresh buffer, so both live for a moment (all of it resident
            // when meson's MALLOC_PERTURB_ touches every page); the rest is the 1 MiB frame.
            BOOST_TEST(growth < limit_kib * 3 / 2 + 4 * 1024L, name << ": inflation was not stopped at the limit");
        }
    }
}

// ------------------------------------------------------------------------------ absurd lengths

BOOST_AUTO_TEST_CASE(frame_lengths_of_2_63_and_more_are_refused_from_the_header) {
    // Written by hand, not with corows' encoder: 127, then the 64-bit length, then a key.
    auto header = [](std::uint8_t first, std::uint64_t length) {
        bytes h{first, 0x80 | 127};
        for (int i = 7; i >= 0; --i) h.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
        for (std::uint8_t k : {0x11, 0x22, 0x33, 0x44}) h.push_back(k);
        return h;
    };
    const std::uint64_t max63 = 0x7fff'ffff'ffff'ffffULL;
    options plain;
    options deflating;
    deflating.deflate.enabled = true;
    // 2^63 - 1 bytes: a legal length, far over any limit: 1009 at once, no payload awaited.
    refused(plain, "", header(0x82, max63), 1009, err(error::frame_too_big), milliseconds(3000));
    refused(plain, "", header(0x81, max63), 1009, err(error::frame_too_big), milliseconds(3000));
    refused(deflating, deflate_offer, header(0xC2, max63), 1009, err(error::frame_too_big), milliseconds(3000));
    // A fragment continuing a message with 2^63 - 1 more bytes.
    refused(plain, "", concat(client_frame(0x2, "start", false), header(0x80, max63)), 1009,
            err(error::frame_too_big), milliseconds(3000));
    // The top bit set (RFC 6455 §5.2: it must be 0): a protocol error, 1002.
    for (std::uint64_t len : {std::uint64_t{1} << 63, ~std::uint64_t{0}, (std::uint64_t{1} << 63) | 5})
        refused(plain, "", header(0x82, len), 1002, err(error::bad_length), milliseconds(3000));

    // A corows client facing a server that announces 2^63 - 1 bytes answers (masked) 1009.
    for (std::uint64_t len : {max63, ~std::uint64_t{0}}) {
        std::uint16_t expected = len == max63 ? 1009 : 1002;
        run_raw_server(options{},
            [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
                co_await ws.handshake(l.host());
                message m;
                corows::error_code ec;
                ec = co_await corows::test::read_or_closed(ws, m);
                BOOST_TEST(ec == err(len == max63 ? error::frame_too_big : error::bad_length));
            },
            [&](raw_peer& p) -> asio::awaitable<void> {
                std::string req = co_await p.read_request();
                co_await p.answer_101(req, "");
                bytes h;
                h.push_back(0x82);
                h.push_back(127);
                for (int i = 7; i >= 0; --i) h.push_back(static_cast<std::uint8_t>(len >> (8 * i)));
                co_await p.send(h);
                auto f = co_await p.read_frame();
                BOOST_REQUIRE(f.has_value());
                BOOST_TEST(f->op == 0x8);
                BOOST_TEST(f->masked);
                BOOST_TEST(parse_close(*f).code == expected);
                co_await p.read_to_end();
                BOOST_TEST(p.saw_eof());
            });
    }
}

// ------------------------------------------------------------------------------ slow and silent peers

BOOST_AUTO_TEST_CASE(slowloris_silence_and_unanswered_close_are_cut_by_the_server_timeouts) {
    // Each timeout differs, so a connection cut by the wrong one shows in the timing.
    constexpr auto handshake_timeout = 1500ms, idle_timeout = 2500ms, close_timeout = 700ms;
    constexpr auto margin = 1500ms; // a loaded 2-core machine may be late, never early
    // The server starts the idle and close clocks a moment before the client can see the
    // handshake or the close frame arrive.
    constexpr auto skew = 150ms;
    corows::server_options so;
    so.connection.handshake_timeout = handshake_timeout;
    so.connection.idle_timeout = idle_timeout;
    so.connection.close_timeout = close_timeout;
    std::atomic<int> timeouts{0};
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        message m;
        corows::error_code ec;
        for (;;) {
            ec = co_await corows::test::read_or_closed(ws, m);
            if (ec) break;
            if (m.text() == "close me") {
                std::tie(ec) = co_await ws.close(1000, "bye", corows::use_tuple);
                break;
            }
            std::tie(ec) = co_await ws.write_message(m, corows::use_tuple);
            if (ec) break;
        }
        if (ec == error::timeout) ++timeouts;
    });
    const unsigned short port = st.port();
    long slowloris_ms = -1, slowloris_bytes = 0, silent_ms = -1, close_ms = -1;
    std::size_t ok = run_clients(4, [&](std::size_t which) -> asio::awaitable<void> {
        if (which == 0) {
            // Slowloris: a valid request, one byte every 300 ms; it would take a minute.
            raw_peer p = co_await connect_raw_to(port);
            auto t0 = clock_type::now();
            const std::string req = "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                    "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
            bool ended = false;
            auto trickle = [&]() -> asio::awaitable<void> {
                for (std::size_t i = 0; i < req.size() && !ended; ++i) {
                    corows::error_code ec = co_await p.try_send(corows::as_bytes(std::string_view(req).substr(i, 1)));
                    if (ec) break;
                    ++slowloris_bytes;
                    co_await sleep(300ms);
                }
            };
            auto watch = [&]() -> asio::awaitable<void> {
                p.set_timeout(10'000ms);
                std::string got = co_await p.read_to_end();
                slowloris_ms = static_cast<long>(ms_since(t0));
                ended = true;
                BOOST_TEST(got.empty(), "the server answered a request it never got whole: " << got);
                BOOST_TEST(p.saw_eof());
            };
            co_await (trickle() && watch());
        } else if (which == 1) {
            // Silent after the handshake: cut at the idle timeout, without a close frame.
            raw_peer p = co_await connect_raw_to(port);
            co_await p.upgrade("127.0.0.1:" + std::to_string(port), "");
            auto t0 = clock_type::now();
            p.set_timeout(10'000ms);
            bool eof = co_await expect_eof(p);
            silent_ms = static_cast<long>(ms_since(t0));
            BOOST_TEST(eof);
        } else if (which == 2) {
            // Asks the server to close, then never answers its close frame.
            raw_peer p = co_await connect_raw_to(port);
            co_await p.upgrade("127.0.0.1:" + std::to_string(port), "");
            co_await p.send(client_frame(0x1, "close me"));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            auto t0 = clock_type::now();
            p.set_timeout(10'000ms);
            bool eof = co_await expect_eof(p);
            close_ms = static_cast<long>(ms_since(t0));
            BOOST_TEST(eof);
        } else {
            // Meanwhile a well-behaved client keeps talking, within the idle timeout.
            tcp_ws ws = co_await connect_ws_to(port, options{});
            for (int i = 0; i < 12; ++i) {
                std::string text = "tick " + std::to_string(i);
                co_await ws.write_text(text);
                auto m = co_await ws.read_message();
                if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
                co_await sleep(250ms);
            }
            co_await ws.close(1000, "");
        }
    }, 30'000ms);
    BOOST_TEST(ok == 4u);
    BOOST_TEST_MESSAGE("slowloris cut after " << slowloris_ms << " ms and " << slowloris_bytes
                       << " bytes (handshake timeout " << handshake_timeout.count() << " ms)");
    BOOST_TEST_MESSAGE("silent peer cut after " << silent_ms << " ms (idle timeout " << idle_timeout.count() << " ms)");
    BOOST_TEST_MESSAGE("unanswered close cut after " << close_ms << " ms (close timeout " << close_timeout.count()
                       << " ms)");
    BOOST_TEST(slowloris_ms >= handshake_timeout.count() - 20);
    BOOST_TEST(slowloris_ms < (handshake_timeout + margin).count());
    BOOST_TEST(silent_ms >= (idle_timeout - skew).count());
    BOOST_TEST(silent_ms < (idle_timeout + margin).count());
    BOOST_TEST(close_ms >= (close_timeout - skew).count());
    BOOST_TEST(close_ms < (close_timeout + margin).count());
    // The silent peer's handler saw a timeout; the others ended otherwise.
    BOOST_TEST(wait_until([&] { return timeouts.load() >= 1; }, 2000ms));
}

// ------------------------------------------------------------------------------ vanishing peers

BOOST_AUTO_TEST_CASE(peers_vanishing_at_every_point_leave_the_server_serving) {
    const bytes big(64 * MiB, 0x42);
    std::mutex mu;
    std::vector<corows::error_code> results; // how each handler's loop ended, in order
    std::atomic<int> started{0}, finished{0}, escaped{0};
    corows::server_options so;
    so.connection.deflate.enabled = true;
    std::string escaped_what;
    so.on_error = [&](std::exception_ptr e) {
        std::lock_guard lock(mu);
        if (escaped++ == 0) escaped_what = describe(e);
    };
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        ++started;
        message m;
        corows::error_code ec;
        for (;;) {
            ec = co_await corows::test::read_or_closed(ws, m);
            if (ec) break;
            if (m.text() == "send 64 MiB") {
                std::tie(ec) = co_await ws.write_message(big, message_kind::binary, false, corows::use_tuple);
                if (ec) break;
                std::tie(ec) = co_await ws.flush(corows::use_tuple);
                if (ec) break;
                continue;
            }
            std::tie(ec) = co_await ws.write_message(m, corows::use_tuple);
            if (ec) break;
        }
        {
            std::lock_guard lock(mu);
            results.push_back(ec);
        }
        ++finished;
    });
    const unsigned short port = st.port();
    const std::string host = st.host();

    // A compressed message cut in the middle of its second fragment.
    bytes text(256 * KiB);
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>('a' + (i * i / 7) % 26);
    raw_deflater d(6, Z_DEFAULT_STRATEGY);
    bytes compressed = d.sync_flush(text);
    compressed.resize(compressed.size() - 4);
    const std::size_t half = compressed.size() / 2;
    const bytes first_fragment =
        encode(raw_frame{0x1, false, 4, true, bytes(compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(half))});
    const bytes second_head_and_some = encode_announcing(
        raw_frame{0x0, true, 0, true,
                  bytes(compressed.begin() + static_cast<std::ptrdiff_t>(half),
                        compressed.begin() + static_cast<std::ptrdiff_t>(half + (compressed.size() - half) / 2))},
        compressed.size() - half);

    // Built here, not inside the coroutines: GCC 12 destroys an aggregate temporary of a
    // co_await expression twice.
    const bytes part_of_a_frame = encode_announcing(raw_frame{0x2, true, 0, true, bytes(300, 1)}, 1000);
    enum class point { handshake, frame, compressed_message, our_large_write };
    struct scenario {
        point at;
        const char* name;
    };
    const std::array<scenario, 4> scenarios{{{point::handshake, "mid-handshake"},
                                            {point::frame, "mid-frame"},
                                            {point::compressed_message, "mid-compressed-message"},
                                            {point::our_large_write, "during our 64 MiB write"}}};
    int kills = 0;
    for (const scenario& sc : scenarios) {
        for (bool rst : {false, true}) {
            const int started_before = started.load();
            std::size_t read_back = 0;
            std::size_t ok = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
                raw_peer p = co_await connect_raw_to(port);
                switch (sc.at) {
                case point::handshake:
                    co_await p.send_text("GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConn");
                    break;
                case point::frame:
                    co_await p.upgrade(host, "");
                    co_await p.send(part_of_a_frame);
                    break;
                case point::compressed_message:
                    co_await p.upgrade(host, deflate_offer);
                    co_await p.send(first_fragment);
                    co_await p.send(second_head_and_some);
                    break;
                case point::our_large_write:
                    co_await p.upgrade(host, "");
                    co_await p.send(client_frame(0x1, "send 64 MiB"));
                    // Take a MiB of it, so the server is surely in the middle of the write.
                    co_await p.need(MiB);
                    read_back = p.buffered().size();
                    break;
                }
                // Let the server take in what was sent before the peer goes.
                co_await sleep(50ms);
                if (rst) reset_connection(p.socket());
                else p.socket().close();
            }, 20'000ms);
            BOOST_TEST(ok == 1u, sc.name);
            ++kills;
            if (sc.at != point::handshake) {
                BOOST_TEST(wait_until([&] { return finished.load() == started.load(); }, 10'000ms),
                           sc.name << (rst ? " (RST)" : " (FIN)") << ": the handler did not end");
                BOOST_TEST(started.load() == started_before + 1);
                std::lock_guard lock(mu);
                BOOST_REQUIRE(!results.empty());
                corows::error_code ec = results.back();
                BOOST_TEST_MESSAGE(sc.name << (rst ? " (RST)" : " (FIN)") << ": handler ended with " << ec.category().name()
                                   << ":" << ec.value() << " " << ec.message()
                                   << (sc.at == point::our_large_write ? " after the peer read " + std::to_string(read_back) + " bytes" : ""));
                BOOST_TEST(static_cast<bool>(ec), sc.name);
                if (sc.at != point::our_large_write) {
                    BOOST_TEST(ec == err(error::closed), sc.name << ": " << ec.message());
                }
            }
            // Another client is served normally.
            std::size_t served = run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
                co_await echo_check(port, std::string("after ") + sc.name);
            }, 10'000ms);
            BOOST_TEST(served == 1u, "not served after a peer vanished " << sc.name);
        }
    }
    BOOST_TEST(wait_until([&] { return finished.load() == started.load(); }, 10'000ms));
    std::lock_guard lock(mu);
    BOOST_TEST(escaped.load() == 0, "an exception escaped a handler: " << escaped_what);
    BOOST_TEST(kills == 8);
}

BOOST_AUTO_TEST_CASE(servers_vanishing_fail_client_operations_with_error_codes) {
    // A corows client writing 64 MiB (queued and masked) to a server that resets after 1 MiB.
    for (bool rst : {false, true}) {
        corows::error_code write_ec, flush_ec, read_after;
        const bytes big(64 * MiB, 0x17);
        run_raw_server(options{},
            [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
                co_await ws.handshake(l.host());
                std::tie(write_ec) = co_await ws.write_message(big, message_kind::binary, false, corows::use_tuple);
                if (!write_ec) std::tie(flush_ec) = co_await ws.flush(corows::use_tuple);
                BOOST_TEST((write_ec || flush_ec), "the write to a vanished server succeeded");
                // The connection is unusable now, and says so at once.
                message m;
                read_after = co_await corows::test::read_or_closed(ws, m);
                BOOST_TEST(static_cast<bool>(read_after));
            },
            [&](raw_peer& p) -> asio::awaitable<void> {
                std::string req = co_await p.read_request();
                co_await p.answer_101(req, "");
                co_await p.need(MiB);
                if (rst) reset_connection(p.socket());
                else p.socket().close();
            },
            milliseconds(20'000));
        BOOST_TEST_MESSAGE((rst ? "RST" : "FIN") << " during a client's 64 MiB write: write "
                           << write_ec.message() << ", flush " << flush_ec.message() << ", then read "
                           << read_after.message());
    }
    // A corows client in the middle of reading a frame when the server goes.
    const bytes part_of_a_frame = encode_announcing(raw_frame{0x2, true, 0, false, bytes(5000, 3)}, 100'000);
    for (bool rst : {false, true}) {
        corows::error_code read_ec;
        std::uint16_t code = 0;
        run_raw_server(options{},
            [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
                co_await ws.handshake(l.host());
                message m;
                read_ec = co_await corows::test::read_or_closed(ws, m);
                code = ws.close_code();
            },
            [&](raw_peer& p) -> asio::awaitable<void> {
                std::string req = co_await p.read_request();
                co_await p.answer_101(req, "");
                co_await p.send(part_of_a_frame);
                co_await sleep(50ms);
                if (rst) reset_connection(p.socket());
                else p.socket().close();
            });
        BOOST_TEST(read_ec == err(error::closed), read_ec.message());
        BOOST_TEST(code == 1006);
    }
}

// ------------------------------------------------------------------------------ backpressure

// 1 GiB in 1 MiB messages to a peer that reads nothing for a while: the writer stalls, the
// process does not grow with what is written, and then every byte arrives.
void gibibyte_to_a_stalled_reader(bool direct) {
    constexpr std::size_t message_size = MiB, count = 1024;
    options o;
    o.write_queue_limit = MiB;
    if (!direct) o.direct_write_threshold = std::numeric_limits<std::size_t>::max();
    std::size_t written = 0, max_queued = 0, stalled_at = 0;
    auto t0 = clock_type::now();
    long drain_ms = 0;
    frame_follower follower(message_size);
    std::vector<std::uint8_t> chunk(256 * KiB);
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            bytes payload(message_size);
            for (std::size_t i = 0; i < count; ++i) {
                std::fill(payload.begin(), payload.end(), static_cast<std::uint8_t>(i * 7 + 1));
                co_await ws.write_binary(payload);
                ++written;
                max_queued = std::max(max_queued, ws.queued_bytes());
            }
            co_await ws.close(1000, "");
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await sleep(500ms);
            stalled_at = written;
            co_await sleep(300ms);
            BOOST_TEST(written == stalled_at, "the writer kept going while nobody read");
            BOOST_TEST(written < count / 4);
            auto d0 = clock_type::now();
            // What read_head() read past the 101 belongs to the frames.
            follower.feed(reinterpret_cast<const std::uint8_t*>(p.buffered().data()), p.buffered().size());
            p.buffered().clear();
            while (!follower.closed()) {
                corows::error_code ec;
                std::size_t n = co_await p.socket().async_read_some(asio::buffer(chunk),
                                                                    asio::redirect_error(asio::use_awaitable, ec));
                if (ec) break;
                follower.feed(chunk.data(), n);
            }
            drain_ms = static_cast<long>(ms_since(d0));
            BOOST_REQUIRE(follower.closed());
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await p.read_to_end();
            BOOST_TEST(p.saw_eof());
        },
        milliseconds(120'000));
    BOOST_TEST(written == count);
    BOOST_TEST(follower.messages() == count);
    BOOST_TEST(follower.good() == count, "messages with a wrong size or byte");
    BOOST_TEST(follower.close_code() == 1000);
    BOOST_TEST(max_queued <= o.write_queue_limit + message_size + 16);
    BOOST_TEST_MESSAGE((direct ? "direct" : "queued") << " path: writer stalled after " << stalled_at << " MiB, max queue "
                       << max_queued / KiB << " KiB; drained 1 GiB in " << drain_ms << " ms; total "
                       << ms_since(t0) << " ms");
}

BOOST_AUTO_TEST_CASE(one_gib_to_a_reader_that_stalls_stays_bounded) {
    large_blocks_return_to_the_kernel();
    for (bool direct : {false, true}) {
        long before = rss_kib();
        reset_peak_rss();
        gibibyte_to_a_stalled_reader(direct);
        long growth = peak_rss_kib() - before;
        // The queue (1 MiB over its limit at most), the writer's 1 MiB message, the reader's
        // buffers; socket buffers are the kernel's, not ours.
        const long bound = static_cast<long>((MiB + MiB + MiB) / KiB) + 8 * 1024L;
        BOOST_TEST_MESSAGE("  peak RSS growth " << growth << " KiB (bound " << bound << " KiB)");
        if constexpr (memory_is_measurable) BOOST_TEST(growth < bound);
    }
}

// ------------------------------------------------------------------------------ churn

// On two threads: ThreadSanitizer runs it too (label threads).
BOOST_AUTO_TEST_CASE(ten_thousand_connections_in_waves_return_memory_and_descriptors,
                     *boost::unit_test::label("threads")) {
    large_blocks_return_to_the_kernel();
    constexpr std::size_t waves = 10, per_wave = 1000;
    const std::size_t fd_limit = raise_fd_limit();
    BOOST_REQUIRE_MESSAGE(fd_limit >= 2 * per_wave + 100, "RLIMIT_NOFILE too low: " << fd_limit);
    std::atomic<int> active{0}, handled{0};
    corows::server_options so;
    so.threads = 2;
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        ++active;
        message m;
        corows::error_code ec;
        for (;;) {
            ec = co_await corows::test::read_or_closed(ws, m);
            if (ec) break;
            std::tie(ec) = co_await ws.write_message(m, corows::use_tuple);
            if (ec) break;
        }
        --active;
        ++handled;
    });
    const unsigned short port = st.port();
    const std::size_t fds_before = open_fds();
    long rss_after_wave2 = 0, rss_last = 0;
    auto t0 = clock_type::now();
    for (std::size_t w = 0; w < waves; ++w) {
        auto tw = clock_type::now();
        std::size_t ok = run_clients(per_wave, [&](std::size_t i) -> asio::awaitable<void> {
            tcp_ws ws = co_await connect_ws_to(port, options{});
            std::string text = "wave " + std::to_string(w) + " client " + std::to_string(i);
            co_await ws.write_text(text);
            auto m = co_await ws.read_message();
            if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
            co_await ws.close(1000, "");
            if (ws.close_code() != 1000) throw std::runtime_error("close not answered");
        }, 60'000ms);
        BOOST_TEST(ok == per_wave, "wave " << w);
        BOOST_TEST(wait_until([&] { return active.load() == 0; }, 10'000ms), "wave " << w << ": handlers still running");
        bool fds_back = wait_until([&] { return open_fds() <= fds_before; }, 5000ms);
        BOOST_TEST(fds_back, "wave " << w << ": " << open_fds() << " descriptors open, " << fds_before << " before");
        // Freed blocks are handed back first: what stays resident is what is still held, not
        // how the heap happens to be fragmented (which moved this figure by up to 4 MiB).
        trim_heap();
        rss_last = rss_kib();
        if (w == 1) rss_after_wave2 = rss_last;
        BOOST_TEST_MESSAGE("wave " << w + 1 << ": " << ok << " connections in " << ms_since(tw) << " ms, RSS "
                           << rss_last << " KiB, " << open_fds() << " fds");
    }
    BOOST_TEST(handled.load() == static_cast<int>(waves * per_wave));
    BOOST_TEST(open_fds() == fds_before);
    BOOST_TEST_MESSAGE(waves * per_wave << " connections in " << ms_since(t0) << " ms; RSS after wave 2 "
                       << rss_after_wave2 << " KiB, after wave " << waves << " " << rss_last << " KiB ("
                       << rss_last - rss_after_wave2 << " KiB)");
    if constexpr (memory_is_measurable) BOOST_TEST(rss_last - rss_after_wave2 < 4 * 1024L);
}

// ------------------------------------------------------------------------------ no loss

// `count` messages each way, written back to back by both ends at once, then a clean close:
// every one arrives, in order, byte for byte, with its kind. Under a sanitizer (ten times
// slower) a third of them: the full count there took 100 to 250 s on a loaded machine.
void no_loss(bool deflate) {
    constexpr std::size_t count = COROWS_TEST_SANITIZED ? 30'000 : 100'000;
    options o;
    o.deflate.enabled = deflate;
    o.max_message_size = 128 * KiB;
    std::size_t server_got = 0, server_bad = 0, client_got = 0, client_bad = 0;
    std::size_t bytes_up = 0, bytes_down = 0;
    bool compressed_seen = false;
    auto writer = [](tcp_ws& ws, std::uint64_t seed, std::size_t& total) -> asio::awaitable<void> {
        bytes payload;
        for (std::size_t i = 0; i < count; ++i) {
            message_kind kind = fill_message(seed, i, payload);
            co_await ws.write_message(payload, kind, true);
            total += payload.size();
        }
    };
    auto reader = [](tcp_ws& ws, std::uint64_t seed, std::size_t& got, std::size_t& bad) -> asio::awaitable<void> {
        message m;
        bytes expected;
        for (std::size_t i = 0; i < count; ++i) {
            bool more = co_await ws.read_message(m);
            if (!more) break;
            message_kind kind = fill_message(seed, i, expected);
            ++got;
            auto data = m.data();
            if (m.kind() != kind || data.size() != expected.size() ||
                !std::equal(data.begin(), data.end(), expected.begin()))
                ++bad;
        }
    };
    auto t0 = clock_type::now();
    run_pair(o, o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            compressed_seen = ws.deflate().has_value();
            co_await (writer(ws, 2, bytes_down) && reader(ws, 1, server_got, server_bad));
            message m;
            bool more = co_await ws.read_message(m);
            BOOST_TEST(!more, "a message after the last one");
            BOOST_TEST(ws.close_code() == 1000);
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await (writer(ws, 1, bytes_up) && reader(ws, 2, client_got, client_bad));
            co_await ws.close(1000, "");
            BOOST_TEST(ws.close_code() == 1000);
        },
        std::chrono::seconds(240));
    BOOST_TEST(compressed_seen == deflate);
    BOOST_TEST(server_got == count);
    BOOST_TEST(server_bad == 0u);
    BOOST_TEST(client_got == count);
    BOOST_TEST(client_bad == 0u);
    BOOST_TEST_MESSAGE((deflate ? "with" : "without") << " permessage-deflate: " << count << " messages each way ("
                       << bytes_up / KiB << " KiB up, " << bytes_down / KiB << " KiB down) in " << ms_since(t0)
                       << " ms");
}

BOOST_AUTO_TEST_CASE(hundred_thousand_messages_each_way_arrive_intact) { no_loss(false); }

BOOST_AUTO_TEST_CASE(hundred_thousand_compressed_messages_each_way_arrive_intact) { no_loss(true); }

// ------------------------------------------------------------------------------ graceful stop

// On two threads: ThreadSanitizer runs it too (label threads).
BOOST_AUTO_TEST_CASE(graceful_stop_with_a_thousand_open_connections, *boost::unit_test::label("threads")) {
    constexpr std::size_t clients = 1000;
    constexpr auto grace = 5000ms;
    const std::size_t fd_limit = raise_fd_limit();
    BOOST_REQUIRE_MESSAGE(fd_limit >= 2 * clients + 100, "RLIMIT_NOFILE too low: " << fd_limit);
    corows::server_options so;
    so.threads = 2;
    // What is tested is the stop, not admission: on a slow run (ThreadSanitizer, wine) a
    // thousand honest handshakes outlast a second and past 512 in progress would be shed.
    so.max_handshakes = 0;
    server_thread st(so, [](tcp_ws& ws) -> asio::awaitable<void> {
        message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    });
    const unsigned short port = st.port();
    asio::io_context ctx;
    std::size_t connected = 0, saw_1001 = 0, finished = 0;
    std::string first_error;
    for (std::size_t i = 0; i < clients; ++i) {
        asio::co_spawn(ctx, [&, i]() -> asio::awaitable<void> {
            tcp_ws ws = co_await connect_ws_to(port, options{});
            std::string text = "client " + std::to_string(i);
            co_await ws.write_text(text);
            auto m = co_await ws.read_message();
            if (!m || m->text() != text) throw std::runtime_error("no echo");
            ++connected;
            auto end = co_await ws.read_message();
            if (end) throw std::runtime_error("a message instead of the close");
            if (ws.close_code() == 1001 && ws.close_reason() == "server shutting down") ++saw_1001;
        }, [&](std::exception_ptr e) {
            ++finished;
            if (e && first_error.empty()) first_error = describe(e);
        });
    }
    auto deadline = clock_type::now() + 60s;
    while (connected + finished < clients && clock_type::now() < deadline) ctx.run_for(10ms);
    BOOST_REQUIRE_MESSAGE(connected == clients, connected << " connected; " << first_error);
    auto stop_at = clock_type::now();
    st.server().stop(grace);
    while (finished < clients && clock_type::now() < stop_at + grace + 5s) ctx.run_for(10ms);
    long clients_done_ms = static_cast<long>(ms_since(stop_at));
    BOOST_TEST(st.wait_returned(grace + 2000ms), "run() did not return");
    auto took = std::chrono::duration_cast<milliseconds>(st.returned_at() - stop_at);
    BOOST_TEST(first_error.empty(), first_error);
    BOOST_TEST(finished == clients);
    BOOST_TEST(saw_1001 == clients);
    BOOST_TEST(took.count() < grace.count(), "run() returned only at the deadline: " << took.count() << " ms");
    BOOST_TEST_MESSAGE("stop of " << clients << " connections: every client closed within " << clients_done_ms
                       << " ms, run() returned after " << took.count() << " ms (grace " << grace.count() << " ms)");
}

BOOST_AUTO_TEST_SUITE_END()
