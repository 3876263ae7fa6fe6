// Chat server: serves the chat page at / and relays every message sent on /chat to everyone
// connected, the sender included, all on one port.
//
//   chat_server [--address 127.0.0.1] [--port 8080]
//
// Prints "listening on ADDR:PORT" once it accepts connections; Ctrl-C stops it gracefully.
#include "chat_html.hpp" // chat_html: examples/chat.html, compiled in

#include <corows/server.hpp>

#include <asio/experimental/awaitable_operators.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <array>
#include <csignal>
#include <deque>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using ws_type = corows::websocket<asio::ip::tcp::socket>;
using chat_message = std::shared_ptr<const corows::message>; // one copy, shared by all outboxes

// Broadcast policy: each member has its own outbox and its own sender coroutine, so a reader
// that keeps up never waits for one that does not. A member whose outbox grows past this is
// dropped (closed with 1008) rather than skipped: skipping would silently leave it with a
// wrong picture of the conversation, and either way memory stays bounded (this much plus the
// connection's own write queue limit).
constexpr std::size_t max_backlog_bytes = 1024 * 1024;

struct member {
    explicit member(ws_type& w) : ws(w), wake(w.get_executor(), std::chrono::steady_clock::time_point::max()) {}
    ws_type& ws;
    std::deque<chat_message> outbox;
    std::size_t backlog = 0; // bytes in outbox
    bool too_slow = false;
    asio::steady_timer wake; // never expires: cancel() is the wake-up call
};

// Everyone on /chat. The server runs one thread, so the room needs no lock.
class room {
public:
    void join(const std::shared_ptr<member>& m) { members_.insert(m); }
    void leave(const std::shared_ptr<member>& m) { members_.erase(m); }

    void broadcast(const chat_message& msg) {
        for (const auto& m : members_) {
            if (m->too_slow) continue;
            if (m->backlog + msg->size() > max_backlog_bytes) {
                m->too_slow = true;
            } else {
                m->outbox.push_back(msg);
                m->backlog += msg->size();
            }
            m->wake.cancel();
        }
    }

private:
    std::set<std::shared_ptr<member>> members_;
};

// Both loops end normally on any failure, so that `||` below ends the other one.
asio::awaitable<void> receive(ws_type& ws, room& r) {
    corows::message m;
    for (;;) {
        std::error_code ec;
        co_await ws.read_message(m, ec);
        if (ec) co_return;
        r.broadcast(std::make_shared<const corows::message>(m)); // the copy owns its bytes
    }
}

asio::awaitable<void> send(std::shared_ptr<member> me) {
    std::error_code ec;
    for (;;) {
        if (me->too_slow) {
            co_await me->ws.close(static_cast<std::uint16_t>(corows::close_code::policy_violation),
                                  "too slow", ec);
            co_return;
        }
        if (!me->outbox.empty()) {
            chat_message msg = std::move(me->outbox.front());
            me->outbox.pop_front();
            me->backlog -= msg->size();
            co_await me->ws.write_message(*msg, ec);
            if (ec) co_return;
            continue;
        }
        co_await me->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) co_return;
    }
}

asio::awaitable<void> chat(ws_type& ws, const corows::http_request& req, room& r) {
    using namespace asio::experimental::awaitable_operators;
    co_await ws.accept(req);
    auto me = std::make_shared<member>(ws);
    r.join(me);
    struct leave_room {
        room& r;
        std::shared_ptr<member>& me;
        ~leave_room() { r.leave(me); }
    } leave{r, me};
    // Whichever ends first (the peer closed, or this member was dropped) ends the other.
    co_await (receive(ws, r) || send(me));
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
