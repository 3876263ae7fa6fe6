// Chat server: serves the chat page at / and relays every message sent on /chat to everyone
// connected, the sender included, all on one port.
//
//   chat_server [--address 127.0.0.1] [--port 8080]
//
// Prints "listening on ADDR:PORT" once it accepts connections; Ctrl-C stops it gracefully.
#include "chat_html.hpp" // chat_html: examples/chat.html, compiled in

#include <corows/prepared_message.hpp>
#include <corows/server.hpp>

#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <array>
#include <csignal>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using ws_type = corows::websocket<asio::ip::tcp::socket>;

// Everyone on /chat. The server runs one thread, so the room needs no lock.
class room {
public:
    void join(ws_type& ws) { members_.insert(&ws); }
    void leave(ws_type& ws) { members_.erase(&ws); }

    // One prepared message for everyone: framed (and compressed, for the usual no-context-
    // takeover browsers) once, and queued by reference on every connection, not copied.
    void broadcast(const corows::message& m) {
        auto pm = corows::prepared_message::make(m.data(), m.kind());
        for (ws_type* ws : members_) {
            if (ws->send(pm) || !ws->is_open()) continue;
            // Its queue is full (options::write_queue_limit): a reader that does not keep up
            // is dropped rather than skipped, since skipping would silently give it a wrong
            // picture of the conversation. Memory stays bounded either way. start_close sends
            // the close once (later broadcasts find it closing and do nothing more), and the
            // member's read loop finishes the handshake or the close timeout cuts it.
            ws->start_close(static_cast<std::uint16_t>(corows::close_code::policy_violation), "too slow");
        }
    }

private:
    std::set<ws_type*> members_;
};

asio::awaitable<void> chat(ws_type& ws, const corows::http_request& req, room& r) {
    co_await ws.accept(req);
    r.join(ws);
    struct leave_room {
        room& r;
        ws_type& ws;
        ~leave_room() { r.leave(ws); }
    } leave{r, ws};
    corows::message m;
    for (;;) {
        std::error_code ec;
        co_await ws.read_message(m, ec);
        if (ec) co_return;
        r.broadcast(m);
    }
}

asio::awaitable<void> page(ws_type& ws, const corows::http_request& req) {
    std::string head = "HTTP/1.1 200 OK\r\n"
                       "Content-Type: text/html; charset=utf-8\r\n"
                       "Content-Length: " + std::to_string(chat_html.size()) + "\r\n"
                       "Cache-Control: no-cache\r\n"
                       "Connection: close\r\n\r\n";
    std::string_view body = req.method == "HEAD" ? std::string_view{} : chat_html;
    std::array<asio::const_buffer, 2> parts{asio::buffer(head), asio::buffer(body.data(), body.size())};
    std::error_code ec;
    co_await asio::async_write(ws.next_layer(), parts, asio::redirect_error(asio::use_awaitable, ec));
    // Half-close first, so that the browser gets the whole page before the connection goes.
    ws.next_layer().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

// One port for both: the page over plain HTTP, the chat as a WebSocket upgrade.
asio::awaitable<void> route(ws_type& ws, room& r) {
    std::error_code ec;
    corows::http_request req = co_await ws.read_request(ec);
    if (ec) co_return; // silent, garbled or too large: nothing worth answering
    std::string_view path = req.path();
    if (path == "/chat") {
        co_await chat(ws, req, r);
    } else if (path != "/" && path != "/index.html") {
        co_await ws.refuse(404, "not found\n", {});
    } else if (req.method != "GET" && req.method != "HEAD") {
        co_await ws.refuse(405, "GET only\n", {});
    } else {
        co_await page(ws, req);
    }
}

} // namespace

int main(int argc, char** argv) {
    try {
        std::string address = "127.0.0.1";
        unsigned short port = 8080;
        for (int i = 1; i < argc; ++i) {
            std::string_view arg = argv[i];
            if (i + 1 >= argc) throw std::invalid_argument("usage: chat_server [--address A] [--port N]");
            if (arg == "--address") address = argv[++i];
            else if (arg == "--port") port = static_cast<unsigned short>(std::stoul(argv[++i]));
            else throw std::invalid_argument("unknown argument " + std::string(arg));
        }
        corows::server_options o; // one thread: see room
        o.connection.max_message_size = 64 * 1024;
        o.connection.deflate.enabled = true;
        o.connection.ping_interval = std::chrono::seconds(30); // keeps idle browsers' proxies open
        corows::server srv(o);
        auto ep = srv.listen({asio::ip::make_address(address), port});
        room r;
        asio::signal_set signals(srv.get_executor(), SIGINT, SIGTERM);
        signals.async_wait([&srv](std::error_code ec, int) {
            if (!ec) srv.stop();
        });
        std::cout << "listening on " << ep.address().to_string() << ':' << ep.port() << std::endl;
        srv.run_raw([&r](ws_type& ws) { return route(ws, r); });
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "chat_server: " << e.what() << '\n';
        return 1;
    }
}
