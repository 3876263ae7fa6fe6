// SPDX-License-Identifier: BSL-1.0
// The hub's delivery cost without sockets, so that a change to the hub shows and the kernel's
// does not: 1,000 server websockets over in-memory streams (tests/fuzz/memory_stream.hpp),
// all subscribed to one topic; each round publishes one 1 KiB message and runs the io_context
// until every delivery is written. Prints server CPU ns per delivery, the best of 5 runs:
//   bench=hub subscribers=.. size=.. rounds=.. ns_per_delivery=..
#include <corows/hub.hpp>
#include <corows/websocket.hpp>

#include "memory_stream.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <time.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using corows::test::memory_channel;
using corows::test::memory_stream;
using ws_t = corows::websocket<memory_stream>;

static double cpu() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int main() {
    const std::size_t n = 1000, rounds = 400;
    const std::string request = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    asio::io_context ctx(1);
    std::vector<std::unique_ptr<memory_channel>> chans;
    std::vector<std::unique_ptr<ws_t>> conns;
    corows::options o;
    o.write_queue_limit = 1 << 20;
    o.ping_interval = std::chrono::seconds(0);
    o.idle_timeout = std::chrono::seconds(0);
    auto hub = std::make_unique<corows::basic_hub<memory_stream>>();
    for (std::size_t i = 0; i < n; ++i) {
        auto ch = std::make_unique<memory_channel>();
        ch->input = std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(request.data()), request.size());
        conns.push_back(std::make_unique<ws_t>(memory_stream(ctx.get_executor(), *ch), o));
        chans.push_back(std::move(ch));
        asio::co_spawn(ctx, [ws = conns.back().get(), &hub]() -> asio::awaitable<void> {
            co_await ws->accept();
            hub->subscribe(*ws, "t");
        }, asio::detached);
    }
    // poll(), not run(): open connections keep work pending, so run() would not return.
    while (ctx.poll()) ctx.restart();
    ctx.restart();
    std::string text(1024, 'x');
    for (auto& ws : conns)
        if (!ws->is_open()) throw std::runtime_error("a connection did not open");
    for (auto& ch : chans) ch->output.clear(); // the 101 answers
    std::size_t written = 0;
    double best = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
        double c0 = cpu();
        for (std::size_t r = 0; r < rounds; ++r) {
            hub->publish("t", corows::prepared_message::make(corows::as_bytes(text), corows::message_kind::text));
            while (ctx.poll()) ctx.restart();
            ctx.restart();
            for (auto& ch : chans) {
                written += ch->output.size();
                ch->output.clear();
            }
        }
        double ns = (cpu() - c0) * 1e9 / double(n * rounds);
        if (ns < best) best = ns;
    }
    // Each delivery is the 1 KiB payload behind a 4-byte header.
    if (written != 5 * n * rounds * (text.size() + 4)) throw std::runtime_error("deliveries went missing");
    std::printf("bench=hub subscribers=%zu size=1024 rounds=%zu ns_per_delivery=%.0f\n", n, rounds, best);
    for (auto& ws : conns) ws->abort();
    hub.reset();
    conns.clear();
    while (ctx.poll()) ctx.restart();
}
