// SPDX-License-Identifier: BSL-1.0
// A whole server connection, corows::websocket<memory_stream>, fed arbitrary bytes: accept(),
// then read_message() and echo each message until the connection ends, optionally with a
// second coroutine writing its own messages at the same time, pings, a server-initiated
// close, small reads, short writes and a failing transport. Everything runs on one io_context
// per input and must finish when the input runs out. No timer is armed (the handshake, close,
// idle, keepalive and send timeouts are off): a connection that fails to end shows up at once
// as a coroutine still suspended after run(), not as a run that waits for seconds.
//
// Input: four option bytes (see `plan`), then what the client sends. Beyond "no crash, no
// leak, no UB", it checks what a client would see: if the handshake failed, nothing or an
// HTTP refusal (status >= 400) with exactly its body; if it succeeded, a 101 and then valid
// unmasked frames that a client's message_reader reads as the echoes and the second writer's
// messages, each in order, interleaved; nothing after the server's close frame; all that was
// queued before a close frame; and a frame cut short only when the input ended mid-write.
#include "memory_stream.hpp"

#include <corows/message.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/permessage_deflate.hpp>
#include <corows/websocket.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using corows::test::memory_channel;
using corows::test::memory_stream;
using ws_type = corows::websocket<memory_stream>;

void check(bool ok) {
    if (!ok) std::abort();
}

constexpr std::size_t option_bytes = 4;

// What the option bytes select.
//   byte 0: bit 0 permessage-deflate on, bit 1 server_no_context_takeover, bit 2
//           client_no_context_takeover, bit 3 server window 9 bits, bits 4-5 message size
//           limit, bit 6 a ping after each echo, bit 7 the server closes after two messages
//   byte 1: 0: reads take all they can; n: read sizes cycle through 8 values in 1..n
//   byte 2: bits 0-1 bytes per write_some, bits 2-3 outgoing frame size, bit 4 direct
//           writes from 32 bytes, bit 5 a 64-byte write queue limit, bit 6 writes fail after
//           byte 3 * 8 bytes, bit 7 compress messages of any size
//   byte 3: unless writes fail: bits 0-2 how many messages a second coroutine writes while
//           the first one echoes, bits 3-4 their size, bit 5 whether they may be compressed
struct plan {
    corows::options opts;
    std::vector<std::size_t> read_sizes;
    std::size_t write_chunk = 0;
    std::size_t write_limit = SIZE_MAX;
    bool ping = false;
    std::size_t close_after = 0; // 0: never close first
    std::size_t pushes = 0;      // messages the second writer sends
    std::size_t push_size = 0;
    bool push_compress = false;

    explicit plan(const std::uint8_t* o) {
        const std::uint8_t a = o[0], b = o[1], c = o[2], d = o[3];
        // No timer at all (the keepalive, idle and send timeouts came on by default after this
        // target was written): a connection that does not end must show as a suspended
        // coroutine at once, not as a run that waits out a 60 s idle timeout.
        opts.handshake_timeout = opts.close_timeout = std::chrono::milliseconds(0);
        opts.ping_interval = opts.idle_timeout = opts.send_timeout = std::chrono::milliseconds(0);
        opts.deflate.enabled = (a & 1) != 0;
        opts.deflate.server_no_context_takeover = (a & 2) != 0;
        opts.deflate.client_no_context_takeover = (a & 4) != 0;
        opts.deflate.server_max_window_bits = (a & 8) != 0 ? 9 : 15;
        static constexpr std::size_t limits[] = {1u << 20, 64u << 10, 1000, 1};
        opts.max_message_size = limits[(a >> 4) & 3];
        ping = (a & 0x40) != 0;
        close_after = (a & 0x80) != 0 ? 2 : 0;

        if (b != 0) {
            unsigned state = b;
            for (int i = 0; i < 8; ++i) {
                state = state * 1103515245u + 12345u;
                read_sizes.push_back(1 + (state >> 16) % b);
            }
        }

        static constexpr std::size_t chunks[] = {0, 1, 7, 300};
        write_chunk = chunks[c & 3];
        static constexpr std::size_t frames[] = {0, 1, 16, 125};
        opts.frame_size = frames[(c >> 2) & 3];
        if ((c & 0x10) != 0) opts.direct_write_threshold = 32;
        if ((c & 0x20) != 0) opts.write_queue_limit = 64;
        if ((c & 0x40) != 0) {
            write_limit = std::size_t{d} * 8;
        } else {
            pushes = d & 7;
            // 70000 is above the default direct-write threshold. Such messages go out in
            // frames of at least 125 bytes and writes of at least 300, or one input would
            // take a second.
            static constexpr std::size_t sizes[] = {0, 10, 200, 70000};
            push_size = sizes[(d >> 3) & 3];
            push_compress = (d & 0x20) != 0;
            if (push_size == sizes[3] && pushes > 0) {
                if (opts.frame_size != 0) opts.frame_size = 125;
                if (write_chunk != 0) write_chunk = 300;
            }
        }
        if ((c & 0x80) != 0) opts.deflate.threshold = 0;
    }
};

struct echoed {
    corows::message_kind kind;
    std::vector<std::uint8_t> data;
};

// What the server did, for the checks after the run.
struct record {
    bool accepted = false;
    bool finished = false;
    bool pushed = false;      // the second writer finished
    bool read_failed = false; // the loop ended because read_message() reported an error
    std::optional<corows::deflate_params> deflate;
    std::vector<echoed> echoes; // messages read and queued back successfully
    std::vector<echoed> pushes; // messages of the second writer queued successfully
};

// A second writer, concurrent with the echo loop's writes: both go through one queue, so the
// client must see each sequence in order, interleaved.
asio::awaitable<void> push(ws_type& ws, const plan& p, record& rec) {
    for (std::size_t k = 0; k < p.pushes; ++k) {
        // Let the reader run between messages.
        co_await asio::post(ws.get_executor(), asio::use_awaitable);
        std::vector<std::uint8_t> data(p.push_size);
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(k * 31 + i);
        auto [ec] = co_await ws.write_message(data, corows::message_kind::binary, p.push_compress, corows::use_tuple);
        if (ec) break;
        rec.pushes.push_back(echoed{corows::message_kind::binary, std::move(data)});
    }
}

asio::awaitable<void> serve(ws_type& ws, const plan& p, record& rec) {
    std::error_code ec;
    std::tie(ec) = co_await ws.accept(corows::use_tuple);
    if (ec) co_return;
    rec.accepted = true;
    rec.deflate = ws.deflate();
    asio::co_spawn(ws.get_executor(), push(ws, p, rec), [&rec](std::exception_ptr e) {
        check(!e);
        rec.pushed = true;
    });
    corows::message m;
    for (;;) {
        bool more = false;
        std::tie(ec, more) = co_await ws.read_message(m, corows::use_tuple);
        if (ec || !more) {
            rec.read_failed = true;
            break;
        }
        std::tie(ec) = co_await ws.write_message(m, corows::use_tuple);
        if (ec) break;
        rec.echoes.push_back(echoed{m.kind(), std::vector<std::uint8_t>(m.data().begin(), m.data().end())});
        if (p.ping) {
            const std::span<const std::uint8_t> tag = rec.echoes.back().data;
            std::tie(ec) = co_await ws.ping(tag.first(std::min<std::size_t>(tag.size(), 125)), corows::use_tuple);
            if (ec) break;
        }
        if (rec.echoes.size() == p.close_after) {
            std::tie(ec) = co_await ws.close(1000, "bye", corows::use_tuple);
            break;
        }
    }
}

// Reads the server's output as its client would.
void check_output(std::vector<std::uint8_t>& out, const record& rec, bool input_ended) {
    corows::http_response_parser parser;
    const auto head = parser.feed(out);
    if (!rec.accepted) {
        // Input ended inside the request head (nothing written), or a refusal and nothing more.
        if (out.empty()) return;
        check(head.status == corows::http_parse_status::complete);
        check(parser.get().status >= 400);
        // Exactly the body its Content-Length announces.
        const std::string_view length = parser.get().find("Content-Length").value_or("0");
        std::size_t body = 0;
        const auto [end, err] = std::from_chars(length.data(), length.data() + length.size(), body);
        check(err == std::errc{} && end == length.data() + length.size());
        check(out.size() - head.consumed == body);
        return;
    }
    check(head.status == corows::http_parse_status::complete);
    check(parser.get().status == 101);

    // Frame by frame: valid, unmasked, RSV1 only with deflate, nothing after a close. The
    // last frame may be cut short only if the transport ended under a write (input EOF while
    // a write was part-way), and then no close frame was sent.
    const corows::frame_rules rules{corows::role::client, rec.deflate.has_value(), UINT64_MAX};
    bool closed = false;
    for (std::size_t pos = head.consumed; pos < out.size();) {
        check(!closed);
        const corows::decoded_frame f = corows::decode_frame(out, pos, rules);
        if (f.status != corows::decode_status::complete) {
            check(f.status == corows::decode_status::need_more || f.status == corows::decode_status::partial);
            check(input_ended);
            break;
        }
        closed = f.header.op == corows::opcode::close;
        pos = f.next_pos;
    }

    // Message by message: the echoes and the second writer's messages, each in order,
    // interleaved. reach[j]: the messages so far can be the first `count - j` echoes and the
    // first j pushed messages.
    corows::message_reader reader(corows::reader_config{corows::role::client, SIZE_MAX});
    if (rec.deflate) {
        const auto in = corows::receiving_direction(*rec.deflate, corows::role::client);
        reader.enable_deflate(in);
    }
    const auto& es = rec.echoes;
    const auto& ws = rec.pushes;
    const auto same = [](const corows::message& m, const echoed& e) {
        return m.kind() == e.kind && std::ranges::equal(m.data(), e.data);
    };
    std::vector<bool> reach(ws.size() + 1, false), next(ws.size() + 1);
    reach[0] = true;
    std::size_t pos = head.consumed, count = 0;
    bool close_seen = false;
    corows::message m;
    while (!close_seen) {
        const corows::read_result r = reader.read(out, pos, m);
        check(r.event != corows::read_event::failed);
        if (r.event == corows::read_event::need_more) break;
        if (r.event == corows::read_event::close) close_seen = true;
        if (r.event != corows::read_event::message) continue;
        bool any = false;
        for (std::size_t j = 0; j <= ws.size(); ++j) {
            const std::size_t i = count - j; // wraps when j > count: then out of range below
            next[j] = (j <= count && reach[j] && i < es.size() && same(m, es[i])) ||
                      (j > 0 && reach[j - 1] && same(m, ws[j - 1]));
            any = any || next[j];
        }
        check(any);
        reach.swap(next);
        ++count;
    }
    // The queue goes out before a close frame, whole; only a transport that ended under the
    // connection may drop or cut short what was queued.
    if (close_seen) {
        check(pos == out.size() && !reader.in_message());
        check(count == es.size() + ws.size() && reach[ws.size()]);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < option_bytes) return 0;
    const plan p(data);
    memory_channel ch;
    ch.input = std::span<const std::uint8_t>(data + option_bytes, size - option_bytes);
    ch.read_sizes = p.read_sizes;
    ch.write_chunk = p.write_chunk;
    ch.write_limit = p.write_limit;

    record rec;
    {
        asio::io_context ctx;
        ws_type ws(memory_stream(ctx.get_executor(), ch), p.opts);
        asio::co_spawn(ctx, serve(ws, p, rec), [&rec](std::exception_ptr e) {
            check(!e); // the error_code forms report failures, they never throw
            rec.finished = true;
        });
        ctx.run();
        check(rec.finished && (rec.pushed || !rec.accepted));
        // A read error ends the connection: nothing of it may stay open.
        if (rec.read_failed) check(!ws.is_open() && ch.closed);
    }
    // Input exhausted or the connection ended early; either way no read may be pending.
    if (p.write_limit == SIZE_MAX) check_output(ch.output, rec, ch.eof_reported);
    return 0;
}
