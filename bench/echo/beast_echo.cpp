// SPDX-License-Identifier: BSL-1.0
// Boost.Beast (1.74) echo server for the echo benchmark: C++20 coroutines, one thread,
// TCP_NODELAY on, permessage-deflate when started with --deflate, wss with --cert and --key.
//
//   beast_echo PORT [--deflate] [--cert FILE --key FILE]
//
// Written the way Beast's own coroutine examples are: one read, one write per message, each
// awaited; TLS through beast::ssl_stream, as in Beast's TLS examples. Built by setup_peers.sh
// (g++ -O2 -std=c++20 -lssl -lcrypto), not by Meson.

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string_view>

namespace net = boost::asio;
namespace websocket = boost::beast::websocket;
using tcp = net::ip::tcp;

namespace {

bool deflate = false;
std::unique_ptr<net::ssl::context> tls; // set by --cert and --key

using tls_stream = boost::beast::ssl_stream<tcp::socket>;

template <class Stream>
net::awaitable<void> echo(websocket::stream<Stream>& ws) {
    if (deflate) {
        websocket::permessage_deflate pmd;
        pmd.server_enable = true;
        pmd.client_enable = true;
        ws.set_option(pmd);
    }
    ws.read_message_max(64 * 1024 * 1024);
    co_await ws.async_accept(net::use_awaitable);
    boost::beast::flat_buffer buffer;
    for (;;) {
        co_await ws.async_read(buffer, net::use_awaitable);
        ws.text(ws.got_text());
        co_await ws.async_write(buffer.data(), net::use_awaitable);
        buffer.consume(buffer.size());
    }
}

net::awaitable<void> session(tcp::socket sock) {
    sock.set_option(tcp::no_delay(true));
    try {
        if (tls) {
            websocket::stream<tls_stream> ws(std::move(sock), *tls);
            co_await ws.next_layer().async_handshake(net::ssl::stream_base::server, net::use_awaitable);
            co_await echo(ws);
        } else {
            websocket::stream<tcp::socket> ws(std::move(sock));
            co_await echo(ws);
        }
    } catch (const boost::system::system_error&) {
        // closed by the peer or reset: the session simply ends
    }
}

net::awaitable<void> listen(tcp::acceptor& acceptor) {
    for (;;) {
        tcp::socket sock = co_await acceptor.async_accept(net::use_awaitable);
        net::co_spawn(acceptor.get_executor(), session(std::move(sock)), net::detached);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: beast_echo PORT [--deflate] [--cert FILE --key FILE]\n";
        return 2;
    }
    auto port = static_cast<unsigned short>(std::atoi(argv[1]));
    const char* cert = nullptr;
    const char* key = nullptr;
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--deflate") deflate = true;
        else if (a == "--cert" && i + 1 < argc) cert = argv[++i];
        else if (a == "--key" && i + 1 < argc) key = argv[++i];
    }
    if (cert && key) {
        tls = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
        tls->use_certificate_chain_file(cert);
        tls->use_private_key_file(key, net::ssl::context::pem);
    }
    net::io_context ctx(1);
    tcp::acceptor acceptor(ctx, {net::ip::make_address("127.0.0.1"), port});
    acceptor.listen(4096);
    net::signal_set signals(ctx, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { ctx.stop(); });
    net::co_spawn(ctx, listen(acceptor), net::detached);
    std::cout << "listening on 127.0.0.1:" << port << std::endl;
    ctx.run();
}
