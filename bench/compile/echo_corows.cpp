// SPDX-License-Identifier: BSL-1.0
// The README's echo server: what one user file including <corows/server.hpp> costs to compile.
#include <corows/server.hpp>

int main() {
    corows::options opts;
    opts.deflate.enabled = true;
    corows::server srv(opts, /*threads=*/1);
    srv.listen({asio::ip::make_address("127.0.0.1"), 9101});
    srv.run([](corows::websocket<asio::ip::tcp::socket>& ws) -> asio::awaitable<void> {
        corows::message m;
        while (co_await ws.read_message(m))
            co_await ws.write_message(m);
    });
}
