// SPDX-License-Identifier: BSL-1.0
// corows::client_stream: one stream type for ws:// and wss:// connections, so that connect()
// can return the same websocket type whichever scheme the URL names.
#pragma once

#if !defined(COROWS_HAS_TLS)
#error "corows/client_stream.hpp needs OpenSSL: build corows with -Dtls=enabled (libssl-dev installed)"
#endif

#include <corows/asio.hpp>

#include <cstddef>
#include <system_error>
#include <utility>
#include <variant>

namespace corows {

/// A TCP socket or a TLS stream over one, chosen at run time; an Asio AsyncReadStream and
/// AsyncWriteStream that forwards every operation to the alternative it holds.
class client_stream {
public:
    /// The plain alternative.
    using tcp_socket = asio::ip::tcp::socket;
    /// The TLS alternative: Asio's SSL stream (not corows::tls_stream).
    using ssl_stream = asio::ssl::stream<tcp_socket>;
    /// The old name of ssl_stream.
    using tls_stream [[deprecated("use ssl_stream")]] = ssl_stream;
    /// Both alternatives run on the socket's executor type.
    using executor_type = tcp_socket::executor_type;
    /// The TCP socket under either alternative.
    using lowest_layer_type = tcp_socket::lowest_layer_type;

    /// Holds a new, unopened plain socket.
    explicit client_stream(const executor_type& ex) : v_(std::in_place_index<0>, ex) {}
    /// Holds a new TLS stream over an unopened socket, using `ctx`.
    client_stream(const executor_type& ex, asio::ssl::context& ctx) : v_(std::in_place_index<1>, ex, ctx) {}
    /// Holds a plain TCP socket.
    explicit client_stream(tcp_socket s) : v_(std::in_place_index<0>, std::move(s)) {}
    /// Holds a TLS stream (its handshake is the owner's business).
    explicit client_stream(ssl_stream s) : v_(std::in_place_index<1>, std::move(s)) {}

    /// Takes over `other`'s stream.
    client_stream(client_stream&&) noexcept = default;
    /// Replaces the held stream, closing the old one.
    client_stream& operator=(client_stream&& other) noexcept {
        // Asio 1.22's ssl::stream move assignment leaks the SSL object it overwrites:
        // destroy and reconstruct instead.
        if (this != &other) {
            if (other.v_.index() == 0) v_.emplace<0>(std::move(std::get<0>(other.v_)));
            else v_.emplace<1>(std::move(std::get<1>(other.v_)));
        }
        return *this;
    }

    /// True if this is the TLS alternative.
    bool is_tls() const noexcept { return v_.index() == 1; }
    /// The TLS stream, or nullptr for a plain socket.
    ssl_stream* tls() noexcept { return std::get_if<1>(&v_); }
    /// The plain socket, or nullptr for a TLS stream.
    tcp_socket* plain() noexcept { return std::get_if<0>(&v_); }

    /// The executor of the underlying socket.
    executor_type get_executor() noexcept {
        return std::visit([](auto& s) { return s.get_executor(); }, v_);
    }
    /// The TCP socket under either alternative.
    lowest_layer_type& lowest_layer() noexcept {
        return std::visit([](auto& s) -> lowest_layer_type& { return s.lowest_layer(); }, v_);
    }
    /// The TCP socket under either alternative.
    const lowest_layer_type& lowest_layer() const noexcept {
        return std::visit([](const auto& s) -> const lowest_layer_type& { return s.lowest_layer(); }, v_);
    }

    /// Reads some bytes from the held stream; completes with (error_code, bytes read).
    template <class MutableBufferSequence, class CompletionToken>
    auto async_read_some(const MutableBufferSequence& buffers, CompletionToken&& token) {
        return asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& b) {
                std::visit([&](auto& s) { s.async_read_some(b, std::move(handler)); }, v_);
            },
            token, buffers);
    }

    /// Writes some bytes to the held stream; completes with (error_code, bytes written).
    template <class ConstBufferSequence, class CompletionToken>
    auto async_write_some(const ConstBufferSequence& buffers, CompletionToken&& token) {
        return asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
            [this](auto handler, const ConstBufferSequence& b) {
                std::visit([&](auto& s) { s.async_write_some(b, std::move(handler)); }, v_);
            },
            token, buffers);
    }

private:
    std::variant<tcp_socket, ssl_stream> v_;
};

} // namespace corows
