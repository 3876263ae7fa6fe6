// SPDX-License-Identifier: BSL-1.0
// An echo server whose compressed messages end in a BFINAL=1 block (RFC 7692 §7.2.3.4):
// libdeflate's output sent as it is, for the final_block interop tests with real peers.
//
//   final_block_echo [--port N] [--zlib] [--preset NAME] [--flush]
//     --zlib    zlib's 00 00 FF FF flush form instead, for contrast
//     --preset  shared (default), no_context_takeover, small_window or full_context, with the
//               preset's own threshold, for memory measurements (bench/echo/run.py's method)
//     --flush   libdeflate rewritten into the flush form (the library's default)
//
// Prints "listening on 127.0.0.1:PORT" once it accepts connections.
#include <corows/detail/shared_compressor.hpp>
#include <corows/server.hpp>

#include <asio/signal_set.hpp>

#include <iostream>
#include <string>
#include <string_view>

namespace {

asio::awaitable<void> echo(corows::websocket<asio::ip::tcp::socket>& ws) {
    corows::message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

} // namespace

int main(int argc, char** argv) {
    if (!corows::detail::libdeflate_available()) {
        std::cerr << "final_block_echo: this build has no libdeflate\n";
        return 77; // the test skips
    }
    unsigned short port = 0;
    bool zlib = false, flush = false;
    const char* preset = nullptr;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--port" && i + 1 < argc) port = static_cast<unsigned short>(std::stoul(argv[++i]));
        else if (arg == "--zlib") zlib = true;
        else if (arg == "--flush") flush = true;
        else if (arg == "--preset" && i + 1 < argc) preset = argv[++i];
        else {
            std::cerr << "usage: final_block_echo [--port N] [--zlib] [--preset NAME] [--flush]\n";
            return 2;
        }
    }
    corows::server_options o;
    o.connection.max_message_size = 64 * 1024 * 1024;
    o.connection.deflate = corows::deflate_preset_options(corows::deflate_preset::shared);
    if (preset) {
        std::string_view p = preset;
        if (p == "no_context_takeover")
            o.connection.deflate = corows::deflate_preset_options(corows::deflate_preset::no_context_takeover);
        else if (p == "small_window")
            o.connection.deflate = corows::deflate_preset_options(corows::deflate_preset::small_window);
        else if (p == "full_context")
            o.connection.deflate = corows::deflate_preset_options(corows::deflate_preset::full_context);
        else if (p != "shared") {
            std::cerr << "final_block_echo: unknown preset " << p << '\n';
            return 2;
        }
    } else {
        o.connection.deflate.threshold = 0;
    }
    o.connection.deflate.final_block = !zlib && !flush && !preset;
    o.connection.deflate.use_libdeflate = !zlib;
    corows::server srv(o);
    auto ep = srv.listen({asio::ip::make_address("127.0.0.1"), port});
    asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
    signals.async_wait([&srv](std::error_code ec, int) {
        if (!ec) srv.stop();
    });
    std::cout << "listening on 127.0.0.1:" << ep.port() << std::endl;
    srv.run(echo);
    return 0;
}
