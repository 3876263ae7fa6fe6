// The state one connection shares between its operations and its background writer.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/detail/buffer_pool.hpp>
#include <corows/message.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/message_writer.hpp>
#include <corows/options.hpp>
#include <corows/prepared_message.hpp>

#include <asio/buffer.hpp>

#include <asio/socket_base.hpp>
#include <asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

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

/// Allocates exactly the size asked for. For operations that stay pending as long as a
/// connection is idle (its socket wait): Asio's default hands them the per-thread recycled
/// block of whatever operation came before, often several times larger, and that waste
/// would stay with the connection.
template <class T>
struct exact_allocator {
    using value_type = T;
    exact_allocator() noexcept = default;
    template <class U>
    exact_allocator(const exact_allocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
    template <class U>
    bool operator==(const exact_allocator<U>&) const noexcept { return true; }
};

/// Frames waiting for the socket: bytes encoded into the queue, and prepared frames queued by
/// reference (a broadcast shares one copy among all its connections).
struct write_queue {
    /// A prepared frame that goes out after the first `at` bytes of `bytes`.
    struct shared_frame {
        std::size_t at;
        std::span<const std::uint8_t> frame;
        std::shared_ptr<const prepared_message> keep;
    };

    byte_buffer bytes;
    std::vector<shared_frame> shared;
    std::size_t shared_bytes = 0;

    bool empty() const noexcept { return bytes.empty() && shared.empty(); }
    std::size_t size() const noexcept { return bytes.size() + shared_bytes; }
    void clear() noexcept {
        bytes.clear();
        shared.clear();
        shared_bytes = 0;
    }
    /// Queues `frame` (owned by `keep`) after everything queued so far.
    void add_shared(std::span<const std::uint8_t> frame, std::shared_ptr<const prepared_message> keep) {
        shared.push_back({bytes.size(), frame, std::move(keep)});
        shared_bytes += frame.size();
    }
};

/// Everything a websocket<Stream> owns. Held by shared_ptr so the background writer and the
/// timers can outlive the websocket object that started them.
template <class Stream>
struct websocket_state {
    using clock = std::chrono::steady_clock;

    websocket_state(Stream&& s, std::shared_ptr<const options> o)
        : stream(std::move(s)),
          shared_opts(std::move(o)),
          opts(*shared_opts),
          reader(reader_config{role::server, opts.max_message_size}),
          writer(writer_config{role::server, opts.frame_size}) {}

    Stream stream;
    // Shared, not copied: a server's connections all read the same settings.
    std::shared_ptr<const options> shared_opts;
    const options& opts;
    message_reader reader;
    message_writer writer;

    // read_message()'s message, kept across cancelled reads; made by the first such read.
    std::unique_ptr<message> assembly;
    byte_buffer rbuf;            // received bytes; [rpos, size) not yet decoded
    std::size_t rpos = 0;
    // A close or failure a read decoded without a coroutine, for do_read() to act on; its
    // spans point into rbuf, which no socket read touches before do_read() takes it.
    // (Heap, not inline: it exists once per connection at most, and idle ones carry none.)
    std::unique_ptr<read_result> stashed;
    std::size_t read_size = 4096; // bytes asked of the next socket read
    static constexpr std::size_t max_read_size = 256 * 1024;
    bool drained = false;        // the last socket read left nothing in the kernel
    bool nonblocking = false;    // the socket's user-level non-blocking mode is set
    write_queue pending;         // frames queued, not yet handed to the socket
    write_queue inflight;        // frames the socket write in progress is sending
    std::vector<asio::const_buffer> gather; // inflight's pieces, when it has shared frames
    std::error_code write_error; // first failed socket write; surfaces on the next operation

    // The timers exist only while in use, so an idle connection does not carry them.
    // `signal` wakes every coroutine waiting for the queue to drain or the connection to
    // close: its expiry stays at infinity and cancel() is the notification.
    std::unique_ptr<asio::steady_timer> signal;
    std::unique_ptr<asio::steady_timer> deadline; // handshake and close timeouts
    std::unique_ptr<asio::steady_timer> watchdog; // idle timeout and keepalive pings
    std::size_t waiters = 0;     // coroutines in wait(), woken by notify()

    clock::time_point last_rx = clock::now();
    clock::time_point last_ping{};

    std::string subprotocol;
    std::optional<deflate_params> deflate; // negotiated permessage-deflate, if any
    std::string peer_reason;
    std::uint16_t peer_code = 0;
    role local = role::server;

    bool open = false;           // handshake done, transport not closed
    bool writing = false;        // a socket write (background or direct) is in progress
    bool write_scheduled = false; // kick() posted a write that has not started yet
    bool writing_direct = false; // a direct write's message is part-way out
    bool reading = false;        // a read_message is in progress
    bool close_sent = false;
    bool close_received = false;
    bool transport_closed = false;
    bool timed_out = false;

    // The application's callbacks, allocated only if it sets one.
    struct callbacks {
        std::function<void(std::span<const std::uint8_t>)> on_ping;
        std::function<void(std::span<const std::uint8_t>)> on_pong;
        std::function<void(std::uint16_t, std::string_view)> on_close;
    };
    std::unique_ptr<callbacks> cb;

    /// The callbacks, created on first use.
    callbacks& callbacks_for_setting() {
        if (!cb) cb = std::make_unique<callbacks>();
        return *cb;
    }

    /// `t`, created on first use.
    asio::steady_timer& timer(std::unique_ptr<asio::steady_timer>& t) {
        if (!t) t = std::make_unique<asio::steady_timer>(stream.get_executor(), clock::time_point::max());
        return *t;
    }

    /// Wakes all waiters; they re-check their conditions. (Cancelling a timer takes the
    /// scheduler's lock: skipped when nobody waits, which is the common case per write.)
    void notify() noexcept {
        if (waiters && signal) signal->cancel();
    }

    /// Closes the transport once and cancels everything pending on it.
    void close_transport_now() noexcept {
        open = false;
        if (transport_closed) return;
        transport_closed = true;
        close_transport(stream);
        if (deadline) deadline->cancel();
        if (watchdog) watchdog->cancel();
        notify();
    }

    /// The send queue's bytes, to append frames to (with a pooled buffer if it has none).
    byte_buffer& out() noexcept {
        if (pending.bytes.capacity() == 0) buffer_pool::writes().take(pending.bytes);
        return pending.bytes;
    }
    /// The writer has nothing left: its buffers go back to the pool. One that grew past what
    /// the pool takes (a queue that filled up under backpressure) stays: freeing it would make
    /// a sender that keeps the queue full regrow it from nothing each time.
    void release_write_buffers() noexcept {
        for (byte_buffer* b : {&pending.bytes, &inflight.bytes})
            if (b->empty() && buffer_pool::poolable(b->capacity())) buffer_pool::writes().give(*b);
    }

    /// Bytes accepted for sending and not yet written.
    std::size_t queued() const noexcept { return pending.size() + inflight.size(); }
};

} // namespace corows::detail
