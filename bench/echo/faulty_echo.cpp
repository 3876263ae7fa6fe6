// SPDX-License-Identifier: BSL-1.0
// A deliberately wrong echo server, to show that echo_load's verification catches what a
// broken server does. Used only by bench/echo/selftest.py.
//
//   faulty_echo --fault none|flip|swap|drop|kind [--every N] [--deflate]
//
// Every Nth message (default 50) is echoed with one byte flipped, swapped with the next,
// dropped, or sent back with the other kind (text/binary); "none" is a correct echo. Prints
// "listening on 127.0.0.1:PORT" (a free port) and serves until SIGTERM; --deflate accepts
// permessage-deflate.
#include <corows/server.hpp>

#include <asio/signal_set.hpp>

#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

enum class fault { none, flip, swap, drop, kind };

fault parse_fault(std::string_view v) {
    if (v == "none") return fault::none;
    if (v == "flip") return fault::flip;
    if (v == "swap") return fault::swap;
    if (v == "drop") return fault::drop;
    if (v == "kind") return fault::kind;
    throw std::invalid_argument("unknown fault " + std::string(v));
}

} // namespace

int main(int argc, char** argv) {
    try {
        fault f = fault::none;
        std::size_t every = 50;
        corows::server_options so;
        for (int i = 1; i < argc; ++i) {
            std::string_view arg = argv[i];
            if (arg == "--deflate") so.connection.deflate.enabled = true;
            else if (i + 1 < argc && arg == "--fault") f = parse_fault(argv[++i]);
            else if (i + 1 < argc && arg == "--every") every = std::stoul(argv[++i]);
            else throw std::invalid_argument("unknown argument " + std::string(arg));
        }
        if (every == 0) throw std::invalid_argument("--every must be at least 1");
        corows::server srv(so);
        auto ep = srv.listen({asio::ip::make_address("127.0.0.1"), 0});
        asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
        signals.async_wait([&srv](std::error_code ec, int) {
            if (!ec) srv.stop();
        });
        std::cout << "listening on 127.0.0.1:" << ep.port() << std::endl;
        srv.run([f, every](corows::websocket<asio::ip::tcp::socket>& ws) -> asio::awaitable<void> {
            corows::message m;
            corows::message held; // swap: the message that goes out after the next one
            bool holding = false;
            std::vector<std::uint8_t> bytes;
            for (std::size_t n = 1; co_await ws.read_message(m); ++n) {
                bool hit = n % every == 0;
                if (holding) {
                    co_await ws.write_message(m);
                    co_await ws.write_message(held);
                    holding = false;
                    continue;
                }
                if (!hit || f == fault::none) {
                    co_await ws.write_message(m);
                } else if (f == fault::flip) {
                    bytes.assign(m.data().begin(), m.data().end());
                    if (!bytes.empty()) bytes[bytes.size() / 2] ^= 0x01; // stays ASCII, so stays UTF-8
                    co_await ws.write_message(bytes, m.kind(), true);
                } else if (f == fault::swap) {
                    held = m; // an owning copy
                    holding = true;
                } else if (f == fault::kind) {
                    auto other = m.is_text() ? corows::message_kind::binary : corows::message_kind::text;
                    co_await ws.write_message(m.data(), other, true);
                } // drop: nothing goes back
            }
        });
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "faulty_echo: " << e.what() << '\n';
        return 1;
    }
}
