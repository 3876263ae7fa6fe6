// corows::websocket<Stream>: the awaitable WebSocket connection, both roles, over any Asio
// stream. This header declares the API; the operations are in impl/ (one per file), the I/O
// they share in detail/pump.hpp, and every protocol rule in protocol/connection.hpp.
#pragma once

#include <corows/detail/pump.hpp>
#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/options.hpp>
#include <corows/prepared_message.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
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

/// The most of a refused handshake's body a client reads (the rest is dropped).
inline constexpr std::size_t max_refusal_body = 64 * 1024;

/// A client handshake the server answered with another status than 101: code() is
/// error::bad_status, response() the answer with up to max_refusal_body bytes of its body.
class handshake_error : public std::system_error {
public:
    /// Carries `res`; what() names its status and reason.
    explicit handshake_error(http_response res)
        : std::system_error(make_error_code(error::bad_status), describe(res)),
          response_(std::make_shared<const http_response>(std::move(res))) {}
    /// The server's answer: status, reason, fields and (bounded) body.
    const http_response& response() const noexcept { return *response_; }

private:
    static std::string describe(const http_response& res) {
        return "the server answered " + std::to_string(res.status) + " " + res.reason;
    }
    // Shared: exceptions are copied, and a copy must not throw.
    std::shared_ptr<const http_response> response_;
};

template <class Stream>
class websocket;

namespace detail {
template <class Stream>
struct event_driver;
} // namespace detail

/// The callbacks of an event-mode connection (run_events()). Each runs on the connection's
/// thread and must not block; any may be empty.
template <class Stream>
struct event_handlers {
    /// Events begin: the connection is open.
    std::function<void(websocket<Stream>&)> on_open;
    /// A message arrived. A borrowed payload is valid until the callback returns. Answer
    /// with send(); reading pauses while the write queue is at options::write_queue_limit.
    std::function<void(websocket<Stream>&, const message&)> on_message;
    /// The connection is over (its transport closed); called once. `why` is error::closed
    /// after a close handshake or a lost peer (close_code() tells which: 1006 for lost), or
    /// what failed the connection (a protocol violation, error::timeout).
    std::function<void(websocket<Stream>&, std::error_code why)> on_close;
    /// A callback threw `e`; the connection is then closed with 1011.
    std::function<void(websocket<Stream>&, std::exception_ptr e)> on_error;
};

/// Serves the open connection `ws` with `handlers` until it closes, without a coroutine: an
/// idle plain-TCP connection holds no coroutine frame. Returns at once; the driver keeps `ws`
/// (and `handlers`) alive until on_close has returned. While it runs, read_message() reports
/// error::operation_in_progress; writes, send(), start_close() and close() work as usual.
template <class Stream>
void run_events(std::shared_ptr<websocket<Stream>> ws,
                std::type_identity_t<std::shared_ptr<const event_handlers<Stream>>> handlers);

/// A WebSocket connection over `Stream` (asio::ip::tcp::socket, asio::ssl::stream<...>, or
/// anything with Asio's async_read_some/async_write_some and lowest_layer()).
///
/// At most one read_message() at a time; writes from several coroutines are serialised.
/// All operations of one connection must run on one thread at a time (one io_context thread,
/// or a strand as the stream's executor).
template <class Stream>
class websocket {
    using pump = detail::pump<Stream>;

public:
    using executor_type = typename Stream::executor_type;

    /// Wraps a connected stream; the handshake is still to be done.
    explicit websocket(Stream stream, const options& opts = {})
        : websocket(std::move(stream), std::make_shared<const options>(opts)) {}
    /// Wraps a connected stream with settings shared with other connections (a server's).
    websocket(Stream stream, std::shared_ptr<const options> opts)
        : s_(std::make_shared<pump>(std::move(stream), std::move(opts))) {}

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
    const options& get_options() const noexcept { return s_->conn.settings(); }
    /// True between a successful handshake and the closing of the transport.
    bool is_open() const noexcept {
        return !s_->transport_closed && s_->conn.state() != connection_state::connecting &&
               s_->conn.state() != connection_state::closed;
    }
    /// Bytes accepted by write operations and not yet written to the stream, charged at what
    /// they hold in memory (at most about options::write_queue_limit plus one message:
    /// writers wait beyond it).
    std::size_t queued_bytes() const noexcept { return s_->queued(); }
    /// The negotiated subprotocol; empty if none.
    std::string_view subprotocol() const noexcept { return s_->conn.subprotocol(); }
    /// The negotiated permessage-deflate parameters, if compression is on.
    const std::optional<deflate_params>& deflate() const noexcept { return s_->conn.deflate(); }
    /// The peer's close code: 0 while open, 1005 if its close frame had none, 1006 if the
    /// transport dropped without a close frame.
    std::uint16_t close_code() const noexcept { return s_->conn.peer_code(); }
    /// The peer's close reason.
    std::string_view close_reason() const noexcept { return s_->conn.peer_reason(); }
    /// The protocol state this websocket drives (read-only: for inspection and tests).
    const connection& protocol() const noexcept { return s_->conn; }

    /// Called with each ping's payload (the pong is sent automatically).
    void on_ping(std::function<void(std::span<const std::uint8_t>)> f) { callbacks().on_ping = std::move(f); }
    /// Called with each pong's payload.
    void on_pong(std::function<void(std::span<const std::uint8_t>)> f) { callbacks().on_pong = std::move(f); }
    /// Called when the peer's close frame arrives, with its code and reason.
    void on_close(std::function<void(std::uint16_t, std::string_view)> f) { callbacks().on_close = std::move(f); }

    // ---------------------------------------------------------------- server handshake (impl/accept.hpp)

    /// Server: reads the upgrade request and answers it (101, or 400/426/... and close).
    asio::awaitable<void> accept();
    /// Server: as accept(), reporting failure in `ec` (the refusal has been sent).
    asio::awaitable<void> accept(std::error_code& ec);
    /// Server: reads one HTTP request head (for a custom server that routes, authenticates,
    /// or serves plain HTTP on the same port). Bytes after the head stay buffered (see
    /// read_body() and buffered_input()); call it again for the next keep-alive request.
    asio::awaitable<http_request> read_request();
    /// Server: as read_request(), reporting failure in `ec`.
    asio::awaitable<http_request> read_request(std::error_code& ec);
    /// Server: validates a request the application read and accepts it, or refuses it with
    /// the RFC's status and closes.
    asio::awaitable<void> accept(const http_request& req, accept_decision d);
    /// Server: accept(req, {}).
    asio::awaitable<void> accept(const http_request& req);
    /// Server: as accept(req, d), reporting failure in `ec`.
    asio::awaitable<void> accept(const http_request& req, const accept_decision& d, std::error_code& ec);
    /// Server: accepts a request already validated with validate_upgrade_request().
    asio::awaitable<void> accept(const upgrade_request& up, const accept_decision& d, std::error_code& ec);
    /// Server: refuses the request with `status`, a plain-text `body`, and closes.
    asio::awaitable<void> refuse(unsigned status, std::string_view body = {},
                                 std::span<const http_field> extra_fields = {});

    // ---------------------------------------------------------------- plain HTTP (impl/http.hpp)

    /// Server: the bytes received after the last request head (or body) and not taken yet;
    /// valid until the next operation on this websocket.
    std::span<const std::uint8_t> buffered_input() noexcept;
    /// Server, before any handshake: takes the first `n` bytes of buffered_input() (at most
    /// all of them), e.g. after the application's own body parser used them; no effect later.
    void consume_buffered(std::size_t n) noexcept;
    /// Server: reads the body of `req` (read_request()'s) by its Content-Length or its
    /// chunked coding (empty without either), buffered bytes first; bytes beyond it stay for
    /// the next request. At most options::http.max_body_size (error::body_too_large, refused
    /// before reading when Content-Length says so) within handshake_timeout (error::timeout).
    /// Throws std::system_error: also error::length_required for another Transfer-Encoding
    /// (gzip), bad_content_length, conflicting_length, bad_chunked_encoding, I/O errors; a
    /// failed read closes the transport. Answers Expect: 100-continue before reading. Before
    /// any handshake only (operation_not_supported once the WebSocket is open).
    asio::awaitable<std::string> read_body(const http_request& req);
    /// Server: as read_body(req), reporting failure in `ec` (and returning "").
    asio::awaitable<std::string> read_body(const http_request& req, std::error_code& ec);
    /// Server, before any handshake: writes `res` as build_response() does (Content-Length
    /// from res.body) within handshake_timeout; the connection stays open for the next
    /// read_request() unless res has Connection: close. Throws std::system_error
    /// (operation_not_supported once the WebSocket is open or the transport is closed).
    asio::awaitable<void> write_response(const http_response& res);
    /// Server: as write_response(res), reporting failure in `ec`.
    asio::awaitable<void> write_response(const http_response& res, std::error_code& ec);

    // ---------------------------------------------------------------- client handshake (impl/handshake.hpp)

    /// Client: sends the upgrade request for `target` on `host` (with ":port" unless the
    /// default) and checks the answer, negotiating subprotocols and permessage-deflate.
    asio::awaitable<void> handshake(std::string host, std::string target, handshake_request extra);
    // Overloads rather than default arguments: GCC 12 destroys a class-type default argument
    // of a call inside a co_await expression twice.
    /// Client: handshake(host, target, {}).
    asio::awaitable<void> handshake(std::string host, std::string target);
    /// Client: handshake(host, "/", {}).
    asio::awaitable<void> handshake(std::string host);
    /// Client: as handshake(), reporting failure in `ec`.
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    std::error_code& ec);
    /// Client: as handshake(host, target, extra), filling `res` with the server's answer
    /// whenever a whole head arrived (the 101, or a refusal with up to max_refusal_body bytes
    /// of its body, read within handshake_timeout). A refusal throws handshake_error.
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    http_response& res);
    /// Client: as handshake(host, target, extra, res), reporting failure in `ec` (bad_status
    /// for a refusal: `res` then holds it).
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    http_response& res, std::error_code& ec);

    // ---------------------------------------------------------------- reading (impl/read.hpp)

    /// Reads the next message; nullopt once the connection closed (close_code() says how).
    /// Throws std::system_error on protocol violations, timeouts and I/O errors. If cancelled
    /// (e.g. `read_message() || timer`), it throws operation_aborted and the part of a
    /// message already received is kept for the next read_message().
    asio::awaitable<std::optional<message>> read_message();
    /// Reads the next message into `m`, reusing its storage; false once the connection
    /// closed. An unfragmented uncompressed payload is borrowed from the receive buffer
    /// (valid until the next read). Throws like read_message(). A cancelled read leaves the
    /// part of a message already received in `m`: pass the same `m` to the next read.
    asio::awaitable<bool> read_message(message& m);
    /// Reads the next message into `m`; error::closed once the connection closed.
    asio::awaitable<void> read_message(message& m, std::error_code& ec);

    // ---------------------------------------------------------------- writing (impl/write.hpp)

    /// Queues a message; completes once it is queued (or, if the queue is over its limit,
    /// once there is room). Compressed when permessage-deflate is on, `compress` is set and
    /// the message reaches the threshold.
    asio::awaitable<void> write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                        bool compress = true);
    /// As write_message(payload, kind, compress), reporting failure in `ec`.
    asio::awaitable<void> write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                        bool compress, std::error_code& ec);
    /// Writes `m` with its own kind (an echo).
    asio::awaitable<void> write_message(const message& m);
    /// Writes `m` with its own kind, reporting failure in `ec`.
    asio::awaitable<void> write_message(const message& m, std::error_code& ec);
    /// Writes a text message (`text` must be UTF-8).
    asio::awaitable<void> write_text(std::string_view text);
    /// Writes a binary message.
    asio::awaitable<void> write_binary(std::span<const std::uint8_t> data);

    /// Queues a prepared message (a broadcast) without waiting: its frame is shared by
    /// reference, not copied, except where this connection needs other bytes (a client
    /// masks; a compressor with context takeover, or a frame_size, encodes its own). Returns
    /// false, queueing nothing, if the queue is at options::write_queue_limit (a consumer too
    /// slow for the broadcast: drop or close it), while a large message is being written from
    /// the caller's memory, or once the connection is closing or closed.
    bool send(const std::shared_ptr<const prepared_message>& pm);
    /// Queues a message without waiting (from an event handler, or any code that cannot
    /// co_await). Returns false, queueing nothing, when send(pm) would.
    bool send(std::span<const std::uint8_t> payload, message_kind kind, bool compress = true);
    /// Queues `m` with its own kind, like send(payload, kind) (an echo).
    bool send(const message& m) { return send(m.data(), m.kind()); }
    /// Queues a text message (`text` must be UTF-8), like send(payload, kind).
    bool send_text(std::string_view text) { return send(as_bytes(text), message_kind::text); }
    /// Queues a prepared message like send(), waiting for room (like write_message) instead
    /// of failing when the queue is full.
    asio::awaitable<void> write_prepared(std::shared_ptr<const prepared_message> pm);

    /// Sends a ping with up to 125 bytes of payload.
    asio::awaitable<void> ping(std::span<const std::uint8_t> payload = {});
    /// As ping(payload), reporting failure in `ec`.
    asio::awaitable<void> ping(std::span<const std::uint8_t> payload, std::error_code& ec);
    /// Sends an unsolicited pong with up to 125 bytes of payload.
    asio::awaitable<void> pong(std::span<const std::uint8_t> payload = {});

    /// Completes when everything queued so far has been written to the stream.
    asio::awaitable<void> flush();
    /// As flush(), reporting failure in `ec`.
    asio::awaitable<void> flush(std::error_code& ec);

    // ---------------------------------------------------------------- closing (impl/close.hpp)

    /// Starts the close handshake (RFC 6455 §7): sends close once, waits for the peer's close
    /// (or the close timeout), then closes the transport. `reason` is cut to 123 bytes.
    asio::awaitable<void> close(std::uint16_t code = 1000, std::string_view reason = {});
    /// As close(code, reason), reporting failure in `ec`.
    asio::awaitable<void> close(std::uint16_t code, std::string_view reason, std::error_code& ec);
    /// Starts the close handshake without waiting: queues the close frame (once) and arms the
    /// close timeout. The connection's reader (read_message(), or event mode) finishes it
    /// when the peer answers; without one, the close timeout closes the transport. Returns
    /// error::bad_close_code for a code that may not be sent.
    std::error_code start_close(std::uint16_t code = 1000, std::string_view reason = {});
    /// Closes the transport at once, without a close handshake.
    void abort() noexcept { s_->close_transport_now(); }

private:
    template <class S>
    friend void run_events(std::shared_ptr<websocket<S>>,
                           std::type_identity_t<std::shared_ptr<const event_handlers<S>>>);
    friend struct detail::event_driver<Stream>;

    typename pump::callbacks& callbacks() {
        if (!s_->cb) s_->cb = std::make_unique<typename pump::callbacks>();
        return *s_->cb;
    }

    std::shared_ptr<pump> s_;
};

} // namespace corows

#include <corows/impl/accept.hpp>
#include <corows/impl/close.hpp>
#include <corows/impl/events.hpp>
#include <corows/impl/handshake.hpp>
#include <corows/impl/http.hpp>
#include <corows/impl/read.hpp>
#include <corows/impl/write.hpp>
