// SPDX-License-Identifier: BSL-1.0
// corows::tls_stream: TLS over a TCP socket for servers with many idle connections. It does
// what asio::ssl::stream does for corows, but holds no buffer while a connection is idle
// (Asio's stream keeps about 68 KiB per connection whatever it does), and it waits for a
// readable socket without a buffer, as corows' plain TCP reader does. A server's TLS 1.3
// connection can also give up OpenSSL's SSL object after the handshake (release_openssl()).
#pragma once

#if !defined(COROWS_HAS_TLS)
#error "corows/tls_stream.hpp needs OpenSSL: build corows with -Dtls=enabled (libssl-dev installed)"
#endif

#include <corows/asio.hpp>
#include <corows/detail/platform.hpp>
#include <corows/detail/tls_engine.hpp>

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace corows {

/// A TLS stream over a TCP socket, for corows::basic_server and corows::websocket: an Asio
/// AsyncStream (async_read_some, async_write_some, async_handshake, async_shutdown) built on
/// OpenSSL and an asio::ssl::context, whose idle connections hold no buffer (and, after
/// release_openssl(), no OpenSSL connection either).
/// Errors are Asio's: OpenSSL failures in asio::error::get_ssl_category(), a peer that ends
/// the TCP connection without close_notify asio::ssl::error::stream_truncated, close_notify
/// asio::error::eof. One read and one write may be in flight at a time.
class tls_stream {
public:
    /// The TCP socket under the TLS layer.
    using next_layer_type = asio::ip::tcp::socket;
    /// The socket itself, as Asio's layered streams name it.
    using lowest_layer_type = next_layer_type::lowest_layer_type;
    /// The socket's executor type.
    using executor_type = next_layer_type::executor_type;
    /// Which side a handshake is for, as asio::ssl::stream takes it.
    using handshake_type = asio::ssl::stream_base::handshake_type;
    /// async_handshake(client): this side connected.
    static constexpr handshake_type client = asio::ssl::stream_base::client;
    /// async_handshake(server): this side accepted.
    static constexpr handshake_type server = asio::ssl::stream_base::server;

    /// TLS on the connected `socket`, with the settings (certificate, verification) of `ctx`,
    /// which must outlive the stream.
    tls_stream(next_layer_type socket, asio::ssl::context& ctx)
        : sock_(std::move(socket)), engine_(std::make_unique<detail::tls_engine>(ctx.native_handle())) {}
    /// TLS on a socket not yet connected (connect next_layer() first).
    tls_stream(const executor_type& ex, asio::ssl::context& ctx) : tls_stream(next_layer_type(ex), ctx) {}

    /// The socket's executor.
    executor_type get_executor() noexcept { return sock_.get_executor(); }
    /// The TCP socket.
    next_layer_type& next_layer() noexcept { return sock_; }
    /// The TCP socket.
    const next_layer_type& next_layer() const noexcept { return sock_; }
    /// The TCP socket.
    lowest_layer_type& lowest_layer() noexcept { return sock_.lowest_layer(); }
    /// The TCP socket.
    const lowest_layer_type& lowest_layer() const noexcept { return sock_.lowest_layer(); }
    /// The OpenSSL connection (SNI, peer certificate, verification settings, ...); null
    /// once release_openssl() took effect.
    SSL* native_handle() const noexcept { return engine_->native_handle(); }

    /// Asks the stream to free OpenSSL's connection (the SSL object with its session, about
    /// 11 KiB) once the handshake is done and OpenSSL holds no unread bytes, and to protect the
    /// records itself from then on, with OpenSSL's ciphers: for TLS 1.3 connections with
    /// AES-GCM or ChaCha20-Poly1305, a client's only if asked before its handshake (it then
    /// skips the server's session tickets). Anything else stays in OpenSSL, as does a
    /// connection whose OpenSSL has work under way (a KeyUpdate to send, a post-handshake
    /// message) or writes padded or short records. basic_server asks
    /// this of every connection once its WebSocket handshake is done, unless keep_openssl()
    /// was called; a run_http() handler calls it itself when it is done with native_handle().
    void release_openssl() noexcept {
        release_wanted_ = !kept_;
        if (release_wanted_ && engine_->detach_openssl()) release_wanted_ = false;
    }
    /// Keeps OpenSSL's connection for the stream's life (release_openssl() does nothing), for
    /// code that reads native_handle() after the handshake.
    void keep_openssl() noexcept {
        kept_ = true;
        release_wanted_ = false;
        engine_->forgo_detach();
    }
    /// True once the records are protected outside OpenSSL (see release_openssl()).
    bool openssl_released() const noexcept { return engine_->detached(); }
    /// Bytes of ciphertext the stream keeps between operations (0 when idle).
    std::size_t held_bytes() const noexcept { return engine_->held_bytes(); }
    /// The description (RFC 8446 §6: 40 handshake_failure, 70 protocol_version, ...) of the
    /// last fatal alert the stream sent, as a failed handshake does; -1 if none.
    int alert_sent() const noexcept { return engine_->alert_sent(); }

    /// Runs the TLS handshake as `type`; completes with error_code.
    template <class Token>
    auto async_handshake(handshake_type type, Token&& token) {
        engine_->set_server(type == server, release_wanted_);
        return asio::async_compose<Token, void(error_code)>(handshake_op{this}, token, sock_);
    }

    /// Sends close_notify (without waiting for the peer's); completes with error_code.
    template <class Token>
    auto async_shutdown(Token&& token) {
        return asio::async_compose<Token, void(error_code)>(shutdown_op{this}, token, sock_);
    }

    /// Reads at least one byte of application data into `buffers`; completes with
    /// (error_code, bytes).
    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        asio::mutable_buffer first;
        for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it)
            if (it->size() > 0) {
                first = *it;
                break;
            }
        return asio::async_compose<Token, void(error_code, std::size_t)>(read_op{this, first}, token, sock_);
    }

    /// Encrypts all of `buffers` and sends it; completes with (error_code, bytes) once the
    /// socket took every byte.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        std::size_t n = asio::buffer_size(buffers);
        error_code ec = encrypt(buffers, n);
        return asio::async_compose<Token, void(error_code, std::size_t)>(write_op{this, ec ? 0 : n, ec}, token,
                                                                          sock_);
    }

    /// Waits until read_some() may have bytes (the socket is readable, or decrypted bytes
    /// wait); completes with error_code. Holds no buffer while it waits.
    template <class Token>
    auto async_wait(asio::socket_base::wait_type w, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(wait_op{this, w}, token, sock_);
    }

    /// Puts the socket in non-blocking mode (read_some never blocks either way).
    void non_blocking(bool mode, error_code& ec) {
        sock_.non_blocking(mode, ec);
        nonblocking_ = mode && !ec;
    }

    /// Decrypts what can be read now into `b`: the bytes, or 0 with asio::error::would_block
    /// when the socket has none; never blocks.
    std::size_t read_some(const asio::mutable_buffer& b, error_code& ec) {
        ec = {};
        if (b.size() == 0) return 0;
        std::span<std::uint8_t> out(static_cast<std::uint8_t*>(b.data()), b.size());
        std::size_t total = 0;
        bool socket_empty = false; // a read that did not fill the scratch emptied the socket
        for (;;) {
            std::size_t n = 0;
            auto st = engine_->read(out.subspan(total), n);
            if (st == detail::tls_status::done) {
                total += n;
                if (total == out.size()) break;
                continue;
            }
            if (st == detail::tls_status::need_input) {
                if (socket_empty) {
                    // Not another read the kernel would refuse: the caller waits instead.
                    ec = asio::error::would_block;
                    break;
                }
                if (!pull(ec, &socket_empty)) break;
                continue;
            }
            ec = st == detail::tls_status::closed ? error_code(asio::error::eof) : ssl_error();
            ended_ = true; // a wait for more must not outlast what is already known
            break;
        }
        engine_->settle();
        // Bytes first: an error (or would_block) is seen again by the next call.
        if (total > 0) ec = {};
        return total;
    }

    /// For the code about to close the socket (corows' transport does, before every close): sends
    /// what TLS owes the peer, the fatal alert of a failure or else close_notify on an
    /// established connection (RFC 8446 §6.1), as far as the socket takes it at once, and
    /// drops what the peer sent meanwhile so that the close is a FIN, not a reset. Never
    /// blocks nor waits for the peer; does nothing while a write is in flight.
    void flush_before_close() noexcept {
        if (writing_ || !sock_.is_open()) return;
        error_code ec;
        if (!nonblocking_) {
            sock_.non_blocking(true, ec);
            if (ec) return;
            nonblocking_ = true;
        }
        if (engine_->may_close_notify()) engine_->shutdown();
        if (engine_->has_output()) {
            const std::vector<std::uint8_t> last = engine_->take_output();
            for (std::size_t at = 0; at < last.size() && !ec;)
                at += sock_.write_some(asio::buffer(last.data() + at, last.size() - at), ec);
        }
        // Bounded: a peer that keeps sending gets its reset after all.
        auto& buf = scratch();
        for (int i = 0; i < 2 && !ec; ++i) sock_.read_some(asio::buffer(buf.data(), buf.size()), ec);
    }

private:
    // Reads what the socket has into the per-thread buffer and lends it to the engine; false
    // with `ec` (would_block when empty, stream_truncated at the peer's FIN) if nothing came.
    // Sets `socket_empty` when the read did not fill the buffer.
    bool pull(error_code& ec, bool* socket_empty = nullptr) {
        if (!nonblocking_) {
            sock_.non_blocking(true, ec);
            if (ec) return false;
            nonblocking_ = true;
        }
        auto& buf = scratch();
        std::size_t got = sock_.read_some(asio::buffer(buf.data(), buf.size()), ec);
        if (ec) {
            if (ec == asio::error::eof) ec = asio::ssl::error::stream_truncated;
            return false;
        }
        if (socket_empty) *socket_empty = got < buf.size();
        engine_->lend({buf.data(), got});
        return true;
    }

    // Ciphertext read from the socket, per thread: a connection borrows it only while it
    // decrypts, so it costs nothing per connection.
    static std::array<std::uint8_t, 32 * 1024>& scratch() {
        return detail::per_thread<std::array<std::uint8_t, 32 * 1024>, struct tls_ciphertext_scratch>();
    }

    error_code ssl_error() const {
        return error_code(static_cast<int>(engine_->error()), asio::error::get_ssl_category());
    }

    // Encrypts `buffers` (n bytes) into the engine's output, as few records as their size needs.
    template <class ConstBuffers>
    error_code encrypt(const ConstBuffers& buffers, std::size_t n) {
        engine_->reserve_output(n);
        auto& joined = detail::per_thread<std::vector<std::uint8_t>, struct tls_joined_pieces>(); // small pieces made one record
        joined.clear();
        for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
            asio::const_buffer piece = *it;
            if (piece.size() == 0) continue;
            const auto* p = static_cast<const std::uint8_t*>(piece.data());
            if (joined.empty() && piece.size() == n) {
                // The usual case: one buffer, encrypted where it is.
                if (engine_->write({p, piece.size()}) != detail::tls_status::done) return ssl_error();
                return {};
            }
            joined.insert(joined.end(), p, p + piece.size());
            if (joined.size() >= 16 * 1024) {
                if (engine_->write(joined) != detail::tls_status::done) return ssl_error();
                joined.clear();
            }
        }
        if (!joined.empty() && engine_->write(joined) != detail::tls_status::done) return ssl_error();
        if (joined.capacity() > 64 * 1024) std::vector<std::uint8_t>().swap(joined);
        return {};
    }

    struct wait_op {
        tls_stream* s;
        asio::socket_base::wait_type w;
        bool started = false;
        template <class Self>
        void operator()(Self& self, error_code ec = {}) {
            if (started) return self.complete(ec);
            started = true;
            if (w == asio::socket_base::wait_read && (s->ended_ || s->engine_->has_buffered_input()))
                return asio::post(s->sock_.get_executor(), std::move(self));
            // Waiting for the peer, OpenSSL's record buffers go back to the heap: an idle
            // connection holds none. (SSL_MODE_RELEASE_BUFFERS frees them after every record,
            // which costs more than once per wait.)
            if (w == asio::socket_base::wait_read) {
                if (s->release_wanted_ && (s->engine_->detach_openssl() || !s->engine_->may_detach()))
                    s->release_wanted_ = false;
                s->engine_->release_buffers();
            }
            s->sock_.async_wait(w, std::move(self));
        }
    };

    struct read_op {
        tls_stream* s;
        asio::mutable_buffer b;
        bool started = false;
        template <class Self>
        void operator()(Self& self, error_code ec = {}) {
            if (!started) {
                started = true;
                // Never completes inside the initiating call: a buffered byte is read after a post.
                if (b.size() == 0 || s->ended_ || s->engine_->has_buffered_input())
                    return asio::post(s->sock_.get_executor(), std::move(self));
                return s->sock_.async_wait(asio::socket_base::wait_read, std::move(self));
            }
            if (ec) return self.complete(ec, 0);
            std::size_t n = s->read_some(b, ec);
            if (ec == asio::error::would_block || ec == asio::error::try_again)
                return s->sock_.async_wait(asio::socket_base::wait_read, std::move(self));
            self.complete(ec, n);
        }
    };

    struct write_op {
        tls_stream* s;
        std::size_t n;
        error_code failed;
        std::vector<std::uint8_t> cipher{};
        bool started = false;
        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t = 0) {
            s->writing_ = false;
            if (!started) {
                started = true;
                if (failed || !s->engine_->has_output()) return asio::post(s->sock_.get_executor(), std::move(self));
            } else if (failed || ec) {
                return self.complete(failed ? failed : ec, 0);
            }
            // Whatever waits goes out, including alerts a read queued meanwhile.
            if (s->engine_->has_output()) {
                cipher = s->engine_->take_output();
                auto buf = asio::buffer(cipher.data(), cipher.size());
                s->writing_ = true;
                return asio::async_write(s->sock_, buf, std::move(self));
            }
            std::vector<std::uint8_t>().swap(cipher);
            self.complete(error_code(), n);
        }
    };

    // Steps the handshake (or, with `shutdown`, sends close_notify) until it is done: sends
    // what OpenSSL wrote, reads what it needs.
    struct handshake_op {
        tls_stream* s;
        bool shutdown = false;
        error_code failed{};
        std::vector<std::uint8_t> cipher{};
        enum { start, running, finishing } step = start;

        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t = 0) {
            if (step == start) {
                step = running; // never completes inside the initiating call
                return asio::post(s->sock_.get_executor(), std::move(self));
            }
            std::vector<std::uint8_t>().swap(cipher);
            s->writing_ = false;
            if (ec) return self.complete(ec);
            if (step == finishing) return self.complete(failed); // its last flight is out
            auto& e = *s->engine_;
            for (;;) {
                auto st = shutdown ? e.shutdown() : e.handshake();
                e.settle();
                if (st == detail::tls_status::need_input && !shutdown) {
                    if (e.has_output()) return send(self); // our flight first, then theirs
                    if (s->pull(ec)) continue;
                    if (ec == asio::error::would_block || ec == asio::error::try_again)
                        return s->sock_.async_wait(asio::socket_base::wait_read, std::move(self));
                    return self.complete(ec);
                }
                if (st == detail::tls_status::failed) failed = s->ssl_error();
                else if (st == detail::tls_status::closed) failed = asio::error::eof;
                step = finishing;
                // Alerts too: a failed handshake tells the peer why before it completes.
                if (e.has_output()) return send(self);
                return self.complete(failed);
            }
        }

        template <class Self>
        void send(Self& self) {
            cipher = s->engine_->take_output();
            auto buf = asio::buffer(cipher.data(), cipher.size());
            s->writing_ = true;
            asio::async_write(s->sock_, buf, std::move(self));
        }
    };

    struct shutdown_op : handshake_op {
        explicit shutdown_op(tls_stream* stream) : handshake_op{stream, true} {}
    };

    next_layer_type sock_;
    std::unique_ptr<detail::tls_engine> engine_;
    bool nonblocking_ = false;
    bool ended_ = false; // read_some() saw close_notify or a TLS error
    bool writing_ = false; // an async_write of ciphertext is in flight
    bool release_wanted_ = false;
    bool kept_ = false;
};

} // namespace corows
