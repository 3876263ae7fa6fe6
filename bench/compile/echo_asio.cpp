// SPDX-License-Identifier: BSL-1.0
// The same server written with Asio alone (bytes echoed over TCP, a coroutine per connection,
// one thread): the floor against which echo_corows.cpp's compile time is read.
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <array>
#include <cstddef>

namespace {

asio::awaitable<void> echo(asio::ip::tcp::socket s) {
    std::array<char, 4096> buf;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf),
                                                  asio::experimental::as_tuple(asio::use_awaitable));
        if (ec) co_return;
        auto [wec, m] = co_await asio::async_write(s, asio::buffer(buf, n),
                                                   asio::experimental::as_tuple(asio::use_awaitable));
        if (wec) co_return;
        (void)m;
    }
}

asio::awaitable<void> listen(asio::ip::tcp::acceptor a) {
    for (;;) {
        auto s = co_await a.async_accept(asio::use_awaitable);
        asio::co_spawn(a.get_executor(), echo(std::move(s)), asio::detached);
    }
}

} // namespace

int main() {
    asio::io_context io(1);
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 9101});
    asio::co_spawn(io, listen(std::move(a)), asio::detached);
    asio::signal_set stop(io, SIGINT, SIGTERM);
    stop.async_wait([&](auto, auto) { io.stop(); });
    io.run();
}
