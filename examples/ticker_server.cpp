// SPDX-License-Identifier: BSL-1.0
// Ticker server: a price feed. A client connects to /ticker?symbol=AAA&symbol=BBB and receives
// {"symbol":"AAA","price":101.25,"seq":17} for the symbols it named, and nothing else. Each
// symbol is a topic of a corows::hub; a timer moves the prices of AAA, BBB, CCC and DDD by a
// random walk and publishes each update once, framed (and compressed) once for all its readers.
//
//   ticker_server [--address 127.0.0.1] [--port 8080] [--threads 1] [--interval-ms 100]
//
// Prints "listening on ADDR:PORT" once it accepts connections; SIGTERM or Ctrl-C stops it.
#include <corows/hub.hpp>
#include <corows/server.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using ws_type = corows::websocket<asio::ip::tcp::socket>;

// A symbol the feed does not quote is still accepted: its reader simply gets no updates.
bool valid_symbol(std::string_view s) {
    if (s.empty() || s.size() > 8) return false;
    for (char c : s)
        if (c < 'A' || c > 'Z') return false;
    return true;
}

// One client: /ticker?symbol=... subscribes it to those symbols' topics; anything else is refused.
asio::awaitable<void> serve(ws_type& ws, corows::hub& feed) {
    auto [ec, req] = co_await ws.read_request(corows::use_tuple);
    if (ec) co_return; // silent, garbled or too large: nothing worth answering
    if (req.path() != "/ticker") {
        co_await ws.refuse(404, "not found: the feed is /ticker?symbol=NAME\n", {});
        co_return;
    }
    std::vector<std::string> symbols = req.query_params("symbol");
    if (symbols.empty() || symbols.size() > 16 || !std::all_of(symbols.begin(), symbols.end(), valid_symbol)) {
        co_await ws.refuse(400, "name 1 to 16 symbols (?symbol=AAA&symbol=BBB), each 1 to 8 letters A-Z\n", {});
        co_return;
    }
    co_await ws.accept(req);
    for (const auto& s : symbols) feed.subscribe(ws, s);
    // Updates arrive through the hub; reading answers pings and notices the close.
    corows::message m;
    while (co_await ws.read_message(m)) {
    }
}

// A price in cents as JSON's decimal number ("101.25"): no floating-point rounding on the way.
std::string update(std::string_view symbol, long cents, long seq) {
    std::string fraction = std::to_string(cents % 100);
    if (fraction.size() < 2) fraction.insert(0, "0");
    return "{\"symbol\":\"" + std::string(symbol) + "\",\"price\":" + std::to_string(cents / 100) + "." + fraction +
           ",\"seq\":" + std::to_string(seq) + "}";
}

// Every interval, each symbol's price moves by up to 25 cents either way and is published.
asio::awaitable<void> quote(corows::server& srv, corows::hub& feed, std::chrono::milliseconds interval) {
    struct quoted {
        std::string symbol;
        long cents;
        long seq;
    };
    std::vector<quoted> book{{"AAA", 10000, 0}, {"BBB", 2500, 0}, {"CCC", 75000, 0}, {"DDD", 120, 0}};
    std::mt19937 random{std::random_device{}()};
    std::uniform_int_distribution<long> step(-25, 25);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!srv.draining()) {
        for (auto& q : book) {
            q.cents = std::max(1L, q.cents + step(random));
            std::string text = update(q.symbol, q.cents, ++q.seq);
            feed.publish(q.symbol, corows::prepared_message::make(corows::as_bytes(text), corows::message_kind::text));
        }
        timer.expires_after(interval);
        co_await timer.async_wait(asio::use_awaitable);
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        std::string address = "127.0.0.1";
        unsigned short port = 8080;
        std::size_t threads = 1;
        long interval_ms = 100;
        for (int i = 1; i < argc; i += 2) {
            std::string_view arg = argv[i];
            if (i + 1 >= argc) throw std::invalid_argument("missing value after " + std::string(arg));
            std::string value = argv[i + 1];
            if (arg == "--address") address = value;
            else if (arg == "--port") port = static_cast<unsigned short>(std::stoul(value));
            else if (arg == "--threads") threads = std::stoul(value);
            else if (arg == "--interval-ms") interval_ms = std::stol(value);
            else throw std::invalid_argument("usage: ticker_server [--address A] [--port N] [--threads N] [--interval-ms N]");
        }
        corows::server_options o;
        o.threads = threads;
        o.connection.max_message_size = 4096; // readers send nothing but control frames
        o.connection.deflate.enabled = true;  // browsers offer permessage-deflate; JSON shrinks well
        corows::server srv(o);
        auto ep = srv.listen({asio::ip::make_address(address), port});

        // A reader whose queue is full misses updates instead of being closed: the next one
        // carries the whole current price, so a gap costs it nothing but staleness (a chat,
        // where every message counts, closes instead: the hub's default).
        corows::hub_options ho;
        ho.policy = corows::slow_consumer::drop;
        corows::hub feed(ho);

        asio::co_spawn(srv.get_executor(), quote(srv, feed, std::chrono::milliseconds(interval_ms)), asio::detached);
        asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
        signals.async_wait([&](std::error_code ec, int) {
            if (!ec) srv.stop();
        });
        std::cout << "listening on " << ep.address().to_string() << ':' << ep.port() << std::endl;
        srv.run_http([&feed](ws_type& ws) { return serve(ws, feed); });
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "ticker_server: " << e.what() << '\n';
        return 1;
    }
}
