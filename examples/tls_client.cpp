// SPDX-License-Identifier: BSL-1.0
// TLS client for a server whose certificate a private CA signed: trusts that CA and nothing
// else, checks the server's name against the certificate, sends one message, prints the
// reply, closes with 1000 and exits 0. A server the CA did not vouch for is an error (exit 1).
//
//   tls_client --url wss://localhost:PORT/ --ca ca.pem [--message TEXT]
#include <corows/connect.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>
#include <asio/use_future.hpp>

#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

asio::awaitable<void> talk(std::string url, asio::ssl::context& tls, std::string text) {
    corows::connect_options o;
    o.tls = &tls; // connect() sends the URL's host as SNI and verifies the certificate against it
    corows::client_websocket ws = co_await corows::connect(url, o, asio::use_awaitable);
    co_await ws.write_text(text);
    corows::message reply;
    if (!co_await ws.read_message(reply)) throw std::runtime_error("closed before replying");
    std::cout << reply.text() << '\n';
    co_await ws.close(1000, "done");
}

} // namespace

int main(int argc, char** argv) {
    std::string url, ca, text = "hello over TLS";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string_view arg = argv[i];
        if (arg == "--url") url = argv[i + 1];
        else if (arg == "--ca") ca = argv[i + 1];
        else if (arg == "--message") text = argv[i + 1];
    }
    if (url.empty() || ca.empty() || argc % 2 == 0) {
        std::cerr << "usage: tls_client --url wss://HOST:PORT/ --ca CA.pem [--message TEXT]\n";
        return 2;
    }
    try {
        // Only the private CA: not the system's store, so a publicly signed certificate fails too.
        asio::ssl::context tls(asio::ssl::context::tls_client);
        tls.load_verify_file(ca);
        tls.set_verify_mode(asio::ssl::verify_peer);
        asio::io_context ctx;
        auto done = asio::co_spawn(ctx, talk(url, tls, text), asio::use_future);
        ctx.run();
        done.get(); // rethrows what talk() threw
        return 0;
    } catch (const std::exception& e) {
        // e.g. "... TLS handshake with localhost:4433 (127.0.0.1:4433) failed: certificate verify
        // failed (SSL routines) (unable to get local issuer certificate)"
        std::cerr << "tls_client: " << e.what() << '\n';
        return 1;
    }
}
