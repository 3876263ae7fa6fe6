// SPDX-License-Identifier: BSL-1.0
// corows::websocket<Stream>: the awaitable WebSocket connection, both roles, over any Asio
// stream. This header declares the API; the operations are in impl/ (one per file), the I/O
// they share in detail/transport.hpp, and every protocol rule in protocol/connection.hpp.
#pragma once

#include <corows/asio.hpp>
#include <corows/close_info.hpp>
#include <corows/detail/initiate.hpp>
#include <corows/detail/transport.hpp>
#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/options.hpp>
#include <corows/prepared_message.hpp>
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/permessage_deflate.hpp>

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
#include <utility>
#include <vector>

namespace corows {

// accept_decision and handshake_request have constructors, so they are not aggregates: g++ 12
// destroys the members of an aggregate initialised inside a co_await expression twice, and
// these are built right there (`co_await ws.accept(req, corows::accept_decision("chat"))`).

/// field(name, value) for accept_decision and handshake_request: adds one of their
/// extra_fields and chains, on a named object and on a temporary alike.
template <class Self>
struct field_builder {
    /// Adds the field `name: value`; chains.
    Self& field(std::string name, std::string value) & {
        auto& self = static_cast<Self&>(*this);
        self.extra_fields.emplace_back(std::move(name), std::move(value));
        return self;
    }
    /// Adds the field `name: value` to a temporary; chains.
    Self&& field(std::string name, std::string value) && {
        return std::move(field(std::move(name), std::move(value)));
    }
};

/// What a server adds to the 101 answer when it accepts.
struct accept_decision : field_builder<accept_decision> {
    /// The subprotocol to answer with (it must have been offered); nullopt: the first of
    /// options::subprotocols that the client offered, if any.
    std::optional<std::string> subprotocol;
    /// Extra response fields, e.g. Set-Cookie.
    std::vector<http_field> extra_fields;
    /// This connection's settings in place of the server's (limits, timeouts, compression,
    /// subprotocols); nullptr keeps them. Start from ws.get_options() to change a few.
    std::shared_ptr<const options> settings;

    /// No subprotocol chosen, no extra field.
    accept_decision() = default;
    /// Answers with `chosen` as the subprotocol.
    explicit accept_decision(std::string chosen) : subprotocol(std::move(chosen)) {}
    /// Gives this connection the settings `o`; chains.
    accept_decision& with_settings(options o) & {
        settings = std::make_shared<const options>(std::move(o));
        return *this;
    }
    /// Gives this connection the settings `o` (on a temporary); chains.
    accept_decision&& with_settings(options o) && { return std::move(with_settings(std::move(o))); }
};

/// A server's answer to one valid upgrade request (websocket::accept(decide) and
/// server_options::on_upgrade): accept it with a decision, or refuse it with an HTTP status.
class upgrade_answer {
public:
    /// Accepts with the server's settings, no chosen subprotocol and no extra field.
    upgrade_answer() = default;
    /// Accepts with `d`: its subprotocol, response fields and this connection's settings.
    upgrade_answer(accept_decision d) : decision_(std::move(d)) {}
    /// Refuses with `status` (an HTTP error status, 400-599; anything else counts as 500)
    /// and a plain-text `body`, then closes.
    static upgrade_answer refuse(unsigned status, std::string body = {}) {
        upgrade_answer a;
        a.status_ = status >= 400 && status <= 599 ? status : 500;
        a.body_ = std::move(body);
        return a;
    }
    /// True for a refusal.
    bool refused() const noexcept { return status_ != 0; }
    /// An acceptance's decision.
    const accept_decision& decision() const noexcept { return decision_; }
    /// A refusal's status (0 for an acceptance).
    unsigned status() const noexcept { return status_; }
    /// A refusal's body.
    const std::string& body() const noexcept { return body_; }

private:
    accept_decision decision_;
    unsigned status_ = 0;
    std::string body_;
};

/// Decides on one valid upgrade request, on the connection's thread.
using upgrade_decider = std::function<upgrade_answer(const http_request&)>;

/// What a client adds to its upgrade request.
struct handshake_request : field_builder<handshake_request> {
    std::string origin;                   ///< empty: no Origin field
    std::vector<http_field> extra_fields; ///< e.g. Authorization, Cookie

    /// No Origin, no extra field.
    handshake_request() = default;
    /// Sends `Origin: origin_value`.
    explicit handshake_request(std::string origin_value) : origin(std::move(origin_value)) {}
};

/// The most of a refused handshake's body a client reads (the rest is dropped).
inline constexpr std::size_t max_refusal_body = 64 * 1024;

/// A client handshake the server answered with another status than 101: code() is
/// error::bad_status, response() the answer with up to max_refusal_body bytes of its body.
class handshake_error : public system_error {
public:
    /// Carries `res`; what() names its status and reason.
    explicit handshake_error(http_response res)
        : system_error(make_error_code(error::bad_status), describe(res)),
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

template <class Stream>
class basic_connection_handle;
template <class Stream>
class basic_local_connection;

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
    /// after a close handshake or a lost peer, or what failed the connection (a protocol
    /// violation, error::timeout, error::send_timeout); ws.closed_why() has the whole story
    /// (which side closed, the close code and reason).
    std::function<void(websocket<Stream>&, error_code why)> on_close;
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
    using transport = detail::transport<Stream>;

public:
    /// The stream's executor type.
    using executor_type = typename Stream::executor_type;

    /// Wraps a connected stream; the handshake is still to be done.
    explicit websocket(Stream stream, const options& opts = {})
        : websocket(std::move(stream), std::make_shared<const options>(opts)) {}
    /// Wraps a connected stream with settings shared with other connections (a server's).
    websocket(Stream stream, std::shared_ptr<const options> opts)
        : s_(std::make_shared<transport>(std::move(stream), std::move(opts))) {}

    /// An empty websocket, only to be assigned to (a result slot, as co_spawn's handler needs).
    websocket() noexcept = default;
    /// Takes over `other`'s connection; `other` is left empty.
    websocket(websocket&&) noexcept = default;
    /// Lets this connection go as the destructor does, and takes over `other`'s.
    websocket& operator=(websocket&& other) noexcept {
        if (this != &other) {
            let_go();
            s_ = std::move(other.s_);
        }
        return *this;
    }
    /// An open connection is not cut: what was queued is sent, then the close handshake
    /// (1000) runs in the background on the connection's executor, bounded by
    /// options::close_timeout. A connection still in its opening handshake, or after
    /// abort(), closes its transport at once.
    ~websocket() { let_go(); }

    /// The wrapped stream.
    Stream& next_layer() noexcept { return s_->stream; }
    /// The stream's executor.
    executor_type get_executor() { return s_->stream.get_executor(); }
    /// The settings in force: those given at construction, or a server's
    /// accept_decision::settings for this connection.
    const options& get_options() const noexcept { return s_->conn.settings(); }
    /// True once the handshake succeeded, even after the connection ended.
    bool has_opened() const noexcept { return s_ && s_->conn.has_opened(); }
    /// True between a successful handshake and the closing of the transport.
    bool is_open() const noexcept {
        return s_ && !s_->transport_closed && s_->conn.state() != connection_state::connecting &&
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
    /// Why the connection ended (or is ending), however it did: the first close frame
    /// (either side's: a send timeout reports our 1008 "too slow: send timeout"), 1006 if
    /// neither side sent one, and the error reads and writes report, the phase it ended in
    /// and what it carried; code 0 while open.
    close_info closed_why() const { return s_->conn.closed_why(); }
    /// The protocol state this websocket drives (read-only: for inspection and tests).
    const connection& protocol() const noexcept { return s_->conn; }
    /// A handle through which any thread can send to this connection or close it, safely
    /// after the connection is gone too (corows/connection_handle.hpp).
    basic_connection_handle<Stream> handle() const;
    /// This connection as code on its own thread sees it (corows/connection_handle.hpp).
    basic_local_connection<Stream> local() const noexcept;

    /// Called with each ping's payload (the pong is sent automatically).
    void on_ping(std::function<void(std::span<const std::uint8_t>)> f) { callbacks().on_ping = std::move(f); }
    /// Called with each pong's payload.
    void on_pong(std::function<void(std::span<const std::uint8_t>)> f) { callbacks().on_pong = std::move(f); }
    /// Called when the peer's close frame arrives, with its code and reason.
    void on_close(std::function<void(std::uint16_t, std::string_view)> f) { callbacks().on_close = std::move(f); }

    // Every operation that completes later takes a completion token last: by default
    // asio::use_awaitable (`co_await ws.read_message(m)`), or any other Asio token
    // (use_future, a callback, deferred, corows::use_tuple, redirect_error, detached).
    // The awaitable throws system_error on failure; other tokens complete with
    // (error_code[, value]) instead. The overloads that take an `error_code&` are the old
    // style, deprecated: use corows::use_tuple. Buffers and strings passed as spans or views must
    // stay valid until the operation completes; everything else is copied into it.

    // ---------------------------------------------------------------- server handshake (impl/accept.hpp)

    /// Server: reads the upgrade request and answers it (101, or 400/426/... and close).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto accept(Token&& token = {});
    /// Server: as accept(), reporting failure in `ec` (the refusal has been sent).
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> accept(error_code& ec);
    /// Server: reads the upgrade request, refuses an invalid one with the RFC's status, and
    /// answers a valid one as `decide` says (an exception from it: 500, then rethrown).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto accept(upgrade_decider decide, Token&& token = {});
    /// Server: as accept(decide), reporting failure in `ec` (error::handshake_failed when
    /// `decide` refused).
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> accept(const upgrade_decider& decide, error_code& ec);
    /// Server: reads one HTTP request head (for a custom server that routes, authenticates,
    /// or serves plain HTTP on the same port). Bytes after the head stay buffered (see
    /// read_body() and buffered_input()); call it again for the next keep-alive request.
    template <COROWS_TOKEN_FOR(void(error_code, http_request)) Token = asio::use_awaitable_t<>>
    auto read_request(Token&& token = {});
    /// Server: as read_request(), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<http_request> read_request(error_code& ec);
    /// Server: validates a request the application read and accepts it, or refuses it with
    /// the RFC's status and closes.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto accept(http_request req, accept_decision d, Token&& token = {});
    /// Server: accept(req, accept_decision()).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto accept(http_request req, Token&& token = {});
    /// Server: as accept(req, d), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> accept(const http_request& req, const accept_decision& d, error_code& ec);
    /// Server: accepts a request already validated with validate_upgrade_request().
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto accept(upgrade_request up, accept_decision d, Token&& token = {});
    /// Server: as accept(up, d), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> accept(const upgrade_request& up, const accept_decision& d, error_code& ec);
    /// Server: refuses the request with `status`, a plain-text `body`, and closes.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto refuse(unsigned status, std::string_view body = {}, std::span<const http_field> extra_fields = {},
                Token&& token = {});

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
    /// Throws system_error: also error::length_required for another Transfer-Encoding
    /// (gzip), bad_content_length, conflicting_length, bad_chunked_encoding, I/O errors; a
    /// failed read closes the transport. Answers Expect: 100-continue before reading. Before
    /// any handshake only (operation_not_supported once the WebSocket is open).
    template <COROWS_TOKEN_FOR(void(error_code, std::string)) Token = asio::use_awaitable_t<>>
    auto read_body(const http_request& req, Token&& token = {});
    /// Server: as read_body(req), reporting failure in `ec` (and returning "").
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<std::string> read_body(const http_request& req, error_code& ec);
    /// Server, before any handshake: writes `res` as build_response() does (Content-Length
    /// from res.body) within handshake_timeout; the connection stays open for the next
    /// read_request() unless res has Connection: close. Throws system_error
    /// (operation_not_supported once the WebSocket is open or the transport is closed).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_response(const http_response& res, Token&& token = {});
    /// Server: as write_response(res), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> write_response(const http_response& res, error_code& ec);

    // ---------------------------------------------------------------- client handshake (impl/handshake.hpp)

    /// Client: sends the upgrade request for `target` on `host` (with ":port" unless the
    /// default) and checks the answer, negotiating subprotocols and permessage-deflate.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto handshake(std::string host, std::string target, handshake_request extra, Token&& token = {});
    /// Client: handshake(host, target, handshake_request()).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto handshake(std::string host, std::string target, Token&& token = {});
    /// Client: handshake(host, "/", handshake_request()).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto handshake(std::string host, Token&& token = {});
    /// Client: as handshake(), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    error_code& ec);
    /// Client: as handshake(host, target, extra), filling `res` with the server's answer
    /// whenever a whole head arrived (the 101, or a refusal with up to max_refusal_body bytes
    /// of its body, read within handshake_timeout). A refusal throws handshake_error.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto handshake(std::string host, std::string target, handshake_request extra, http_response& res,
                   Token&& token = {});
    /// Client: as handshake(host, target, extra, res), reporting failure in `ec` (bad_status
    /// for a refusal: `res` then holds it).
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> handshake(std::string host, std::string target, const handshake_request& extra,
                                    http_response& res, error_code& ec);

    // ---------------------------------------------------------------- reading (impl/read.hpp)

    /// Reads the next message; nullopt once the connection closed (close_code() says how).
    /// Fails on protocol violations, timeouts and I/O errors. If cancelled (e.g.
    /// `read_message() || timer`), it fails with operation_aborted and the part of a message
    /// already received is kept for the next read_message().
    template <COROWS_TOKEN_FOR(void(error_code, std::optional<message>)) Token = asio::use_awaitable_t<>>
    auto read_message(Token&& token = {});
    /// Reads the next message into `m`, reusing its storage; false once the connection
    /// closed. An unfragmented uncompressed payload is borrowed from the receive buffer
    /// (valid until the next read). Fails like read_message(). A cancelled read leaves the
    /// part of a message already received in `m`: pass the same `m` to the next read.
    template <COROWS_TOKEN_FOR(void(error_code, bool)) Token = asio::use_awaitable_t<>>
    auto read_message(message& m, Token&& token = {});
    /// Reads the next message into `m`; error::closed once the connection closed.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> read_message(message& m, error_code& ec);

    // ---------------------------------------------------------------- writing (impl/write.hpp)

    /// Queues a message; completes once it is queued (or, if the queue is over its limit,
    /// once there is room). Compressed when permessage-deflate is on, `compress` is set and
    /// the message reaches the threshold.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_message(std::span<const std::uint8_t> payload, message_kind kind, bool compress = true,
                       Token&& token = {});
    /// As write_message(payload, kind, compress), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> write_message(std::span<const std::uint8_t> payload, message_kind kind,
                                        bool compress, error_code& ec);
    /// Writes `m` with its own kind (an echo).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_message(const message& m, Token&& token = {});
    /// Writes `m` with its own kind, reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> write_message(const message& m, error_code& ec);
    /// Writes a text message (`text` must be UTF-8).
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_text(std::string_view text, Token&& token = {});
    /// Writes a binary message.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_binary(std::span<const std::uint8_t> data, Token&& token = {});

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
    /// Queues a binary message, like send(payload, kind).
    bool send_binary(std::span<const std::uint8_t> data) { return send(data, message_kind::binary); }
    /// Queues a prepared message like send(), waiting for room (like write_message) instead
    /// of failing when the queue is full.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto write_prepared(std::shared_ptr<const prepared_message> pm, Token&& token = {});

    /// Sends a ping with up to 125 bytes of payload.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto ping(std::span<const std::uint8_t> payload = {}, Token&& token = {});
    /// As ping(payload), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> ping(std::span<const std::uint8_t> payload, error_code& ec);
    /// Sends an unsolicited pong with up to 125 bytes of payload.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto pong(std::span<const std::uint8_t> payload = {}, Token&& token = {});

    /// Completes when everything queued so far has been written to the stream.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto flush(Token&& token = {});
    /// As flush(), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> flush(error_code& ec);

    // ---------------------------------------------------------------- closing (impl/close.hpp)

    /// Starts the close handshake (RFC 6455 §7): sends close once, waits for the peer's close
    /// (or the close timeout), then closes the transport. `reason` is cut to 123 bytes.
    template <COROWS_TOKEN_FOR(void(error_code)) Token = asio::use_awaitable_t<>>
    auto close(std::uint16_t code = 1000, std::string_view reason = {}, Token&& token = {});
    /// As close(code, reason), reporting failure in `ec`.
    [[deprecated("use the token form with corows::use_tuple (as_tuple(use_awaitable))")]]
    asio::awaitable<void> close(std::uint16_t code, std::string_view reason, error_code& ec);
    /// Starts the close handshake without waiting: queues the close frame (once) and arms the
    /// close timeout. The connection's reader (read_message(), or event mode) finishes it
    /// when the peer answers; without one, the close timeout closes the transport. Returns
    /// error::bad_close_code for a code that may not be sent.
    error_code start_close(std::uint16_t code = 1000, std::string_view reason = {});
    /// Closes the transport at once, without a close handshake.
    void abort() noexcept { s_->close_transport_now(); }
    /// Server, before the handshake: all of it (every read and write, and the application's
    /// decision after read_request()) must end by `at`, else the connection times out; it
    /// then no longer applies once the handshake opens, refuses, or write_response() answers.
    /// A server sets it from accept, so that TLS and the upgrade share one handshake_timeout.
    /// Call it on the connection's executor.
    void bound_handshake(std::chrono::steady_clock::time_point at) noexcept {
        s_->conn.bound_handshake(at);
        if (s_->conn.handshake_bounded()) s_->arm_timer(s_);
    }
    /// Counts what this connection does from now on (its opening, its end and why, messages,
    /// bytes, pings) into `c`, which must outlive it and be written by no other thread while
    /// this connection runs (a server gives each thread its own; see basic_server::metrics()).
    void count_into(connection_counters& c) noexcept { s_->conn.count_into(&c); }
    /// Counts into a part of `c` of its own, so that connections on any threads may count
    /// into `c` at once (see shared_connection_counters); `c` must outlive the connection.
    void count_into(shared_connection_counters& c) { s_->conn.count_into(c); }
    /// Server, before the handshake: if it opens, the time from `accepted` to then counts in
    /// the counters' handshake durations (basic_server does this for every connection).
    void count_handshake_from(std::chrono::steady_clock::time_point accepted) noexcept {
        s_->conn.count_handshake_from(accepted);
    }
    /// True while the deadline of bound_handshake() binds: the handshake has not opened, been
    /// refused, answered with write_response(), nor lost its transport.
    bool handshake_bounded() const noexcept { return !s_->transport_closed && s_->conn.handshake_bounded(); }
    /// The deadline of bound_handshake() while handshake_bounded(); time_point::max() otherwise.
    std::chrono::steady_clock::time_point handshake_deadline() const noexcept {
        return handshake_bounded() ? s_->conn.handshake_deadline() : std::chrono::steady_clock::time_point::max();
    }

private:
    template <class S>
    friend void run_events(std::shared_ptr<websocket<S>>,
                           std::type_identity_t<std::shared_ptr<const event_handlers<S>>>);
    friend struct detail::event_driver<Stream>;

    void let_go() noexcept;

    typename transport::callbacks& callbacks() {
        if (!s_->cb) s_->cb = std::make_unique<typename transport::callbacks>();
        return *s_->cb;
    }

    std::shared_ptr<transport> s_;
};

} // namespace corows

#include <corows/impl/accept.hpp>
#include <corows/impl/close.hpp>
#include <corows/impl/events.hpp>
#include <corows/impl/handshake.hpp>
#include <corows/impl/http.hpp>
#include <corows/impl/read.hpp>
#include <corows/impl/write.hpp>

#include <corows/connection_handle.hpp>

#include <corows/detail/instances.hpp>
#if defined(COROWS_HAS_TLS)
#include <corows/tls_stream.hpp>
#endif
#if COROWS_DETAIL_LIBRARY_INSTANCES
COROWS_DETAIL_WEBSOCKET_INSTANCES(extern, asio::ip::tcp::socket)
#if defined(COROWS_HAS_TLS)
COROWS_DETAIL_WEBSOCKET_INSTANCES(extern, corows::tls_stream)
#endif
#endif
