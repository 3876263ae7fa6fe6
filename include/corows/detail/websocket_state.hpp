// The state one connection shares between its operations and its background writer.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/message.hpp>
#include <corows/message_reader.hpp>
#include <corows/message_writer.hpp>
#include <corows/options.hpp>

#include <asio/socket_base.hpp>
#include <asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>

namespace corows::detail {

/// Closes the transport under `s` at once, whatever its layers.
template <class Stream>
void close_transport(Stream& s) noexcept {
    std::error_code ignored;
    auto& sock = s.lowest_layer();
    if constexpr (requires { sock.shutdown(asio::socket_base::shutdown_both, ignored); })
        sock.shutdown(asio::socket_base::shutdown_both, ignored);
    sock.close(ignored);
}

/// Everything a websocket<Stream> owns. Held by shared_ptr so the background writer and the
/// timers can outlive the websocket object that started them.
template <class Stream>
struct websocket_state {
    using clock = std::chrono::steady_clock;

    websocket_state(Stream&& s, const options& o)
        : stream(std::move(s)),
          opts(o),
          reader(reader_config{role::server, o.max_message_size}),
          writer(writer_config{role::server, o.frame_size}),
          signal(stream.get_executor(), clock::time_point::max()),
          deadline(stream.get_executor()),
          watchdog(stream.get_executor()) {}

    Stream stream;
    options opts;
    message_reader reader;
    message_writer writer;

    message assembly;            // read_message()'s message, kept across cancelled reads
    byte_buffer rbuf;            // received bytes; [rpos, size) not yet decoded
    std::size_t rpos = 0;
    std::size_t read_size = 4096; // bytes asked of the next socket read
    static constexpr std::size_t max_read_size = 256 * 1024;
    byte_buffer pending;         // frames queued, not yet handed to the socket
    byte_buffer inflight;        // frames the socket write in progress is sending
    std::error_code write_error; // first failed socket write; surfaces on the next operation

    // Wakes every coroutine waiting for the queue to drain or the connection to close:
    // its expiry stays at infinity and cancel() is the notification.
    asio::steady_timer signal;
    asio::steady_timer deadline; // handshake and close timeouts
    asio::steady_timer watchdog; // idle timeout and keepalive pings

    clock::time_point last_rx = clock::now();
    clock::time_point last_ping{};

    std::string subprotocol;
    std::optional<deflate_params> deflate; // negotiated permessage-deflate, if any
    std::string peer_reason;
    std::uint16_t peer_code = 0;
    role local = role::server;

    bool open = false;           // handshake done, transport not closed
    bool writing = false;        // a socket write (pump or direct) is in progress
    bool writing_direct = false; // a direct write's message is part-way out
    bool reading = false;        // a read_message is in progress
    bool close_sent = false;
    bool close_received = false;
    bool transport_closed = false;
    bool timed_out = false;

    std::function<void(std::span<const std::uint8_t>)> on_ping;
    std::function<void(std::span<const std::uint8_t>)> on_pong;
    std::function<void(std::uint16_t, std::string_view)> on_close;

    /// Wakes all waiters; they re-check their conditions.
    void notify() noexcept { signal.cancel(); }

    /// Closes the transport once and cancels everything pending on it.
    void close_transport_now() noexcept {
        open = false;
        if (transport_closed) return;
        transport_closed = true;
        close_transport(stream);
        deadline.cancel();
        watchdog.cancel();
        notify();
    }

    /// Bytes accepted for sending and not yet written.
    std::size_t queued() const noexcept { return pending.size() + inflight.size(); }
};

} // namespace corows::detail
