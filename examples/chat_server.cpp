// SPDX-License-Identifier: BSL-1.0
// Chat server: serves the chat page at /, relays every message sent on /chat?room=NAME to
// everyone in that room (the sender included), and answers load balancers' health checks at
// /healthz and Prometheus' scrapes at /metrics, all on one port. Rooms are topics of a corows::hub, so they span the server's
// threads and, with --redis, every node of a cluster.
//
//   chat_server [--address 127.0.0.1] [--port 8080] [--threads 1] [--name NODE]
//               [--redis HOST:PORT] [--redis-password P]
//               [--drain-notice-ms 0] [--drain-window-ms 1000]
//               [--max-connections N] [--max-connections-per-address N]
//               [--max-handshakes N] [--handshake-timeout-ms N]
//               [--log-level debug|info|warning|error|off]
//
// Prints "listening on ADDR:PORT" once it accepts connections. SIGTERM or Ctrl-C drains it:
// /healthz answers 503 for the notice, then every client is closed with 1012 (service
// restart) at a random moment of the window, so that they reconnect to the other nodes
// gradually; then it exits.
#include "chat_html.hpp" // chat_html: examples/chat.html, compiled in
#include "stderr_log.hpp"

#include <corows/hub.hpp>
#include <corows/metrics.hpp>
#include <corows/server.hpp>
#if defined(COROWS_HAS_REDIS)
#include <corows/redis_backplane.hpp>
#endif

#include <asio/signal_set.hpp>
#include <asio/write.hpp>

#include <array>
#include <atomic>
#include <cctype>
#include <functional>
#include <csignal>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using ws_type = corows::websocket<asio::ip::tcp::socket>;

// What every connection shares: the rooms and the figures /healthz reports.
struct chat_state {
    corows::hub& rooms;
    corows::server& srv;
    std::string node;
    std::atomic<long> members{0};
    // The cluster's link, for /metrics (none without --redis); set before the server runs.
    std::function<corows::backplane_metrics()> backplane_metrics{};
};

// The room a /chat request names (?room=NAME, letters, digits, '-' and '_', at most 64), "lobby"
// when it names none; empty for a name that is not allowed.
std::string room_of(const corows::http_request& req) {
    const auto name = req.query_param("room");
    if (!name) return "lobby";
    if (name->empty() || name->size() > 64) return {};
    for (char c : *name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return {};
    return *name;
}

asio::awaitable<void> chat(ws_type& ws, const corows::http_request& req, chat_state& st) {
    std::string room = room_of(req);
    if (room.empty()) {
        co_await ws.refuse(400, "room names are 1 to 64 letters, digits, '-' or '_'\n", {});
        co_return;
    }
    co_await ws.accept(req);
    // A member whose queue fills is closed with 1008 (the hub's default policy): skipping
    // messages would silently give it a wrong picture of the conversation.
    std::string topic = "room:" + room;
    st.rooms.subscribe(ws, topic);
    ++st.members;
    struct counted {
        std::atomic<long>& n;
        ~counted() { --n; }
    } count{st.members};
    corows::message m;
    for (;;) {
        auto [ec, more] = co_await ws.read_message(m, corows::use_tuple);
        if (ec || !more) co_return; // the hub forgets a closed connection by itself
        st.rooms.publish(topic, m);
    }
}

// A plain-text answer that closes the connection.
asio::awaitable<void> answer(ws_type& ws, const corows::http_request& req, int status, std::string_view type,
                             std::string_view body) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Service Unavailable") +
                       "\r\nContent-Type: " + std::string(type) +
                       "\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if (req.method == "HEAD") body = {};
    std::array<asio::const_buffer, 2> parts{asio::buffer(head), asio::buffer(body.data(), body.size())};
    std::error_code ec;
    co_await asio::async_write(ws.next_layer(), parts, asio::redirect_error(asio::use_awaitable, ec));
    // Half-close first, so that the client gets the whole answer before the connection goes.
    ws.next_layer().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

// One port for everything: the page, the health check, and the chat as a WebSocket upgrade.
asio::awaitable<void> route(ws_type& ws, chat_state& st) {
    auto [ec, req] = co_await ws.read_request(corows::use_tuple);
    if (ec) co_return; // silent, garbled or too large: nothing worth answering
    std::string_view path = req.path();
    if (path == "/chat") {
        co_await chat(ws, req, st);
    } else if (path != "/" && path != "/index.html" && path != "/healthz" && path != "/metrics") {
        co_await ws.refuse(404, "not found\n", {});
    } else if (req.method != "GET" && req.method != "HEAD") {
        co_await ws.refuse(405, "GET only\n", {});
    } else if (path == "/healthz") {
        // 503 from the first moment of a drain: the balancer sends new clients elsewhere.
        bool draining = st.srv.draining();
        std::string body = std::string(draining ? "draining" : "ok") + " node=" + st.node +
                           " members=" + std::to_string(st.members.load()) + "\n";
        co_await answer(ws, req, draining ? 503 : 200, "text/plain", body);
    } else if (path == "/metrics") {
        // For Prometheus: this server's counts, summed over its threads, and its rooms'.
        std::string text = corows::to_prometheus(st.srv.metrics());
        corows::write_prometheus(text, st.rooms.metrics());
        if (st.backplane_metrics) corows::write_prometheus(text, st.backplane_metrics());
        co_await answer(ws, req, 200, corows::prometheus_content_type, text);
    } else {
        co_await answer(ws, req, 200, "text/html; charset=utf-8", chat_html);
    }
}

struct settings {
    std::string address = "127.0.0.1";
    unsigned short port = 8080;
    std::size_t threads = 1;
    std::string name;
    std::string redis; // HOST:PORT
    std::string redis_password;
    long drain_notice_ms = 0;
    long drain_window_ms = 1000;
    corows::server_options limits; // admission: only its limits are read
    std::string log_level = "warning";
};

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (i + 1 >= argc)
            throw std::invalid_argument("usage: chat_server [--address A] [--port N] [--threads N] [--name NODE] "
                                        "[--redis HOST:PORT] [--redis-password P] [--drain-notice-ms N] "
                                        "[--drain-window-ms N] [--max-connections N] [--max-connections-per-address N] "
                                        "[--max-handshakes N] [--handshake-timeout-ms N] [--log-level L]");
        std::string value = argv[++i];
        if (arg == "--address") s.address = value;
        else if (arg == "--port") s.port = static_cast<unsigned short>(std::stoul(value));
        else if (arg == "--threads") s.threads = std::stoul(value);
        else if (arg == "--name") s.name = value;
        else if (arg == "--redis") s.redis = value;
        else if (arg == "--redis-password") s.redis_password = value;
        else if (arg == "--drain-notice-ms") s.drain_notice_ms = std::stol(value);
        else if (arg == "--drain-window-ms") s.drain_window_ms = std::stol(value);
        else if (arg == "--max-connections") s.limits.max_connections = std::stoul(value);
        else if (arg == "--max-connections-per-address") s.limits.max_connections_per_address = std::stoul(value);
        else if (arg == "--max-handshakes") s.limits.max_handshakes = std::stoul(value);
        else if (arg == "--handshake-timeout-ms")
            s.limits.connection.handshake_timeout = std::chrono::milliseconds(std::stol(value));
        else if (arg == "--log-level") s.log_level = value;
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
    return s;
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings s = parse(argc, argv);
        corows::server_options o;
        o.threads = s.threads;
        o.max_connections = s.limits.max_connections;
        o.max_connections_per_address = s.limits.max_connections_per_address;
        o.max_handshakes = s.limits.max_handshakes;
        o.connection.handshake_timeout = s.limits.connection.handshake_timeout;
        o.connection.max_message_size = 64 * 1024;
        o.connection.deflate.enabled = true;
        o.log = examples::stderr_log(s.log_level);
        corows::server srv(o);
        auto ep = srv.listen({asio::ip::make_address(s.address), s.port});
        if (s.name.empty()) s.name = ep.address().to_string() + ":" + std::to_string(ep.port());

        // Declared after the server: the backplane runs on the server's first io_context, and
        // whatever of it is still pending there when run() returns goes with that io_context.
        corows::hub_options ho;
#if defined(COROWS_HAS_REDIS)
        std::shared_ptr<corows::redis_backplane> redis;
#endif
        if (!s.redis.empty()) {
#if defined(COROWS_HAS_REDIS)
            corows::redis_options ro;
            auto colon = s.redis.rfind(':');
            if (colon == std::string::npos) throw std::invalid_argument("--redis wants HOST:PORT");
            ro.host = s.redis.substr(0, colon);
            ro.port = static_cast<unsigned short>(std::stoul(s.redis.substr(colon + 1)));
            ro.password = s.redis_password;
            // Connections lost and back, and the gaps, on stderr with the rest of the log.
            ro.log = o.log;
            redis = corows::redis_backplane::create(srv.context(0).get_executor(), ro);
            ho.backplane = redis;
#else
            throw std::invalid_argument("--redis: this build has no Redis backplane (hiredis was not found)");
#endif
        }
        corows::hub rooms(ho);
#if defined(COROWS_HAS_REDIS)
        if (redis) redis->start();
#endif
        chat_state st{rooms, srv, s.name};
#if defined(COROWS_HAS_REDIS)
        if (redis) st.backplane_metrics = [redis] { return redis->metrics(); };
#endif

        asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
        signals.async_wait([&](std::error_code ec, int) {
            if (ec) return;
            corows::drain_options d;
            d.notice = std::chrono::milliseconds(s.drain_notice_ms);
            d.window = std::chrono::milliseconds(s.drain_window_ms);
            srv.stop(d);
        });
        std::cout << "listening on " << ep.address().to_string() << ':' << ep.port() << std::endl;
        // Other nodes' messages keep arriving until the drain has closed the last client.
        srv.run_http([&st](ws_type& ws) { return route(ws, st); });
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "chat_server: " << e.what() << '\n';
        return 1;
    }
}
