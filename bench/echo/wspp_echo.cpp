// SPDX-License-Identifier: BSL-1.0
// websocketpp (0.8.2, Debian libwebsocketpp-dev) echo server for the echo benchmark: one
// thread, TCP_NODELAY on, permessage-deflate when started with --deflate, wss with --cert and
// --key (the stock asio_tls config).
//
//   wspp_echo PORT [--deflate] [--cert FILE --key FILE]
//
// websocketpp's deflate extension is marked experimental; its server config is the stock
// asio_no_tls one with the extension switched on. Built by setup_peers.sh (g++ -O2
// -std=c++17 with Boost.Asio, -lssl -lcrypto), not by Meson.
#include <websocketpp/config/asio.hpp>
#include <websocketpp/extensions/permessage_deflate/enabled.hpp>
#include <websocketpp/server.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace {

struct deflate_config : websocketpp::config::asio {
    typedef deflate_config type;
    typedef websocketpp::config::asio base;
    typedef base::concurrency_type concurrency_type;
    typedef base::request_type request_type;
    typedef base::response_type response_type;
    typedef base::message_type message_type;
    typedef base::con_msg_manager_type con_msg_manager_type;
    typedef base::endpoint_msg_manager_type endpoint_msg_manager_type;
    typedef base::alog_type alog_type;
    typedef base::elog_type elog_type;
    typedef base::rng_type rng_type;
    struct transport_config : public base::transport_config {
        typedef type::concurrency_type concurrency_type;
        typedef type::alog_type alog_type;
        typedef type::elog_type elog_type;
        typedef type::request_type request_type;
        typedef type::response_type response_type;
        typedef websocketpp::transport::asio::basic_socket::endpoint socket_type;
    };
    typedef websocketpp::transport::asio::endpoint<transport_config> transport_type;
    struct permessage_deflate_config {};
    typedef websocketpp::extensions::permessage_deflate::enabled<permessage_deflate_config> permessage_deflate_type;
    static const size_t max_message_size = 64 * 1024 * 1024;
};

// The certificate and key files for wss (empty: plain ws).
std::string cert, key;

template <class Config>
int serve(unsigned short port) {
    using server = websocketpp::server<Config>;
    server s;
    s.clear_access_channels(websocketpp::log::alevel::all);
    s.clear_error_channels(websocketpp::log::elevel::all);
    s.init_asio();
    s.set_reuse_addr(true);
    s.set_listen_backlog(4096);
    s.set_max_message_size(64 * 1024 * 1024);
    // The socket init handler runs before accept, on a socket not yet open: set the option
    // once the TCP connection exists.
    s.set_tcp_post_init_handler([&s](websocketpp::connection_hdl h) {
        boost::system::error_code ec;
        s.get_con_from_hdl(h)->get_raw_socket().set_option(boost::asio::ip::tcp::no_delay(true), ec);
    });
    s.set_message_handler([&s](websocketpp::connection_hdl h, typename server::message_ptr msg) {
        websocketpp::lib::error_code ec;
        s.send(h, msg->get_payload(), msg->get_opcode(), ec);
    });
    if constexpr (std::is_same_v<Config, websocketpp::config::asio_tls>) {
        s.set_tls_init_handler([](websocketpp::connection_hdl) {
            auto ctx = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
            ctx->use_certificate_chain_file(cert);
            ctx->use_private_key_file(key, boost::asio::ssl::context::pem);
            return ctx;
        });
    }
    s.listen(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    s.start_accept();
    std::cout << "listening on 127.0.0.1:" << port << std::endl;
    s.run();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: wspp_echo PORT [--deflate] [--cert FILE --key FILE]\n";
        return 2;
    }
    auto port = static_cast<unsigned short>(std::atoi(argv[1]));
    bool deflate = false;
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--deflate") deflate = true;
        else if (a == "--cert" && i + 1 < argc) cert = argv[++i];
        else if (a == "--key" && i + 1 < argc) key = argv[++i];
    }
    if (!cert.empty() && !key.empty()) {
        if (deflate) {
            std::cerr << "wspp_echo: --deflate with TLS is not built\n";
            return 2;
        }
        return serve<websocketpp::config::asio_tls>(port);
    }
    return deflate ? serve<deflate_config>(port) : serve<websocketpp::config::asio>(port);
}
