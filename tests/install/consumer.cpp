// SPDX-License-Identifier: BSL-1.0
// A program built against an installed corows, as a user's would be (tests/install/run.sh):
// a corows server on a free loopback port, a corows client that connects with
// corows::connect, one echo, a close handshake and a graceful stop. Exits 0 only if the echo
// came back intact. It names Asio through corows::asio, so it builds against a corows built
// for standalone Asio or for Boost.Asio (-Dasio=boost) alike.
#include <corows/connect.hpp>
#include <corows/server.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <thread>

namespace {

namespace asio = corows::asio;

asio::awaitable<void> echo_once(std::string url, std::string& reply) {
    // Named, not a temporary in the co_await: g++ 12 destroys such temporaries twice.
    auto ws = co_await corows::connect(url);
    co_await ws.write_text("installed corows");
    auto m = co_await ws.read_message();
    if (m) reply = m->text();
    co_await ws.close();
}

} // namespace

int main() {
    corows::server srv(corows::options{}, 1);
    const auto endpoint = srv.listen({asio::ip::make_address("127.0.0.1"), 0});
    std::thread server_thread([&] {
        srv.run([](corows::websocket<asio::ip::tcp::socket>& ws) -> asio::awaitable<void> {
            corows::message m;
            while (co_await ws.read_message(m)) co_await ws.write_message(m);
        });
    });

    std::string reply;
    std::string failure;
    asio::io_context ctx;
    asio::co_spawn(ctx, echo_once("ws://127.0.0.1:" + std::to_string(endpoint.port()) + "/", reply),
                   [&](std::exception_ptr e) {
                       if (!e) return;
                       try {
                           std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                           failure = x.what();
                       }
                   });
    ctx.run();
    srv.stop();
    server_thread.join();

    if (!failure.empty()) {
        std::printf("consumer: client failed: %s\n", failure.c_str());
        return 1;
    }
    if (reply != "installed corows") {
        std::printf("consumer: echo was \"%s\"\n", reply.c_str());
        return 1;
    }
    std::puts("consumer: echo through the installed corows ok");
    return 0;
}
