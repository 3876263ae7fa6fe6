// SPDX-License-Identifier: BSL-1.0
// Echo server: sends every message back as it came (text as text, binary as binary).
//
//   echo_server [--address A] [--port N] [--threads N] [--deflate]
//               [--deflate-preset shared|no_context_takeover|small_window|full_context]
//               [--events | --as-tuple] [--cert FILE --key FILE]
//               [--max-connections N] [--max-connections-per-address N]
//               [--max-handshakes N] [--handshake-timeout-ms N] [--metrics-address A:PORT]
//               [--log-level debug|info|warning|error|off]
//
// --events serves with callbacks (basic_server::run_events) instead of a coroutine per
// connection: the same echo, with less memory per idle connection. --as-tuple reads and
// writes with the as_tuple(use_awaitable) completion token, to measure the operations'
// generic completion-token path against plain co_await. --metrics-address serves the server's
// counts for Prometheus at http://A:PORT/metrics, apart from the public port. --log-level
// (default warning) sets what goes to stderr: refusals, endings, protocol violations.
//
// Prints "listening on ADDR:PORT" once it accepts connections; Ctrl-C stops it gracefully.
#include "stderr_log.hpp"

#include <corows/metrics.hpp>
#include <corows/server.hpp>

#include <asio/experimental/as_tuple.hpp>
#include <asio/signal_set.hpp>
#ifdef COROWS_HAS_TLS
#include <corows/tls_stream.hpp>
#endif

#include <csignal>
#include <optional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace {

struct settings {
    std::string address = "127.0.0.1";
    unsigned short port = 9001;
    std::size_t threads = 1;
    bool deflate = false;
    bool events = false;
    bool as_tuple = false;
    corows::deflate_preset preset = corows::deflate_preset::shared;
    std::string cert, key;
    std::string metrics_address; // A:PORT, or empty
    std::string log_level = "warning";
    corows::server_options limits; // admission: only its limits are read
};

corows::deflate_preset parse_preset(std::string_view name) {
    using corows::deflate_preset;
    if (name == "shared") return deflate_preset::shared;
    if (name == "no_context_takeover") return deflate_preset::no_context_takeover;
    if (name == "small_window") return deflate_preset::small_window;
    if (name == "full_context") return deflate_preset::full_context;
    throw std::invalid_argument("unknown deflate preset " + std::string(name));
}

settings parse_args(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--address") s.address = value();
        else if (arg == "--port") s.port = static_cast<unsigned short>(std::stoul(value()));
        else if (arg == "--threads") s.threads = std::stoul(value());
        else if (arg == "--deflate") s.deflate = true;
        else if (arg == "--events") s.events = true;
        else if (arg == "--as-tuple") s.as_tuple = true;
        else if (arg == "--deflate-preset") {
            s.deflate = true;
            s.preset = parse_preset(value());
        }
        else if (arg == "--cert") s.cert = value();
        else if (arg == "--key") s.key = value();
        else if (arg == "--max-connections") s.limits.max_connections = std::stoul(value());
        else if (arg == "--max-connections-per-address") s.limits.max_connections_per_address = std::stoul(value());
        else if (arg == "--max-handshakes") s.limits.max_handshakes = std::stoul(value());
        else if (arg == "--metrics-address") s.metrics_address = value();
        else if (arg == "--log-level") s.log_level = value();
        else if (arg == "--handshake-timeout-ms")
            s.limits.connection.handshake_timeout = std::chrono::milliseconds(std::stol(value()));
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
    if (s.cert.empty() != s.key.empty()) throw std::invalid_argument("--cert and --key go together");
    return s;
}

template <class Stream>
asio::awaitable<void> echo(corows::websocket<Stream>& ws) {
    corows::message m; // reused: no allocation per message once warmed up
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

template <class Stream>
asio::awaitable<void> echo_as_tuple(corows::websocket<Stream>& ws) {
    constexpr auto token = asio::experimental::as_tuple(asio::use_awaitable);
    corows::message m;
    for (;;) {
        auto [ec, got] = co_await ws.read_message(m, token);
        if (ec || !got) break;
        auto [wec] = co_await ws.write_message(m, token);
        if (wec) break;
    }
}

// Answers GET /metrics with `srv`'s counts on `address` (A:PORT), on a thread of its own, until
// destroyed: Prometheus scrapes it apart from the port the clients use.
template <class Stream>
class metrics_endpoint {
public:
    metrics_endpoint(const corows::basic_server<Stream>& srv, const std::string& address) : http_(corows::server_options{}) {
        auto colon = address.rfind(':');
        if (colon == std::string::npos) throw std::invalid_argument("--metrics-address wants A:PORT");
        auto host = address.substr(0, colon);
        if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        http_.listen({asio::ip::make_address(host), static_cast<unsigned short>(std::stoul(address.substr(colon + 1)))});
        thread_ = std::thread([this, &srv] {
            http_.run_http([&srv](corows::server::websocket_type& ws) -> asio::awaitable<void> {
                for (;;) { // keep-alive: Prometheus reuses its connection
                    auto [ec, req] = co_await ws.read_request(corows::use_tuple);
                    if (ec) co_return;
                    corows::http_response res;
                    if (req.path() == "/metrics") {
                        res.fields.add("Content-Type", corows::prometheus_content_type);
                        res.body = corows::to_prometheus(srv.metrics());
                    } else {
                        res.status = 404;
                    }
                    auto [wec] = co_await ws.write_response(res, corows::use_tuple);
                    if (wec) co_return;
                }
            });
        });
    }
    metrics_endpoint(const metrics_endpoint&) = delete;
    metrics_endpoint& operator=(const metrics_endpoint&) = delete;
    ~metrics_endpoint() {
        http_.stop(std::chrono::milliseconds(0));
        thread_.join();
    }

private:
    corows::server http_;
    std::thread thread_;
};

template <class Stream>
void serve(corows::basic_server<Stream>& srv, const settings& s) {
    auto ep = srv.listen({asio::ip::make_address(s.address), s.port});
    std::optional<metrics_endpoint<Stream>> metrics;
    if (!s.metrics_address.empty()) metrics.emplace(srv, s.metrics_address);
    asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
    signals.async_wait([&srv](std::error_code ec, int) {
        if (!ec) srv.stop();
    });
    bool v6 = ep.address().is_v6();
    std::cout << "listening on " << (v6 ? "[" : "") << ep.address().to_string() << (v6 ? "]" : "") << ':'
              << ep.port() << std::endl;
    if (s.events) {
        typename corows::basic_server<Stream>::event_handlers h;
        h.on_message = [](corows::websocket<Stream>& ws, const corows::message& m) { ws.send(m); };
        srv.run_events(std::move(h));
    } else if (s.as_tuple) {
        srv.run(echo_as_tuple<Stream>);
    } else {
        srv.run(echo<Stream>);
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings s = parse_args(argc, argv);
        corows::server_options o;
        o.threads = s.threads;
        o.max_connections = s.limits.max_connections;
        o.max_connections_per_address = s.limits.max_connections_per_address;
        o.max_handshakes = s.limits.max_handshakes;
        o.connection.handshake_timeout = s.limits.connection.handshake_timeout;
        o.connection.max_message_size = 64 * 1024 * 1024;
        o.log = examples::stderr_log(s.log_level);
        // The default preset (shared) accepts every legal permessage-deflate offer shape.
        o.connection.deflate = corows::deflate_preset_options(s.preset);
        o.connection.deflate.enabled = s.deflate;
        o.on_error = [](std::exception_ptr e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "connection failed: " << x.what() << '\n';
            }
        };
        if (s.cert.empty()) {
            corows::server srv(o);
            serve(srv, s);
            return 0;
        }
#ifdef COROWS_HAS_TLS
        // corows::tls_stream rather than asio::ssl::stream: an idle connection holds no buffers.
        using tls_stream = corows::tls_stream;
        asio::ssl::context tls(asio::ssl::context::tls_server);
        tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
        tls.use_certificate_chain_file(s.cert);
        tls.use_private_key_file(s.key, asio::ssl::context::pem);
        corows::basic_server<tls_stream> srv(o, [&tls](asio::ip::tcp::socket sock) {
            return tls_stream(std::move(sock), tls);
        });
        serve(srv, s);
        return 0;
#else
        throw std::invalid_argument("this build has no TLS (OpenSSL was not found)");
#endif
    } catch (const std::exception& e) {
        std::cerr << "echo_server: " << e.what() << '\n';
        return 1;
    }
}
