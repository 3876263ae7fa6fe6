// SPDX-License-Identifier: BSL-1.0
// Broadcast benchmark: one 1 KiB message to 1,000 connected clients, over and over. A server
// thread (core 0 when it has two) sends each message either as one prepared_message queued
// by reference on every connection (ws.send / write_prepared) or as a separate write_message
// per connection (framed, and with permessage-deflate compressed, once per connection); the
// clients run on a second thread and count what arrives, byte-checked.
//
//   broadcast_bench [--clients N] [--size BYTES] [--seconds S]
//
// Prints, per mode (prepared, per_connection) and compression (off; on without context
// takeover on the server's side):
//   bench=broadcast mode=.. deflate=0|1 clients=.. size=.. deliveries_per_s=.. server_ns_per_delivery=..
// and for each compression setting one line with the ratios prepared / per_connection.
#include <corows/prepared_message.hpp>
#include <corows/websocket.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using tcp = asio::ip::tcp;
using ws_t = corows::websocket<tcp::socket>;
using clock_type = std::chrono::steady_clock;

struct settings {
    std::size_t clients = 1000;
    std::size_t size = 1024;
    double seconds = 2.0;
};

void pin_to(unsigned cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set); // best effort
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Message `round`: JSON-ish text of `size` bytes, different every round, its round number first.
std::string payload_for(std::size_t round, std::size_t size) {
    std::string s = std::to_string(round) + " {\"room\":\"lobby\",\"user\":\"u" + std::to_string(round % 97) +
                    "\",\"text\":\"";
    while (s.size() + 2 < size) s += static_cast<char>('a' + (round * 31 + s.size() * 7) % 26);
    s += "\"}";
    s.resize(size, ' ');
    return s;
}

struct result {
    double deliveries_per_s = 0;
    double server_ns_per_delivery = 0;
};

// One run: connect the clients, broadcast for the given time, wait for every delivery.
result run(const settings& cfg, bool prepared, bool deflate) {
    asio::io_context server_ctx(1), client_ctx(1);
    tcp::acceptor acceptor(server_ctx, {asio::ip::make_address("127.0.0.1"), 0});
    auto endpoint = acceptor.local_endpoint();

    corows::options server_opts;
    server_opts.deflate.enabled = deflate;
    // A small queue: the broadcaster waits for slow connections instead of piling up memory.
    server_opts.write_queue_limit = 16 * 1024;
    corows::options client_opts;
    client_opts.deflate.enabled = deflate;
    client_opts.deflate.server_no_context_takeover = true; // what lets one compression serve all

    std::vector<std::unique_ptr<ws_t>> conns;
    std::atomic<std::size_t> delivered{0};
    std::atomic<bool> bad{false};
    std::size_t rounds_sent = 0;
    double server_cpu = 0;
    clock_type::time_point started, finished;

    // Clients: read and check each message's round number in order, until closed.
    for (std::size_t i = 0; i < cfg.clients; ++i) {
        asio::co_spawn(client_ctx, [&]() -> asio::awaitable<void> {
            tcp::socket sock(client_ctx);
            co_await sock.async_connect(endpoint, asio::use_awaitable);
            ws_t ws(std::move(sock), client_opts);
            co_await ws.handshake("127.0.0.1", "/");
            corows::message m;
            std::size_t expect = 0;
            for (;;) {
                auto [ec, more] = co_await ws.read_message(m, corows::use_tuple);
                if (ec || !more) break;
                std::string head = std::to_string(expect) + " ";
                if (m.size() != cfg.size || std::memcmp(m.data().data(), head.data(), head.size()) != 0) bad = true;
                ++expect;
                delivered.fetch_add(1, std::memory_order_relaxed);
            }
        }, asio::detached);
    }
    std::thread client_thread([&] {
        pin_to(1);
        client_ctx.run();
    });

    asio::co_spawn(server_ctx, [&]() -> asio::awaitable<void> {
        for (std::size_t i = 0; i < cfg.clients; ++i) {
            tcp::socket sock = co_await acceptor.async_accept(asio::use_awaitable);
            conns.push_back(std::make_unique<ws_t>(std::move(sock), server_opts));
            co_await conns.back()->accept();
        }
        double cpu0 = thread_cpu_seconds();
        started = clock_type::now();
        auto until = started + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(cfg.seconds));
        while (clock_type::now() < until) {
            std::string text = payload_for(rounds_sent, cfg.size);
            if (prepared) {
                auto pm = corows::prepared_message::make(corows::as_bytes(text), corows::message_kind::text);
                for (auto& ws : conns)
                    if (!ws->send(pm)) co_await ws->write_prepared(pm);
            } else {
                for (auto& ws : conns) co_await ws->write_text(text);
            }
            ++rounds_sent;
        }
        for (auto& ws : conns) co_await ws->flush();
        server_cpu = thread_cpu_seconds() - cpu0;
        // Every message delivered, then the clients are let go.
        asio::steady_timer t(server_ctx);
        while (delivered.load() < rounds_sent * cfg.clients) {
            t.expires_after(std::chrono::microseconds(200));
            co_await t.async_wait(asio::use_awaitable);
        }
        finished = clock_type::now();
        for (auto& ws : conns) co_await ws->close(1000, {});
    }, [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    });
    pin_to(0);
    server_ctx.run();
    client_thread.join();
    if (bad) throw std::runtime_error("a client received a wrong message");

    double deliveries = static_cast<double>(rounds_sent * cfg.clients);
    double secs = std::chrono::duration<double>(finished - started).count();
    return {deliveries / secs, server_cpu * 1e9 / deliveries};
}

} // namespace

int main(int argc, char** argv) {
    settings cfg;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--clients") cfg.clients = std::stoul(argv[i + 1]);
        else if (a == "--size") cfg.size = std::stoul(argv[i + 1]);
        else if (a == "--seconds") cfg.seconds = std::stod(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: broadcast_bench [--clients N] [--size BYTES] [--seconds S]\n");
            return 2;
        }
    }
    for (bool deflate : {false, true}) {
        result r[2];
        for (int prepared = 1; prepared >= 0; --prepared) {
            r[prepared] = run(cfg, prepared == 1, deflate);
            std::printf("bench=broadcast mode=%s deflate=%d clients=%zu size=%zu deliveries_per_s=%.0f "
                        "server_ns_per_delivery=%.0f\n",
                        prepared ? "prepared" : "per_connection", deflate ? 1 : 0, cfg.clients, cfg.size,
                        r[prepared].deliveries_per_s, r[prepared].server_ns_per_delivery);
            std::fflush(stdout);
        }
        std::printf("bench=broadcast_ratio deflate=%d clients=%zu size=%zu deliveries_x=%.2f server_cpu_x=%.2f\n",
                    deflate ? 1 : 0, cfg.clients, cfg.size, r[1].deliveries_per_s / r[0].deliveries_per_s,
                    r[0].server_ns_per_delivery / r[1].server_ns_per_delivery);
    }
}
