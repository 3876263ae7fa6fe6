// corows::websocket<Stream>: the awaitable WebSocket connection, both roles, over any Asio
// stream. It owns I/O only; every protocol rule lives in the sans-I/O core it drives.
#pragma once

#include <corows/detail/websocket_state.hpp>
#include <corows/error.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/message.hpp>
#include <corows/options.hpp>
#include <corows/protocol/permessage_deflate.hpp>
#include <corows/prepared_message.hpp>

#include <asio/awaitable.hpp>
#include <asio/bind_allocator.hpp>
#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows {

/// What a server adds to the 101 answer when it accepts.
struct accept_decision {
    /// The subprotocol to answer with (it must have been offered); nullopt: the first of
    /// options::subprotocols that the client offered, if any.
    std::optional<std::string> subprotocol;
    /// Extra response fields, e.g. Set-Cookie.
    std::vector<http_field> extra_fields;
};

/// What a client adds to its upgrade request.
struct handshake_request {
    std::string origin;                   ///< empty: no Origin field
    std::vector<http_field> extra_fields; ///< e.g. Authorization, Cookie
};

/// A WebSocket connection over `Stream` (asio::ip::tcp::socket, asio::ssl::stream<...>, or
/// anything with Asio's async_read_some/async_write_some and lowest_layer()).
///
/// At most one read_message() at a time; writes from several coroutines are serialised.
/// All operations of one connection must run on one thread at a time (one io_context thread,
/// or a strand as the stream's executor).
template <class Stream>
class basic_server;

template <class Stream>
class websocket {
    using state = detail::websocket_state<Stream>;
    using clock = std::chrono::steady_clock;
    // The server's event mode (run_events) drives reading through the private event steps.
    friend class basic_server<Stream>;

public:
    using executor_type = typename Stream::executor_type;

    /// Wraps a connected stream; the handshake is still to be done.
    explicit websocket(Stream stream, const options& opts = {})
        : websocket(std::move(stream), std::make_shared<const options>(opts)) {}
    /// Wraps a connected stream with settings shared with other connections (a server's).
    websocket(Stream stream, std::shared_ptr<const options> opts)
        : s_(std::make_shared<state>(std::move(stream), std::move(opts))) {}

    websocket(websocket&&) noexcept = default;
    /// Closes this connection's transport (if open) and takes over `other`'s.
    websocket& operator=(websocket&& other) noexcept {
        if (this != &other) {
            if (s_) s_->close_transport_now();
            s_ = std::move(other.s_);
        }
        return *this;
    }
    /// Closes the transport at once if still open; background timers and writes end with it.
    ~websocket() {
        if (s_) s_->close_transport_now();
    }

    /// The wrapped stream.
    Stream& next_layer() noexcept { return s_->stream; }
    /// The stream's executor.
    executor_type get_executor() { return s_->stream.get_executor(); }
    /// The options given at construction.
    const options& get_options() const noexcept { return s_->opts; }
    /// True between a successful handshake and the closing of the transport.
    bool is_open() const noexcept { return s_->open; }
    /// Bytes accepted by write operations and not yet written to the stream (at most about
    /// options::write_queue_limit plus one message: writers wait beyond it).
    std::size_t queued_bytes() const noexcept { return s_->queued(); }
    /// The negotiated subprotocol; empty if none.
    std::string_view subprotocol() const noexcept { return s_->subprotocol; }
    /// The negotiated permessage-deflate parameters, if compression is on.
    const std::optional<deflate_params>& deflate() const noexcept { return s_->deflate; }
    /// The peer's close code: 0 while open, 1005 if its close frame had none, 1006 if the
    /// transport dropped without a close frame.
    std::uint16_t close_code() const noexcept { return s_->peer_code; }
    /// The peer's close reason.
    std::string_view close_reason() const noexcept { return s_->peer_reason; }

    /// Called with each ping's payload (the pong is sent automatically).
    void on_ping(std::function<void(std::span<const std::uint8_t>)> f) { s_->callbacks_for_setting().on_ping = std::move(f); }
    /// Called with each pong's payload.
    void on_pong(std::function<void(std::span<const std::uint8_t>)> f) { s_->callbacks_for_setting().on_pong = std::move(f); }
    /// Called when the peer's close frame arrives, with its code and reason.
    void on_close(std::function<void(std::uint16_t, std::string_view)> f) { s_->callbacks_for_setting().on_close = std::move(f); }

    // ---------------------------------------------------------------- server handshake

    /// Server: reads the upgrade request and answers it (101, or 400/426/... and close).
    asio::awaitable<void> accept() { throw_if(co_await do_accept(s_)); }
    /// Server: as accept(), reporting failure in `ec` (the refusal has been sent).
    asio::awaitable<void> accept(std::error_code& ec) { ec = co_await do_accept(s_); }

    /// Server: reads one HTTP request head (for a custom server that routes, authenticates,
    /// or serves plain HTTP on the same port). Bytes after the head stay buffered.
    asio::awaitable<http_request> read_request() {
        std::error_code ec;
        http_request req = co_await read_request(ec);
        throw_if(ec);
        co_return req;
    }
    /// Server: as read_request(), reporting failure in `ec`.
    asio::awaitable<http_request> read_request(std::error_code& ec) {
        auto s = s_;
        http_request_parser parser(s->opts.http);
        arm_deadline(s, s->opts.handshake_timeout);
        ec = co_await read_head(s, parser);
        disarm_deadline(s);
        co_return parser.release();
    }

    /// Server: validates a request the application read and accepts it, or refuses it with
    /// the RFC's status and closes.
    asio::awaitable<void> accept(const http_request& req, accept_decision d) {
        return accept_or_throw(s_, req, std::make_shared<accept_decision>(std::move(d)));
    }
    /// Server: accept(req, {}).
    asio::awaitable<void> accept(const http_request& req) { return accept(req, accept_decision{}); }
    /// Server: as accept(req, d), reporting failure in `ec`.
    asio::awaitable<void> accept(const http_request& req, const accept_decision& d,
                                 std::error_code& ec) {
        upgrade_request up;
        ec = co_await accept_request(s_, req, d);
    }
    /// Server: accepts a request already validated with validate_upgrade_request().
    asio::awaitable<void> accept(const upgrade_request& up, const accept_decision& d,
                                 std::error_code& ec) {
        ec = co_await accept_upgrade(s_, up, d);
    }

    /// Server: refuses the request with `status`, a plain-text `body`, and closes.
    asio::awaitable<void> refuse(unsigned status, std::string_view body = {},
                                 std::span<const http_field> extra_fields = {}) {
        co_await write_and_close(s_, build_refusal_response(status, body, extra_fields));
    }

    // ---------------------------------------------------------------- client handshake

    /// Client: sends the upgrade request for `target` on `host` (with ":port" unless the
    /// default) and checks the answer, negotiating subprotocols and permessage-deflate.
    asio::awaitable<void> handshake(std::string host, std::string target, handshake_request extra) {
        return handshake_or_throw(s_, std::move(host), std::move(target),
                                  std::make_shared<handshake_request>(std::move(extra)));
    }
    // Overloads rather than default arguments: GCC 12 destroys a class-type default argument
    // of a call inside a co_await expression twice.
    /// Client: handshake(host, target, {}).
    asio::awaitable<void> handshake(std::string host, std::string target) {
        return handshake(std::move(host), std::move(target), handshake_request{});
    }
    /// Client: handshake(host, "/", {}).
    asio::awaitable<void> handshake(std::string host) {
        return handshake(std::move(host), "/", handshake_request{});
    }
    /// Client: as handshake(), reporting failure in `ec`.
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    std::error_code& ec) {
        ec = co_await do_handshake(s_, host, target, extra);
    }

    // ---------------------------------------------------------------- reading

    /// Reads the next message; nullopt once the connection closed (close_code() says how).
    /// Throws std::system_error on protocol violations, timeouts and I/O errors. If cancelled
    /// (e.g. `read_message() || timer`), it throws operation_aborted and the part of a
    /// message already received is kept for the next read_message().
    asio::awaitable<std::optional<message>> read_message() {
        // Assemble in the connection, not in this frame: a cancelled read must not take the
        // fragments it consumed down with it.
        auto s = s_;
        if (!s->assembly) s->assembly = std::make_unique<message>();
        std::error_code ec;
        co_await do_read(s, *s->assembly, &ec);
        if (ec == error::closed) co_return std::nullopt;
        throw_if(ec);
        message m = std::move(*s->assembly);
        m.own();
        co_return std::optional<message>(std::move(m));
    }
    /// Reads the next message into `m`, reusing its storage; false once the connection
    /// closed. An unfragmented uncompressed payload is borrowed from the receive buffer
    /// (valid until the next read). Throws like read_message(). A cancelled read leaves the
    /// part of a message already received in `m`: pass the same `m` to the next read.
    asio::awaitable<bool> read_message(message& m) { return do_read(s_, m, nullptr); }
    /// Reads the next message into `m`; error::closed once the connection closed.
    asio::awaitable<void> read_message(message& m, std::error_code& ec) { co_await do_read(s_, m, &ec); }

    // ---------------------------------------------------------------- writing

    /// Queues a message; completes once it is queued (or, if the queue is over its limit,
    /// once there is room). Compressed when permessage-deflate is on, `compress` is set and
    /// the message reaches the threshold.
    asio::awaitable<void> write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                        bool compress = true) {
        return write(s_, payload, kind, compress, nullptr);
    }
    /// As write_message(payload, kind, compress), reporting failure in `ec`.
    asio::awaitable<void> write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                        bool compress, std::error_code& ec) {
        return write(s_, payload, kind, compress, &ec);
    }
    /// Writes `m` with its own kind (an echo).
    asio::awaitable<void> write_message(const message& m) {
        return write(s_, m.data(), m.kind(), true, nullptr);
    }
    /// Writes `m` with its own kind, reporting failure in `ec`.
    asio::awaitable<void> write_message(const message& m, std::error_code& ec) {
        return write(s_, m.data(), m.kind(), true, &ec);
    }
    /// Writes a text message (`text` must be UTF-8).
    asio::awaitable<void> write_text(std::string_view text) {
        return write(s_, as_bytes(text), message_kind::text, true, nullptr);
    }
    /// Writes a binary message.
    asio::awaitable<void> write_binary(std::span<const std::uint8_t> data) {
        return write(s_, data, message_kind::binary, true, nullptr);
    }

    /// Queues a prepared message (a broadcast) without waiting: its frame is shared by
    /// reference, not copied, except where this connection needs other bytes (a client
    /// masks; a compressor with context takeover, or a frame_size, encodes its own). Returns
    /// false, queueing nothing, if the queue is at options::write_queue_limit (a consumer too
    /// slow for the broadcast: drop or close it), while a large message is being written from
    /// the caller's memory, or once the connection is closing or closed.
    bool send(const std::shared_ptr<const prepared_message>& pm) {
        const auto& s = s_;
        if (write_status(s) || !has_room(s)) return false;
        if (auto ec = queue_prepared(s, pm)) {
            asio::co_spawn(s->stream.get_executor(), fail(s, ec), asio::detached);
            return false;
        }
        return true;
    }
    /// Queues a message without waiting (from an event handler, or any code that cannot
    /// co_await). Returns false, queueing nothing, when send(pm) would: the queue is at
    /// options::write_queue_limit, a large message is being written from the caller's memory,
    /// or the connection is closing or closed.
    bool send(std::span<const std::uint8_t> payload, message_kind kind, bool compress = true) {
        const auto& s = s_;
        if (write_status(s) || !has_room(s)) return false;
        if (auto ec = s->writer.append_message(s->out(), kind, payload, compress)) {
            asio::co_spawn(s->stream.get_executor(), fail(s, ec), asio::detached);
            return false;
        }
        kick(s);
        return true;
    }
    /// Queues `m` with its own kind, like send(payload, kind) (an echo).
    bool send(const message& m) { return send(m.data(), m.kind()); }
    /// Queues a text message (`text` must be UTF-8), like send(payload, kind).
    bool send_text(std::string_view text) { return send(as_bytes(text), message_kind::text); }

    /// Queues a prepared message like send(), waiting for room (like write_message) instead
    /// of failing when the queue is full.
    asio::awaitable<void> write_prepared(std::shared_ptr<const prepared_message> pm) {
        auto s = s_;
        for (;;) {
            throw_if(write_status(s));
            if (has_room(s)) break;
            kick(s);
            throw_if(co_await wait(s));
        }
        if (auto ec = queue_prepared(s, pm)) throw_if(co_await fail(s, ec));
    }

    /// Sends a ping with up to 125 bytes of payload.
    asio::awaitable<void> ping(std::span<const std::uint8_t> payload = {}) {
        throw_if(co_await do_control(s_, opcode::ping, payload));
    }
    /// Sends an unsolicited pong with up to 125 bytes of payload.
    asio::awaitable<void> pong(std::span<const std::uint8_t> payload = {}) {
        throw_if(co_await do_control(s_, opcode::pong, payload));
    }
    /// As ping(payload), reporting failure in `ec`.
    asio::awaitable<void> ping(std::span<const std::uint8_t> payload, std::error_code& ec) {
        ec = co_await do_control(s_, opcode::ping, payload);
    }

    /// Completes when everything queued so far has been written to the stream.
    asio::awaitable<void> flush() { throw_if(co_await flush_queue(s_)); }
    /// As flush(), reporting failure in `ec`.
    asio::awaitable<void> flush(std::error_code& ec) { ec = co_await flush_queue(s_); }

    // ---------------------------------------------------------------- closing

    /// Starts the close handshake (RFC 6455 §7): sends close once, waits for the peer's close
    /// (or the close timeout), then closes the transport. `reason` is cut to 123 bytes.
    asio::awaitable<void> close(std::uint16_t code = 1000, std::string_view reason = {}) {
        throw_if(co_await do_close(s_, code, reason));
    }
    /// As close(code, reason), reporting failure in `ec`.
    asio::awaitable<void> close(std::uint16_t code, std::string_view reason, std::error_code& ec) {
        ec = co_await do_close(s_, code, reason);
    }
    /// Starts the close handshake without waiting: queues the close frame (once) and arms the
    /// close timeout. The connection's reader (read_message(), or a server's event mode)
    /// finishes it when the peer answers; without one, the close timeout closes the
    /// transport. Returns error::bad_close_code for a code that may not be sent.
    std::error_code start_close(std::uint16_t code = 1000, std::string_view reason = {}) {
        if (code != 0 && !is_sendable_close_code(code)) return error::bad_close_code;
        if (s_->open && !s_->close_sent) send_close(s_, code, reason);
        return {};
    }
    /// Closes the transport at once, without a close handshake.
    void abort() noexcept { s_->close_transport_now(); }

private:
    static void throw_if(std::error_code ec) {
        if (ec) throw std::system_error(ec);
    }

    static asio::awaitable<void> handshake_or_throw(std::shared_ptr<state> s, std::string host,
                                                    std::string target,
                                                    std::shared_ptr<handshake_request> extra) {
        throw_if(co_await do_handshake(s, host, target, *extra));
    }

    static asio::awaitable<std::error_code> accept_request(std::shared_ptr<state> s, const http_request& req,
                                                           const accept_decision& d) {
        upgrade_request up;
        if (auto ec = validate_upgrade_request(req, up)) {
            co_await write_and_close(s, build_refusal_response(ec));
            co_return ec;
        }
        co_return co_await accept_upgrade(s, up, d);
    }

    static asio::awaitable<void> accept_or_throw(std::shared_ptr<state> s, const http_request& req,
                                                 std::shared_ptr<accept_decision> d) {
        throw_if(co_await accept_request(s, req, *d));
    }

    // Closes the transport when `d` expires, unless the deadline is cancelled or re-armed.
    static void arm_deadline(const std::shared_ptr<state>& s, std::chrono::milliseconds d) {
        if (d.count() <= 0) return;
        auto& t = s->timer(s->deadline);
        t.expires_after(d);
        t.async_wait([w = std::weak_ptr<state>(s)](std::error_code ec) {
            if (ec) return;
            if (auto s = w.lock()) {
                s->timed_out = true;
                s->close_transport_now();
            }
        });
    }

    // Cancels the deadline and frees its timer: an open connection keeps none.
    static void disarm_deadline(const std::shared_ptr<state>& s) { s->deadline.reset(); }

    // Waits for notify(); returns operation_aborted only if this operation was cancelled.
    static asio::awaitable<std::error_code> wait(const std::shared_ptr<state>& s) {
        std::error_code ec;
        ++s->waiters;
        co_await s->timer(s->signal).async_wait(asio::redirect_error(asio::use_awaitable, ec));
        --s->waiters;
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) co_return asio::error::operation_aborted;
        co_return std::error_code{};
    }

    // ---------------------------------------------------------------- reading internals

    // A plain TCP socket can be waited on without a buffer (an Asio SSL stream cannot: it may
    // hold decrypted bytes the socket no longer shows).
    static constexpr bool waits_without_buffer = requires(Stream& st, std::error_code& ec) {
        st.async_wait(asio::socket_base::wait_read, asio::use_awaitable);
        st.non_blocking(true, ec);
        st.read_some(asio::mutable_buffer{}, ec);
    };

    // Moves the undecoded tail to the front, once per socket read.
    static void begin_read(const std::shared_ptr<state>& s) {
        if (s->rpos == s->rbuf.size()) {
            s->rbuf.clear();
            if (s->rbuf.capacity() > 2 * state::max_read_size) s->rbuf.shrink_to(0);
        } else if (s->rpos > 0) {
            s->rbuf.consume(s->rpos);
        }
        s->rpos = 0;
    }

    // Plain TCP: sets the socket's user-level non-blocking mode, once; false if that failed.
    static bool make_nonblocking(const std::shared_ptr<state>& s, std::error_code& ec) {
        if (!s->nonblocking) {
            s->stream.non_blocking(true, ec);
            if (ec) return false;
            s->nonblocking = true;
        }
        return true;
    }

    // Plain TCP: one non-blocking read, unless the last one emptied the socket. Returns true
    // with bytes appended or `ec` set; false when the caller must wait for readability, and
    // then the connection holds no receive buffer while it waits (if nothing is left to decode).
    static bool try_read(const std::shared_ptr<state>& s, std::error_code& ec) {
        if (!make_nonblocking(s, ec)) return true;
        if (!s->drained) {
            auto space = s->rbuf.prepare(s->read_size);
            std::size_t n = s->stream.read_some(asio::buffer(space.data(), space.size()), ec);
            if (ec != asio::error::would_block && ec != asio::error::try_again) {
                // A read that did not fill the space emptied the socket: the next one waits
                // first instead of trying a read the kernel would refuse.
                if (!ec) s->drained = n < space.size();
                commit_read(s, n, space.size());
                return true;
            }
            ec.clear();
            s->drained = true;
        }
        if (s->rbuf.empty()) detail::buffer_pool::reads().give(s->rbuf);
        return false;
    }

    // The socket became readable: the next try_read() reads, into a pooled buffer if any.
    static void readable(const std::shared_ptr<state>& s) {
        s->drained = false;
        detail::buffer_pool::reads().take(s->rbuf);
    }

    // One socket read into rbuf (for the handshake and the closing; do_read() has its own
    // copy of these lines, so that an idle connection waits with one coroutine frame less).
    static asio::awaitable<std::error_code> read_some(const std::shared_ptr<state>& s) {
        begin_read(s);
        std::error_code ec;
        if constexpr (waits_without_buffer) {
            while (!try_read(s, ec)) {
                co_await s->stream.async_wait(asio::socket_base::wait_read, asio::redirect_error(asio::use_awaitable, ec));
                if (ec) break;
                readable(s);
            }
        } else {
            auto space = s->rbuf.prepare(s->read_size);
            std::size_t n = co_await s->stream.async_read_some(asio::buffer(space.data(), space.size()),
                                                               asio::redirect_error(asio::use_awaitable, ec));
            commit_read(s, n, space.size());
        }
        co_return ec;
    }

    // Start small (idle connections stay cheap) and double while reads fill the space, so a
    // large message costs few syscalls.
    static void commit_read(const std::shared_ptr<state>& s, std::size_t n, std::size_t space) {
        if (n == space && s->read_size < state::max_read_size) s->read_size *= 2;
        s->rbuf.commit(n);
        if (n) s->last_rx = clock::now();
    }

    template <class Parser>
    static asio::awaitable<std::error_code> read_head(std::shared_ptr<state> s, Parser& parser) {
        for (;;) {
            if (s->rpos < s->rbuf.size()) {
                auto r = parser.feed(s->rbuf.data().subspan(s->rpos));
                s->rpos += r.consumed;
                if (r.status == http_parse_status::complete) co_return std::error_code{};
                if (r.status == http_parse_status::failed) co_return r.error;
            }
            std::error_code ec = co_await read_some(s);
            if (ec) co_return s->timed_out ? make_error_code(error::timeout) : ec;
        }
    }

    // A failed transport read: a timeout, a cancellation, or the peer gone.
    static std::error_code transport_error(const std::shared_ptr<state>& s, std::error_code ec) {
        if (s->timed_out) {
            if (!s->close_received) s->peer_code = static_cast<std::uint16_t>(close_code::abnormal);
            s->close_transport_now();
            return error::timeout;
        }
        // A cancelled read leaves the connection as it was: nothing decoded is lost.
        if (ec == asio::error::operation_aborted && !s->transport_closed) return ec;
        if (!s->close_received) s->peer_code = static_cast<std::uint16_t>(close_code::abnormal);
        s->close_transport_now();
        return error::closed;
    }

    // Decodes buffered frames until a message, a close, a failure or the end of the buffer,
    // answering pings on the way. Needs no I/O.
    static read_result decode_buffered(const std::shared_ptr<state>& s, message& m) {
        while (s->rpos < s->rbuf.size()) {
            read_result r = s->reader.read(s->rbuf.data(), s->rpos, m);
            if (r.event == read_event::ping) {
                if (s->cb && s->cb->on_ping) s->cb->on_ping(r.payload);
                if (!s->close_sent) {
                    s->writer.append_control(s->out(), opcode::pong, r.payload);
                    kick(s);
                }
            } else if (r.event == read_event::pong) {
                if (s->cb && s->cb->on_pong) s->cb->on_pong(r.payload);
            } else {
                return r;
            }
        }
        return read_result{};
    }

    // The common case of a read, without suspending: a whole message is already buffered. A
    // close or a failure found on the way is kept for do_read()'s loop, which does the I/O it
    // needs. Returns true if `m` holds the next message.
    static bool read_buffered(const std::shared_ptr<state>& s, message& m) {
        if (!s->open || s->reading || s->stashed || s->rpos == s->rbuf.size()) return false;
        read_result r = decode_buffered(s, m);
        if (r.event == read_event::message) return true;
        if (r.event != read_event::need_more) s->stashed = std::make_unique<read_result>(r);
        return false;
    }

    // Reads the next message into `m`. Returns true for a message. Otherwise: with `report`,
    // stores why (error::closed once closed) and returns false; without, returns false once
    // closed and throws anything else. One coroutine frame for the whole read, socket wait
    // included: it is what an idle connection holds.
    static asio::awaitable<bool> do_read(std::shared_ptr<state> s, message& m, std::error_code* report) {
        std::error_code ec;
        if (read_buffered(s, m)) {
            // Decoded from what was buffered: nothing to wait for.
        } else if (!s->open && !s->stashed) {
            ec = s->timed_out ? error::timeout : error::closed;
        } else if (s->reading) {
            ec = error::operation_in_progress;
        } else {
            s->reading = true;
            struct reading_guard {
                state* s;
                ~reading_guard() { s->reading = false; s->notify(); }
            } guard{s.get()};
            for (;;) {
                read_result r;
                if (s->stashed) {
                    r = *s->stashed;
                    s->stashed.reset();
                } else {
                    r = decode_buffered(s, m);
                }
                if (r.event == read_event::message) break;
                if (r.event == read_event::close) {
                    ec = co_await peer_closed(s, r);
                    break;
                }
                if (r.event == read_event::failed) {
                    ec = co_await fail(s, r.ec);
                    break;
                }
                begin_read(s);
                if constexpr (waits_without_buffer) {
                    while (!try_read(s, ec)) {
                        // Nothing more to read now: what the decoded bytes answered goes out
                        // before we wait (while more is readable, the answers keep batching).
                        write_before_waiting(s);
                        co_await s->stream.async_wait(asio::socket_base::wait_read, asio::redirect_error(asio::use_awaitable, ec));
                        if (ec) break;
                        readable(s);
                    }
                } else {
                    write_soon(s);
                    auto space = s->rbuf.prepare(s->read_size);
                    std::size_t n = co_await s->stream.async_read_some(
                        asio::buffer(space.data(), space.size()), asio::redirect_error(asio::use_awaitable, ec));
                    commit_read(s, n, space.size());
                }
                if (ec) {
                    ec = transport_error(s, ec);
                    break;
                }
            }
        }
        if (report) {
            *report = ec;
            co_return !ec;
        }
        if (ec == error::closed) co_return false;
        throw_if(ec);
        co_return true;
    }

    static asio::awaitable<std::error_code> peer_closed(std::shared_ptr<state> s, const read_result& r) {
        s->peer_code = r.code;
        s->peer_reason.assign(r.reason);
        s->close_received = true;
        if (s->cb && s->cb->on_close) s->cb->on_close(r.code, s->peer_reason);
        if (!s->close_sent) {
            // Echo the peer's code (RFC 6455 §5.5.1); a close without a code gets none.
            bool has_code = r.code != static_cast<std::uint16_t>(close_code::no_status);
            send_close(s, has_code ? r.code : 0, {});
        }
        co_await flush_queue(s);
        co_await finish_close(s);
        co_return error::closed;
    }

    // After both close frames: the server closes TCP first (RFC 6455 §7.1.1); the client
    // waits for that, within the close timeout.
    static asio::awaitable<void> finish_close(std::shared_ptr<state> s) {
        if (s->local == role::client && !s->transport_closed) {
            arm_deadline(s, s->opts.close_timeout);
            while (!s->transport_closed) {
                std::error_code ec = co_await read_some(s);
                if (ec) break;
                s->rpos = s->rbuf.size();
            }
        }
        s->timed_out = false;
        s->close_transport_now();
    }

    // _Fail the WebSocket Connection_ (RFC 6455 §7.1.7): close frame with the code for `ec`.
    static asio::awaitable<std::error_code> fail(std::shared_ptr<state> s, std::error_code ec) {
        if (!s->close_sent && !s->transport_closed) {
            send_close(s, static_cast<std::uint16_t>(close_code_for(ec)), ec.message());
            co_await flush_queue(s);
        }
        s->close_transport_now();
        co_return ec;
    }

    // ---------------------------------------------------------------- event mode internals
    // basic_server::run_events reads with completion handlers instead of a coroutine, so an
    // idle connection holds its state and one socket wait, no coroutine frames. These are its
    // steps; the server's driver loops over next_event() and waits as it says.

    enum class event_step { message, wait_readable, wait_room, finish };

    // Event mode reads without a coroutine only where the socket can be waited on without a
    // buffer; other streams (TLS) run the same events from a read_message() loop.
    static constexpr bool events_without_coroutine = waits_without_buffer;

    // The driver owns the read side: read_message() reports operation_in_progress, and
    // close() leaves the peer's close frame to the driver.
    void begin_events() noexcept { s_->reading = true; }
    // The driver hands the rest of the connection (the closing) to read_message().
    void end_events() noexcept {
        s_->reading = false;
        s_->notify();
    }
    // The message event mode decodes into, kept by the connection so that the fragments of
    // a message survive between socket reads.
    message& event_message() {
        if (!s_->assembly) s_->assembly = std::make_unique<message>();
        return *s_->assembly;
    }

    // Decodes what is buffered and reads the socket without blocking, until a message (in
    // `m`, borrowed until the next call), a reason to wait, or the end: a close or failure
    // (stashed for read_message()), or the transport gone. Reading pauses while the write
    // queue is over its limit, so a peer that does not read its answers is slowed by TCP.
    event_step next_event(message& m) {
        const auto& s = s_;
        for (;;) {
            if (!s->open || s->stashed) return event_step::finish;
            if (!s->close_sent && s->queued() >= s->opts.write_queue_limit) {
                kick(s);
                return event_step::wait_room;
            }
            read_result r = decode_buffered(s, m);
            if (r.event == read_event::message) return event_step::message;
            if (r.event != read_event::need_more) {
                s->stashed = std::make_unique<read_result>(r);
                return event_step::finish;
            }
            begin_read(s);
            std::error_code ec;
            if (!try_read(s, ec)) {
                write_before_waiting(s);
                return event_step::wait_readable;
            }
            if (ec) {
                event_read_failed(ec);
                return event_step::finish;
            }
        }
    }

    // Calls `h(ec)` once the socket is readable (events_without_coroutine streams only).
    template <class Handler>
    void async_wait_readable(Handler&& h) {
        s_->stream.async_wait(asio::socket_base::wait_read,
                              asio::bind_allocator(detail::exact_allocator<void>{}, std::forward<Handler>(h)));
    }
    // After async_wait_readable() completed with `ec`.
    void event_readable(std::error_code ec) {
        if (ec) event_read_failed(ec);
        else readable(s_);
    }
    void event_read_failed(std::error_code ec) {
        transport_error(s_, ec);
        // Even a cancelled wait ends event mode: nobody would restart it.
        if (s_->open) s_->close_transport_now();
    }
    // Calls `h()` once the write queue has moved (or the connection closed).
    template <class Handler>
    void async_wait_room(Handler h) {
        ++s_->waiters;
        s_->timer(s_->signal).async_wait([s = s_, h = std::move(h)](std::error_code) mutable {
            --s->waiters;
            h();
        });
    }

    // ---------------------------------------------------------------- writing internals

    // Starts the background writer if frames wait and no write is running. Posted, not
    // dispatched: the calling coroutine goes on queueing until it suspends (an echo loop answers
    // a whole batch of received frames), and all of that goes out in one write. (co_spawn would
    // dispatch: it ran the write at once and sent the first answer of every batch on its own.)
    // A reader about to wait for the socket starts the scheduled write itself (write_soon),
    // so an answer does not also wait for the wait's setup: lower latency, same batching.
    static void kick(const std::shared_ptr<state>& s) {
        if (s->writing || s->pending.empty() || s->transport_closed) return;
        s->writing = true;
        s->write_scheduled = true;
        asio::post(s->stream.get_executor(), [s] { write_soon(s); });
    }

    // The reader is about to wait for the socket: the scheduled write goes out now, and if the
    // kernel took it all (plain TCP, write_now), the send buffers go back to the pool, so an
    // idle connection holds none. Only here, not whenever the writer drains: a server that
    // queues to many connections before any write starts (a broadcast loop) needs more
    // buffers at once than a pool keeps, and would allocate them again for every message.
    static void write_before_waiting(const std::shared_ptr<state>& s) {
        write_soon(s);
        if (!s->writing) s->release_write_buffers();
    }

    // Starts the write kick() scheduled, unless it has started already.
    static void write_soon(const std::shared_ptr<state>& s) {
        if (!s->write_scheduled) return;
        s->write_scheduled = false;
        write_pending(s);
    }

    // One turn of the background writer: hands everything queued to one socket write, and
    // comes back for what was queued meanwhile. A completion handler, not a coroutine: no
    // frame to allocate per write.
    static void write_pending(const std::shared_ptr<state>& s) {
        if (s->pending.empty() || s->transport_closed) {
            if (s->transport_closed && !s->write_error) s->write_error = error::closed;
            s->writing = false;
            s->notify();
            return;
        }
        std::size_t sent = 0;
        if (write_now(s, sent)) {
            write_pending(s); // nothing was queued meanwhile: this ends the turn
            return;
        }
        std::swap(s->pending, s->inflight);
        auto done = [s](std::error_code ec, std::size_t) {
            s->inflight.clear();
            if (ec) {
                if (!s->write_error) s->write_error = closed_by_us(s, ec);
                s->pending.clear();
                s->writing = false;
                s->release_write_buffers();
                s->notify();
                return;
            }
            s->notify();
            write_pending(s);
        };
        auto bytes = s->inflight.bytes.data();
        if (s->inflight.shared.empty()) {
            asio::async_write(s->stream, asio::buffer(bytes.data() + sent, bytes.size() - sent), std::move(done));
            return;
        }
        // Encoded bytes and shared frames interleaved, in queue order, in one gather write.
        s->gather.clear();
        std::size_t pos = 0;
        for (const auto& f : s->inflight.shared) {
            if (f.at > pos) s->gather.emplace_back(bytes.data() + pos, f.at - pos);
            s->gather.emplace_back(f.frame.data(), f.frame.size());
            pos = f.at;
        }
        if (pos < bytes.size()) s->gather.emplace_back(bytes.data() + pos, bytes.size() - pos);
        asio::async_write(s->stream, std::span<const asio::const_buffer>(s->gather), std::move(done));
    }

    // Plain TCP: hands the queued bytes to the kernel at once, without an asynchronous write.
    // Returns true if it took them all (or the socket failed, recorded in write_error and
    // `pending` dropped); false when an asynchronous write must send the rest, from `sent`
    // bytes into the queue (not moved to the front: a large queue would be copied). Asio's
    // write would make the same send, but holds the buffer until its completion handler runs,
    // after every other ready handler: with many busy connections, their buffers could then
    // not go back to the pool between batches.
    static bool write_now(const std::shared_ptr<state>& s, std::size_t& sent) {
        if constexpr (!waits_without_buffer) {
            return false;
        } else {
            if (!s->pending.shared.empty()) return false; // broadcast frames: a gather write
            std::error_code ec;
            if (!make_nonblocking(s, ec)) return false;
            auto bytes = s->pending.bytes.data();
            std::size_t n = s->stream.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
            if (ec == asio::error::would_block || ec == asio::error::try_again) return false;
            if (ec) {
                if (!s->write_error) s->write_error = closed_by_us(s, ec);
                s->pending.clear();
                return true;
            }
            if (n == bytes.size()) {
                s->pending.clear();
                return true;
            }
            sent = n;
            return false;
        }
    }

    // A socket write fails with operation_aborted when we closed the transport under it (a
    // timeout, a failed read): report why the connection closed instead.
    static std::error_code closed_by_us(const std::shared_ptr<state>& s, std::error_code ec) {
        if (!s->transport_closed) return ec;
        return s->timed_out ? make_error_code(error::timeout) : make_error_code(error::closed);
    }

    static asio::awaitable<std::error_code> flush_queue(std::shared_ptr<state> s) {
        while ((s->writing || !s->pending.empty()) && !s->write_error && !s->transport_closed) {
            kick(s);
            std::error_code waited = co_await wait(s);
            if (waited) co_return waited;
        }
        if (s->write_error) co_return s->write_error;
        if (s->transport_closed && s->queued() > 0) co_return error::closed;
        co_return std::error_code{};
    }

    static std::error_code write_status(const std::shared_ptr<state>& s) {
        if (s->write_error) return s->write_error;
        if (!s->open || s->close_sent) return s->timed_out ? error::timeout : error::closed;
        return {};
    }

    // A data frame may be queued now: the queue is under its limit and no direct write is
    // part-way out (its fragments let only control frames through).
    static bool has_room(const std::shared_ptr<state>& s) noexcept {
        return !s->writing_direct && s->queued() < s->opts.write_queue_limit;
    }

    // A large uncompressed server message is written from the caller's memory, not queued.
    static bool goes_direct(const std::shared_ptr<state>& s, std::size_t size, bool compress) noexcept {
        return s->local == role::server && size >= s->opts.direct_write_threshold &&
               !s->writer.would_compress(size, compress);
    }

    // Queues `pm` the cheapest way this connection allows (see send()).
    static std::error_code queue_prepared(const std::shared_ptr<state>& s,
                                          const std::shared_ptr<const prepared_message>& pm) {
        auto payload = pm->payload();
        bool fragments = s->writer.frame_size() != 0 && payload.size() > s->writer.frame_size();
        bool compress = s->writer.would_compress(payload.size(), true);
        const writer_deflate& deflate = s->writer.deflate_config();
        // Without context takeover every connection's compressed bytes are the same.
        bool once = compress && deflate.no_context_takeover && !fragments;
        std::span<const std::uint8_t> ready;
        if (s->local == role::client) {
            // A client masks every frame with a fresh key, so it copies, but compresses once.
            ready = once ? pm->deflated_payload(deflate.window_bits) : std::span<const std::uint8_t>{};
            if (!ready.empty())
                s->writer.append_frame(s->out(), data_opcode(pm->kind()), true, true, ready);
        } else {
            ready = !compress && !fragments ? pm->frame()
                    : once                  ? pm->deflated_frame(deflate.window_bits)
                                            : std::span<const std::uint8_t>{};
            if (!ready.empty()) s->pending.add_shared(ready, pm);
        }
        if (ready.empty())
            if (auto ec = s->writer.append_message(s->out(), pm->kind(), payload, true)) return ec;
        kick(s);
        return {};
    }

    // The common case of a write, without waiting: there is room in the queue. Returns true
    // when done (`ec` is the outcome); false when do_write() must wait for room or write
    // directly, or (with `ec` set) when the compressor failed and fail() must close.
    static bool queue_now(const std::shared_ptr<state>& s, std::span<const std::uint8_t> payload,
                          message_kind kind, bool compress, std::error_code& ec) {
        if ((ec = write_status(s))) return true;
        if (goes_direct(s, payload.size(), compress) || !has_room(s)) return false;
        // A failed compressor needs fail()'s I/O: returns false with `ec` set.
        if ((ec = s->writer.append_message(s->out(), kind, payload, compress))) return false;
        kick(s);
        return true;
    }

    // write_message()'s one coroutine (the public overloads only choose how failure is
    // reported: thrown, or stored in *report). The common case, room in the queue, suspends
    // nowhere and starts no nested coroutine.
    static asio::awaitable<void> write(std::shared_ptr<state> s, std::span<const std::uint8_t> payload,
                                       message_kind kind, bool compress, std::error_code* report) {
        std::error_code ec;
        if (!queue_now(s, payload, kind, compress, ec)) {
            if (ec) ec = co_await fail(s, ec);
            else ec = co_await do_write(s, payload, kind, compress);
        }
        if (report) *report = ec;
        else throw_if(ec);
    }

    static asio::awaitable<std::error_code> do_write(std::shared_ptr<state> s,
                                                     std::span<const std::uint8_t> payload,
                                                     message_kind kind, bool compress) {
        if (auto ec = write_status(s)) co_return ec;
        if (goes_direct(s, payload.size(), compress)) co_return co_await write_direct(s, payload, kind);
        // Backpressure: wait for room before queueing, so a cancelled wait queued nothing.
        // Also wait out a direct write: it sends the queue between its fragments, where only
        // control frames may go.
        while (!has_room(s)) {
            kick(s);
            std::error_code waited = co_await wait(s);
            if (waited) co_return waited;
            if (auto ec = write_status(s)) co_return ec;
        }
        if (auto ec = s->writer.append_message(s->out(), kind, payload, compress)) {
            co_return co_await fail(s, ec);
        }
        kick(s);
        co_return std::error_code{};
    }

    // A large server message goes out from the caller's memory: header and payload in one
    // gather write, with any queued control frames sent between its fragments (data frames
    // wait in do_write, and a close frame waits for the last fragment).
    static asio::awaitable<std::error_code> write_direct(std::shared_ptr<state> s,
                                                         std::span<const std::uint8_t> payload,
                                                         message_kind kind) {
        while (s->writing || !s->pending.empty()) {
            kick(s);
            std::error_code waited = co_await wait(s);
            if (waited) co_return waited;
            if (auto ec = write_status(s)) co_return ec;
        }
        s->writing = true;
        s->writing_direct = true;
        std::size_t fs = s->writer.frame_size() ? s->writer.frame_size() : payload.size();
        opcode op = data_opcode(kind);
        std::error_code ec;
        do {
            auto part = payload.first(std::min(fs, payload.size()));
            payload = payload.subspan(part.size());
            std::array<std::uint8_t, max_frame_header_size> head;
            mask_key key;
            std::size_t n = s->writer.frame_header_for(head, op, payload.empty(), false, part.size(), key);
            std::array<asio::const_buffer, 2> bufs{asio::buffer(head.data(), n),
                                                   asio::buffer(part.data(), part.size())};
            co_await asio::async_write(s->stream, bufs, asio::redirect_error(asio::use_awaitable, ec));
            op = opcode::continuation;
            if (!ec && !payload.empty() && !s->pending.empty() && !s->close_sent) {
                // Only control frames: data waits for this message (do_write, send).
                std::swap(s->pending, s->inflight);
                auto bytes = s->inflight.bytes.data();
                co_await asio::async_write(s->stream, asio::buffer(bytes.data(), bytes.size()),
                                           asio::redirect_error(asio::use_awaitable, ec));
                s->inflight.clear();
            }
        } while (!ec && !payload.empty());
        s->writing = false;
        s->writing_direct = false;
        if (ec) {
            // A frame may be half written: the stream cannot carry another one.
            ec = closed_by_us(s, ec);
            if (!s->write_error) s->write_error = ec;
            s->close_transport_now();
        }
        kick(s);
        s->notify();
        co_return ec;
    }

    static asio::awaitable<std::error_code> do_control(std::shared_ptr<state> s, opcode op,
                                                       std::span<const std::uint8_t> payload) {
        if (auto ec = write_status(s)) co_return ec;
        s->writer.append_control(s->out(), op, payload);
        if (op == opcode::ping) s->last_ping = clock::now();
        kick(s);
        co_return std::error_code{};
    }

    // ---------------------------------------------------------------- closing internals

    // Queues our close frame (once per connection) and bounds the wait for the peer's.
    static void send_close(const std::shared_ptr<state>& s, std::uint16_t code, std::string_view reason) {
        s->close_sent = true;
        s->writer.append_close(s->out(), code, reason);
        kick(s);
        arm_deadline(s, s->opts.close_timeout);
    }

    static asio::awaitable<std::error_code> do_close(std::shared_ptr<state> s, std::uint16_t code,
                                                     std::string_view reason) {
        if (code != 0 && !is_sendable_close_code(code)) co_return error::bad_close_code;
        if (!s->open) co_return s->close_sent ? std::error_code{} : make_error_code(error::closed);
        if (s->close_sent) {
            // Someone else is closing: wait for the transport to go.
            while (!s->transport_closed) {
                std::error_code waited = co_await wait(s);
                if (waited) co_return waited;
            }
            co_return std::error_code{};
        }
        send_close(s, code, reason);
        co_await flush_queue(s);
        if (s->close_received) {
            s->close_transport_now();
        } else if (s->reading) {
            // The pending read_message() sees the peer's close and finishes the handshake.
            while (!s->transport_closed) {
                std::error_code waited = co_await wait(s);
                if (waited) co_return waited;
            }
        } else {
            message scratch;
            std::error_code ec;
            for (;;) {
                co_await do_read(s, scratch, &ec);
                if (ec) break;
            }
        }
        // The close timeout cut the handshake short: the peer's close never came.
        if (!s->close_received) s->peer_code = static_cast<std::uint16_t>(close_code::abnormal);
        s->close_transport_now();
        s->timed_out = false;
        co_return std::error_code{};
    }

    // ---------------------------------------------------------------- handshake internals

    static asio::awaitable<void> write_and_close(std::shared_ptr<state> s, std::string text) {
        std::error_code ec;
        arm_deadline(s, s->opts.handshake_timeout);
        co_await asio::async_write(s->stream, asio::buffer(text), asio::redirect_error(asio::use_awaitable, ec));
        s->close_transport_now();
    }

    static asio::awaitable<std::error_code> do_accept(std::shared_ptr<state> s) {
        http_request_parser parser(s->opts.http);
        arm_deadline(s, s->opts.handshake_timeout);
        std::error_code ec = co_await read_head(s, parser);
        if (ec) {
            if (parser.status() == http_parse_status::failed) {
                co_await write_and_close(s, build_refusal_response(ec));
            }
            s->close_transport_now();
            co_return ec;
        }
        upgrade_request up;
        if ((ec = validate_upgrade_request(parser.get(), up))) {
            co_await write_and_close(s, build_refusal_response(ec));
            co_return ec;
        }
        co_return co_await accept_upgrade(s, up, accept_decision{});
    }

    static std::string choose_subprotocol(const options& o, const upgrade_request& up) {
        for (const auto& mine : o.subprotocols)
            for (const auto& offered : up.subprotocols)
                if (mine == offered) return mine;
        return {};
    }

    static asio::awaitable<std::error_code> accept_upgrade(std::shared_ptr<state> s, const upgrade_request& up,
                                                           const accept_decision& d) {
        std::string sub = d.subprotocol ? *d.subprotocol : choose_subprotocol(s->opts, up);
        std::string ext;
        std::optional<deflate_params> params;
        if (s->opts.deflate.enabled) params = negotiate_deflate(up.extensions, s->opts.deflate, ext);
        std::string response;
        try {
            response = build_accept_response(up, accept_options{sub, ext, d.extra_fields});
        } catch (const std::invalid_argument&) {
            response.clear();
        }
        if (response.empty()) {
            // The application chose a subprotocol that was not offered, or a malformed field.
            co_await write_and_close(s, build_refusal_response(500, "bad accept decision"));
            co_return error::handshake_failed;
        }
        arm_deadline(s, s->opts.handshake_timeout);
        std::error_code ec;
        co_await asio::async_write(s->stream, asio::buffer(response), asio::redirect_error(asio::use_awaitable, ec));
        disarm_deadline(s);
        if (ec) {
            s->close_transport_now();
            co_return s->timed_out ? make_error_code(error::timeout) : ec;
        }
        s->subprotocol = std::move(sub);
        start(s, role::server, params);
        co_return std::error_code{};
    }

    static asio::awaitable<std::error_code> do_handshake(std::shared_ptr<state> s, const std::string& host,
                                                         const std::string& target,
                                                         const handshake_request& extra) {
        std::string key = generate_key();
        std::string offer = s->opts.deflate.enabled ? deflate_offer(s->opts.deflate) : std::string{};
        upgrade_offer o;
        o.host = host;
        o.target = target;
        o.key = key;
        o.subprotocols = s->opts.subprotocols;
        o.extensions = offer;
        o.origin = extra.origin;
        o.extra_fields = extra.extra_fields;
        std::string request;
        try {
            request = build_upgrade_request(o);
        } catch (const std::invalid_argument&) {
            co_return error::handshake_failed;
        }
        arm_deadline(s, s->opts.handshake_timeout);
        std::error_code ec;
        co_await asio::async_write(s->stream, asio::buffer(request), asio::redirect_error(asio::use_awaitable, ec));
        http_response_parser parser(s->opts.http);
        if (!ec) {
            ec = co_await read_head(s, parser);
        }
        upgrade_response ur;
        if (!ec) ec = validate_upgrade_response(parser.get(), o, ur);
        std::optional<deflate_params> params;
        if (!ec && !ur.extensions.empty()) {
            if (!s->opts.deflate.enabled) ec = error::bad_extension;
            else ec = accept_deflate_response(ur.extensions, s->opts.deflate, params);
        }
        disarm_deadline(s);
        if (ec) {
            s->close_transport_now();
            co_return s->timed_out ? make_error_code(error::timeout) : ec;
        }
        s->subprotocol = ur.subprotocol;
        start(s, role::client, params);
        co_return std::error_code{};
    }

    // The handshake is done: set up the codec for `r` and the negotiated compression.
    static void start(const std::shared_ptr<state>& s, role r, const std::optional<deflate_params>& params) {
        s->local = r;
        s->deflate = params;
        s->reader = message_reader(reader_config{r, s->opts.max_message_size});
        s->writer = message_writer(writer_config{r, s->opts.frame_size});
        if (params) {
            deflate_direction in = receiving_direction(*params, r);
            deflate_direction out = sending_direction(*params, r);
            s->reader.enable_deflate(in.window_bits, in.no_context_takeover);
            writer_deflate wd;
            wd.window_bits = out.window_bits;
            wd.no_context_takeover = out.no_context_takeover;
            wd.level = s->opts.deflate.level;
            wd.mem_level = s->opts.deflate.mem_level;
            wd.threshold = s->opts.deflate.threshold;
            wd.use_libdeflate = s->opts.deflate.use_libdeflate;
            wd.final_block = s->opts.deflate.final_block;
            s->writer.enable_deflate(wd);
        }
        if (s->opts.tcp_nodelay) {
            auto& sock = s->stream.lowest_layer();
            if constexpr (requires { sock.set_option(asio::ip::tcp::no_delay(true)); }) {
                std::error_code ignored;
                sock.set_option(asio::ip::tcp::no_delay(true), ignored);
            }
        }
        s->open = true;
        s->last_rx = clock::now();
        if (s->opts.idle_timeout.count() > 0 || s->opts.ping_interval.count() > 0)
            asio::co_spawn(s->stream.get_executor(), watch(std::weak_ptr<state>(s)), asio::detached);
    }

    // Idle timeout and keepalive pings: any byte received counts as life. Holds the state
    // only between waits, so a websocket destroyed while open still frees (and closes) its
    // stream instead of being kept alive, pinging, by this loop.
    static asio::awaitable<void> watch(std::weak_ptr<state> w) {
        using std::chrono::milliseconds;
        auto first = w.lock();
        if (!first) co_return;
        auto idle = first->opts.idle_timeout;
        auto ping = first->opts.ping_interval;
        first.reset();
        milliseconds tick = idle.count() > 0 && (ping.count() <= 0 || idle < ping) ? idle : ping;
        tick = std::max(milliseconds(10), tick / 4);
        for (;;) {
            asio::steady_timer* timer = nullptr;
            if (auto s = w.lock(); s && s->open) {
                timer = &s->timer(s->watchdog);
                timer->expires_after(tick);
            } else {
                break;
            }
            std::error_code ec;
            co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
            auto s = w.lock();
            if (!s || !s->open) break;
            auto now = clock::now();
            auto quiet = now - s->last_rx;
            if (idle.count() > 0 && quiet >= idle) {
                s->timed_out = true;
                s->close_transport_now();
                break;
            }
            if (ping.count() > 0 && quiet >= ping && now - s->last_ping >= ping && !s->close_sent) {
                s->writer.append_control(s->out(), opcode::ping, {});
                s->last_ping = now;
                kick(s);
            }
        }
    }

    std::shared_ptr<state> s_;
};

} // namespace corows
