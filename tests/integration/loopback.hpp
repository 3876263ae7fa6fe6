// SPDX-License-Identifier: BSL-1.0
// Loopback fixtures: a corows server and client against each other (run_pair), and a raw TCP
// peer that speaks the protocol byte by byte, to play a misbehaving client or server.
#pragma once

#include <corows/protocol/frame.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/mask.hpp>
#include <corows/websocket.hpp>

#include "read_or_closed.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows::test {

using tcp = asio::ip::tcp;
using tcp_ws = websocket<tcp::socket>;
using side = std::function<asio::awaitable<void>(tcp_ws&)>;
using bytes = std::vector<std::uint8_t>;

/// The message of an exception, for a test failure report.
inline std::string describe(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
    }
    return "unknown exception";
}

/// An io_context with a loopback listener. Coroutines spawned on it are checked by run():
/// each must finish, without an exception, within the time limit.
class loop {
public:
    /// Listens on 127.0.0.1 at a free port.
    loop() : acceptor_(ctx_, {asio::ip::make_address("127.0.0.1"), 0}) {}

    /// The io_context everything runs on.
    asio::io_context& ctx() noexcept { return ctx_; }
    /// The listening acceptor.
    tcp::acceptor& acceptor() noexcept { return acceptor_; }
    /// The listener's address.
    tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }
    /// "127.0.0.1:port", the Host value for a handshake.
    std::string host() const { return "127.0.0.1:" + std::to_string(endpoint().port()); }

    /// Runs `f` as a coroutine named `name` once run() starts.
    void spawn(std::string name, std::function<asio::awaitable<void>()> f) {
        tasks_.push_back(task{std::move(name), false, nullptr});
        task* t = &tasks_.back();
        ++running_;
        asio::co_spawn(ctx_, std::move(f), [this, t](std::exception_ptr e) {
            t->error = e;
            t->done = true;
            --running_;
        });
    }

    /// Runs the io_context until every task finished or `limit` passed; reports each task that
    /// threw or did not finish as a test failure. Returns true if all finished cleanly.
    bool run(std::chrono::milliseconds limit) {
        auto deadline = std::chrono::steady_clock::now() + limit;
        // Background work (timers of closed connections) may outlive the tasks: stop as soon
        // as the tasks are done instead of waiting for the context to run dry.
        while (running_ > 0 && std::chrono::steady_clock::now() < deadline) {
            if (ctx_.run_one_until(deadline) == 0) break;
        }
        bool ok = true;
        for (const auto& t : tasks_) {
            if (!t.done) {
                BOOST_ERROR(t.name << " did not finish within " << limit.count() << " ms");
                ok = false;
            } else if (t.error) {
                BOOST_ERROR(t.name << ": " << describe(t.error));
                ok = false;
            }
        }
        // Run what is ready (writes of closed connections finishing); timers still pending
        // are destroyed with the context.
        ctx_.poll();
        return ok;
    }

    /// Accepts one connection and wraps it in a websocket (handshake not done yet).
    asio::awaitable<tcp_ws> accept_ws(const options& opts) {
        tcp::socket sock = co_await acceptor_.async_accept(asio::use_awaitable);
        co_return tcp_ws(std::move(sock), opts);
    }
    /// Connects to the listener and wraps the socket in a websocket (handshake not done yet).
    asio::awaitable<tcp_ws> connect_ws(const options& opts) {
        tcp::socket sock(ctx_);
        co_await sock.async_connect(endpoint(), asio::use_awaitable);
        co_return tcp_ws(std::move(sock), opts);
    }

private:
    struct task {
        std::string name;
        bool done;
        std::exception_ptr error;
    };
    asio::io_context ctx_;
    tcp::acceptor acceptor_;
    std::list<task> tasks_; // stable addresses for the completion handlers
    std::size_t running_ = 0;
};

/// Runs `server` and `client` on an accepted/connected pair; fails the test on an exception
/// or if either side has not finished within `limit`.
inline void run_pair(const options& server_opts, const options& client_opts, side server, side client,
                     std::chrono::seconds limit = std::chrono::seconds(60)) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(server_opts);
        co_await ws.accept();
        co_await server(ws);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(client_opts);
        co_await ws.handshake(l.host(), "/");
        co_await client(ws);
    });
    l.run(limit);
}

// ------------------------------------------------------------------------------ raw frames

/// A reserved (undefined) data opcode, for violation tests.
inline constexpr std::uint8_t reserved_data_opcode = 0x3;

/// One frame as it travels, for crafting and inspecting bytes by hand.
struct raw_frame {
    std::uint8_t op = 0x1;
    bool fin = true;
    std::uint8_t rsv = 0;      ///< RSV1 = 4, RSV2 = 2, RSV3 = 1
    bool masked = false;
    bytes payload;             ///< unmasked
};

/// Encodes `f` with a header announcing `length` payload bytes, however many `f.payload`
/// holds (to send a header alone, or a frame in pieces); masks with a fixed key if f.masked.
inline bytes encode_announcing(const raw_frame& f, std::uint64_t length) {
    frame_header h;
    h.op = static_cast<opcode>(f.op);
    h.fin = f.fin;
    h.rsv1 = (f.rsv & 4) != 0;
    h.rsv2 = (f.rsv & 2) != 0;
    h.rsv3 = (f.rsv & 1) != 0;
    h.masked = f.masked;
    h.key = {0x37, 0xfa, 0x21, 0x3d};
    h.payload_length = length;
    std::array<std::uint8_t, max_frame_header_size> head{};
    std::size_t n = encode_frame_header(h, head);
    bytes out(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(n));
    std::size_t at = out.size();
    out.insert(out.end(), f.payload.begin(), f.payload.end());
    if (f.masked) apply_mask(std::span<std::uint8_t>(out).subspan(at), h.key);
    return out;
}

/// Encodes `f` whole.
inline bytes encode(const raw_frame& f) { return encode_announcing(f, f.payload.size()); }

/// A frame a client sends (masked).
inline bytes client_frame(std::uint8_t op, std::string_view payload, bool fin = true, std::uint8_t rsv = 0) {
    return encode(raw_frame{op, fin, rsv, true, bytes(payload.begin(), payload.end())});
}
/// A frame a server sends (unmasked).
inline bytes server_frame(std::uint8_t op, std::string_view payload, bool fin = true, std::uint8_t rsv = 0) {
    return encode(raw_frame{op, fin, rsv, false, bytes(payload.begin(), payload.end())});
}
/// A close frame payload: the code in network order, then the reason.
inline std::string close_payload(std::uint16_t code, std::string_view reason) {
    std::string p{static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
    p += reason;
    return p;
}
// An overload, not a default argument: these calls sit inside co_await expressions.
/// A close frame payload with a code and no reason.
inline std::string close_payload(std::uint16_t code) { return close_payload(code, std::string_view{}); }
/// Concatenates byte strings. (Variadic, not an initializer_list: GCC 12 miscompiles
/// initializer lists inside coroutines.)
template <class... Parts>
bytes concat(const Parts&... parts) {
    bytes out;
    (out.insert(out.end(), parts.begin(), parts.end()), ...);
    return out;
}

/// A peer on a plain socket that writes whatever bytes a test gives it and parses what it
/// reads independently of corows' decoder. Every read gives up after `timeout`.
class raw_peer {
public:
    /// Wraps a connected socket.
    explicit raw_peer(tcp::socket s) : sock_(std::move(s)) {}

    /// The socket.
    tcp::socket& socket() noexcept { return sock_; }
    /// Bytes received and not consumed yet.
    std::string& buffered() noexcept { return buf_; }
    /// Bounds every later read.
    void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }

    /// Sends `data` (throws on failure).
    asio::awaitable<void> send(std::span<const std::uint8_t> data) {
        co_await asio::async_write(sock_, asio::buffer(data.data(), data.size()), asio::use_awaitable);
    }
    /// Sends `data`; returns the error instead of throwing (the peer may have hung up).
    asio::awaitable<corows::error_code> try_send(std::span<const std::uint8_t> data) {
        corows::error_code ec;
        co_await asio::async_write(sock_, asio::buffer(data.data(), data.size()),
                                   asio::redirect_error(asio::use_awaitable, ec));
        co_return ec;
    }
    /// Sends text as is.
    asio::awaitable<void> send_text(std::string_view data) {
        co_await asio::async_write(sock_, asio::buffer(data.data(), data.size()), asio::use_awaitable);
    }

    /// Reads more bytes into the buffer; false on EOF, error or timeout (`last_error()` says).
    asio::awaitable<bool> fill() {
        using namespace asio::experimental::awaitable_operators;
        // The chunk lives in the peer, not in this coroutine's frame: GCC's sanitizer builds
        // warn (-Wmismatched-new-delete) about Asio's allocation of frames that large.
        chunk_.resize(65536);
        asio::steady_timer timer(sock_.get_executor());
        timer.expires_after(timeout_);
        corows::error_code ec;
        std::size_t n = 0;
        auto r = co_await (
            sock_.async_read_some(asio::buffer(chunk_), asio::redirect_error(asio::use_awaitable, ec)) ||
            timer.async_wait(asio::use_awaitable));
        if (r.index() == 1) {
            last_error_ = asio::error::timed_out;
            co_return false;
        }
        n = std::get<0>(r);
        if (ec) {
            last_error_ = ec;
            co_return false;
        }
        buf_.append(chunk_.data(), n);
        co_return true;
    }

    /// Ensures `n` bytes are buffered; false if the stream ended first.
    asio::awaitable<bool> need(std::size_t n) {
        while (buf_.size() < n) {
            bool more = co_await fill();
            if (!more) co_return false;
        }
        co_return true;
    }

    /// Reads an HTTP head up to and including the blank line; empty if the stream ended.
    asio::awaitable<std::string> read_head() {
        for (;;) {
            auto end = buf_.find("\r\n\r\n");
            if (end != std::string::npos) {
                std::string head = buf_.substr(0, end + 4);
                buf_.erase(0, end + 4);
                co_return head;
            }
            bool more = co_await fill();
            if (!more) co_return std::string{};
        }
    }

    /// Reads everything until the peer closes (or the timeout); returns it.
    asio::awaitable<std::string> read_to_end() {
        for (;;) {
            bool more = co_await fill();
            if (!more) break;
        }
        std::string all = std::move(buf_);
        buf_.clear();
        co_return all;
    }

    /// Reads one frame; nullopt on EOF, error or timeout.
    asio::awaitable<std::optional<raw_frame>> read_frame() {
        bool ok = co_await need(2);
        if (!ok) co_return std::nullopt;
        auto b = [this](std::size_t i) { return static_cast<std::uint8_t>(buf_[i]); };
        raw_frame f;
        f.fin = (b(0) & 0x80) != 0;
        f.rsv = static_cast<std::uint8_t>((b(0) >> 4) & 7);
        f.op = b(0) & 0x0f;
        f.masked = (b(1) & 0x80) != 0;
        std::uint64_t len = b(1) & 0x7f;
        std::size_t at = 2;
        std::size_t ext = len == 126 ? 2 : (len == 127 ? 8 : 0);
        ok = co_await need(at + ext + (f.masked ? 4 : 0));
        if (!ok) co_return std::nullopt;
        if (ext) {
            len = 0;
            for (std::size_t i = 0; i < ext; ++i) len = len << 8 | b(at + i);
            at += ext;
        }
        mask_key key{};
        if (f.masked) {
            for (std::size_t i = 0; i < 4; ++i) key[i] = b(at + i);
            at += 4;
        }
        ok = co_await need(at + static_cast<std::size_t>(len));
        if (!ok) co_return std::nullopt;
        f.payload.assign(buf_.begin() + static_cast<std::ptrdiff_t>(at),
                         buf_.begin() + static_cast<std::ptrdiff_t>(at + len));
        if (f.masked) apply_mask(f.payload, key);
        buf_.erase(0, at + static_cast<std::size_t>(len));
        co_return f;
    }

    /// True once a read found the end of the stream (not a timeout).
    bool saw_eof() const noexcept { return last_error_ == asio::error::eof || last_error_ == asio::error::connection_reset; }
    /// Why the last read stopped.
    corows::error_code last_error() const noexcept { return last_error_; }

    // ------------------------------------------------------------------ handshakes

    /// Client: sends a valid upgrade request (with `extra_lines`, each ending in CRLF, added
    /// to the head) and checks the 101 answer; returns the response head.
    asio::awaitable<std::string> upgrade(std::string host, std::string extra_lines) {
        std::string req = "GET / HTTP/1.1\r\nHost: " + host +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          "Sec-WebSocket-Version: 13\r\n" + extra_lines + "\r\n";
        co_await send_text(req);
        std::string head = co_await read_head();
        BOOST_REQUIRE_MESSAGE(head.rfind("HTTP/1.1 101 ", 0) == 0, "not a 101: " << head);
        BOOST_REQUIRE(head.find("Sec-WebSocket-Accept: " + accept_key("dGhlIHNhbXBsZSBub25jZQ==")) !=
                      std::string::npos);
        co_return head;
    }

    /// Server: reads the upgrade request; returns its head (empty if the stream ended).
    asio::awaitable<std::string> read_request() { co_return co_await read_head(); }

    /// Server: answers `request` with a 101 whose accept key is right, plus `extra_lines`.
    asio::awaitable<void> answer_101(const std::string& request, std::string extra_lines) {
        co_await send_text(switching_protocols(request, extra_lines));
    }

    /// The 101 answer to `request` with the right accept key and `extra_lines` (CRLF each).
    static std::string switching_protocols(const std::string& request, const std::string& extra_lines) {
        return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: " + accept_key(key_of(request)) + "\r\n" + extra_lines + "\r\n";
    }

    /// The Sec-WebSocket-Key value of a request head.
    static std::string key_of(const std::string& request) {
        const std::string name = "Sec-WebSocket-Key: ";
        auto at = request.find(name);
        if (at == std::string::npos) return {};
        at += name.size();
        return request.substr(at, request.find("\r\n", at) - at);
    }

private:
    tcp::socket sock_;
    std::string buf_;
    std::vector<char> chunk_;
    std::chrono::milliseconds timeout_{5000};
    corows::error_code last_error_;
};

/// Connects a raw peer to the loop's listener.
inline asio::awaitable<raw_peer> connect_raw(loop& l) {
    tcp::socket sock(l.ctx());
    co_await sock.async_connect(l.endpoint(), asio::use_awaitable);
    sock.set_option(tcp::no_delay(true));
    co_return raw_peer(std::move(sock));
}

/// Accepts a raw peer from the loop's listener.
inline asio::awaitable<raw_peer> accept_raw(loop& l) {
    tcp::socket sock = co_await l.acceptor().async_accept(asio::use_awaitable);
    sock.set_option(tcp::no_delay(true));
    co_return raw_peer(std::move(sock));
}

/// The close code and reason of a close frame's payload (1005 and "" for an empty one).
struct close_info {
    std::uint16_t code = 0;
    std::string reason;
};

/// Decodes a close payload.
inline close_info parse_close(const raw_frame& f) {
    close_info c{1005, {}};
    if (f.payload.size() >= 2) {
        c.code = static_cast<std::uint16_t>(f.payload[0] << 8 | f.payload[1]);
        c.reason.assign(f.payload.begin() + 2, f.payload.end());
    }
    return c;
}

/// Reads the next frame, requires it to be a close frame, and returns its code and reason.
inline asio::awaitable<close_info> expect_close(raw_peer& p) {
    auto f = co_await p.read_frame();
    BOOST_REQUIRE_MESSAGE(f.has_value(), "no close frame: " << p.last_error().message());
    BOOST_REQUIRE_MESSAGE(f->op == 0x8, "expected a close frame, got opcode " << int(f->op));
    BOOST_TEST(f->fin);
    co_return parse_close(*f);
}

/// Reads until the end of the stream; true if it ended (EOF or reset) rather than timed out.
/// Any byte before the end fails the test.
inline asio::awaitable<bool> expect_eof(raw_peer& p) {
    std::string rest = co_await p.read_to_end();
    BOOST_TEST(rest.empty(), "unexpected bytes before EOF: " << rest.size());
    co_return p.saw_eof();
}

/// Runs a corows server body (which calls accept itself) against a raw client body.
inline void run_raw_client(const options& server_opts, side server,
                           std::function<asio::awaitable<void>(raw_peer&, loop&)> client,
                           std::chrono::milliseconds limit = std::chrono::milliseconds(10'000)) {
    loop l;
    l.spawn("corows server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(server_opts);
        co_await server(ws);
    });
    l.spawn("raw client", [&]() -> asio::awaitable<void> {
        raw_peer p = co_await connect_raw(l);
        co_await client(p, l);
    });
    l.run(limit);
}

/// Runs a corows client body (which calls handshake itself) against a raw server body.
inline void run_raw_server(const options& client_opts,
                           std::function<asio::awaitable<void>(tcp_ws&, loop&)> client,
                           std::function<asio::awaitable<void>(raw_peer&)> server,
                           std::chrono::milliseconds limit = std::chrono::milliseconds(10'000)) {
    loop l;
    l.spawn("raw server", [&]() -> asio::awaitable<void> {
        raw_peer p = co_await accept_raw(l);
        co_await server(p);
    });
    l.spawn("corows client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(client_opts);
        co_await client(ws, l);
    });
    l.run(limit);
}

/// A raw handler's upgrade (server::run_raw): reads the request and accepts it with the
/// default decision; false, and the handler should end, if either failed.
template <class Stream>
asio::awaitable<bool> read_and_accept(websocket<Stream>& ws) {
    auto [ec, req] = co_await ws.read_request(corows::use_tuple);
    if (ec) co_return false;
    auto [accepted] = co_await ws.accept(req, accept_decision(), corows::use_tuple);
    co_return !accepted;
}

/// Suspends the calling coroutine for `d`.
inline asio::awaitable<void> sleep(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::use_awaitable);
}

/// A one-shot signal between coroutines of one loop. It polls, so it holds no I/O object and
/// may outlive the loop.
class event {
public:
    /// Wakes the waiter (now or when it comes).
    void set() noexcept { set_ = true; }
    /// True once set.
    bool is_set() const noexcept { return set_; }
    /// Completes once set().
    asio::awaitable<void> wait() {
        while (!set_) co_await sleep(std::chrono::milliseconds(2));
    }

private:
    bool set_ = false;
};

/// A gate many coroutines of one io_context wait at until it opens. Holds a timer: destroy
/// it before the io_context.
class gate {
public:
    /// A closed gate on `ctx`.
    explicit gate(asio::io_context& ctx) : timer_(ctx, asio::steady_timer::time_point::max()) {}
    /// Lets every waiter through, now and later.
    void open() {
        open_ = true;
        timer_.cancel();
    }
    /// Completes once open() was called.
    asio::awaitable<void> wait() {
        while (!open_) {
            corows::error_code ec;
            co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }

private:
    asio::steady_timer timer_;
    bool open_ = false;
};

/// Milliseconds since `start`.
inline long long ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

/// corows::make_error_code, short for assertions.
inline corows::error_code err(error e) { return make_error_code(e); }

} // namespace corows::test
