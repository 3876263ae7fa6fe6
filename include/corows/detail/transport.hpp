// SPDX-License-Identifier: BSL-1.0
// detail::transport<Stream>, all the I/O of one websocket<Stream>: the stream, the sans-I/O connection it drives, the
// read pump and the writer that move bytes between them, and the connection's deadline.
// Every protocol decision (what to answer, when to close, which code) is the connection's;
// this file only reads, writes, waits and wakes.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/buffer_pool.hpp>
#include <corows/detail/deadline_service.hpp>
#include <corows/message.hpp>
#include <corows/options.hpp>
#include <corows/protocol/connection.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace corows::detail {

/// Closes the transport under `s` at once, whatever its layers.
template <class Stream>
void close_transport(Stream& s) noexcept {
    // A stream with its own last words (TLS: the alert or close_notify) says them first,
    // without waiting; a plain socket has none.
    if constexpr (requires { s.flush_before_close(); }) s.flush_before_close();
    error_code ignored;
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

/// What the read pump needs before it can go on.
enum class pump_step : std::uint8_t {
    message,  ///< a message is in the `message&` given to advance()
    readable, ///< wait until the socket is readable, then readable()
    read,     ///< read into conn.receive_space() (async_read_some), then received()
    room,     ///< wait (wait_signal) until the writer made room in the queue
    yield,    ///< let the thread's other work run (post), then resume()
    ended,    ///< the connection is over: see finished() and end_report()
};

/// One connection's I/O state. Held by shared_ptr: the writer's completion handlers, the
/// timer and the event driver may outlive the websocket object that started them.
template <class Stream>
class transport {
public:
    using clock = connection::clock;

    /// A plain TCP socket (or corows::tls_stream) can be waited on without a buffer (an Asio
    /// SSL stream cannot: it may hold decrypted bytes the socket no longer shows).
    static constexpr bool waits_without_buffer = requires(Stream& st, error_code& ec) {
        st.async_wait(asio::socket_base::wait_read, [](error_code) {});
        st.non_blocking(true, ec);
        st.read_some(asio::mutable_buffer{}, ec);
    };
    /// A plain TCP socket can also be written without a handler (write_now()).
    static constexpr bool writes_without_handler = waits_without_buffer && requires(Stream& st, error_code& ec) {
        st.write_some(asio::const_buffer{}, ec);
    };

    /// The application's callbacks, allocated only if it sets one.
    struct callbacks {
        std::function<void(std::span<const std::uint8_t>)> on_ping;
        std::function<void(std::span<const std::uint8_t>)> on_pong;
        std::function<void(std::uint16_t, std::string_view)> on_close;
        /// The transport closed, or this object is going without having closed it: called
        /// once (a hub forgets the connection's subscriptions here).
        std::function<void()> on_gone;
    };

    transport(Stream&& s, std::shared_ptr<const options> o) : stream(std::move(s)), conn(std::move(o)) {}
    transport(const transport&) = delete;
    transport& operator=(const transport&) = delete;
    ~transport() {
        if (deadlines_) deadlines_->cancel(deadline_);
        gone();
    }

    Stream stream;
    connection conn;
    /// read_message()'s and event mode's message, kept across cancelled reads.
    std::unique_ptr<message> assembly;
    std::unique_ptr<callbacks> cb;

    bool reading = false;          ///< a reader (read_message, close, event mode) owns reading
    bool transport_closed = false; ///< the stream is closed; nothing more moves
    bool end_reported = false;     ///< a reader was told why the connection ended

    // ------------------------------------------------------------------ the read pump

    /// Decodes received bytes, answering what the protocol asks, and reads the transport
    /// without blocking, until there is a message for `m` or a reason to wait; yields once a
    /// turn has read connection::turn_budget bytes. With `pause_when_full` (event mode, whose callbacks
    /// cannot wait for room) it stops reading while the write queue is full. A coroutine
    /// reader is not paused: its application waits in write_message() if it answers, and
    /// may be reading precisely so that a peer streaming to it keeps reading too (two ends
    /// that both stopped reading at a full queue would wait for each other forever).
    pump_step advance(const std::shared_ptr<transport>& self, message& m, bool pause_when_full) {
        for (;;) {
            if (conn.state() == connection_state::closed || transport_closed) return ended(self);
            if (pause_when_full && conn.reading_paused()) {
                kick(self);
                return pump_step::room;
            }
            switch (conn.next_event(m)) {
            case connection_event::message:
                return pump_step::message;
            case connection_event::ping:
                if (cb && cb->on_ping) cb->on_ping(conn.control_payload());
                kick(self);
                continue;
            case connection_event::pong:
                if (cb && cb->on_pong) cb->on_pong(conn.control_payload());
                continue;
            case connection_event::close:
                if (cb && cb->on_close) cb->on_close(conn.peer_code(), conn.peer_reason());
                settle(self);
                continue;
            case connection_event::failed:
                settle(self);
                continue;
            case connection_event::yield:
                // Everything read is decoded: the buffers go back while others run.
                write_before_waiting(self);
                conn.release_idle_buffers(&m, false);
                return pump_step::yield;
            case connection_event::need_more:
                break;
            }
            if constexpr (waits_without_buffer) {
                if (drained_) {
                    // Nothing more to read now: what the decoded bytes answered goes out before
                    // we wait (while more is readable, the answers keep batching).
                    write_before_waiting(self);
                    conn.release_idle_buffers(&m, false);
                    return pump_step::readable;
                }
                error_code ec;
                if (try_read(ec) && ec) read_failed();
            } else {
                write_soon(self);
                conn.release_idle_buffers(&m, true);
                return pump_step::read;
            }
        }
    }

    /// After a readable wait completed: the socket has bytes again, and a new turn starts.
    void readable() noexcept {
        drained_ = false;
        conn.begin_turn();
    }
    /// After a yield or a wait for room: a new turn.
    void resume() noexcept { conn.begin_turn(); }

    /// After an async_read_some into conn.receive_space() completed with `n` bytes and `ec`;
    /// false if the caller's read was cancelled (the connection is as it was).
    bool received(std::size_t n, error_code ec) {
        conn.received(n, clock::now());
        conn.begin_turn();
        if (ec == asio::error::operation_aborted && !transport_closed) return false;
        if (ec) read_failed();
        return true;
    }

    /// A readable wait or a read failed: the transport is gone (or was closed under the
    /// read). Not for a cancellation of the caller's own read.
    void read_failed() noexcept {
        conn.receive_closed();
        close_transport_now();
    }

    /// The socket read primitive of every reader: one non-blocking read into the connection.
    /// True if it read bytes, or failed (`ec` set: the transport is gone); false if the
    /// socket had nothing (drained() is then true until readable()).
    bool try_read(error_code& ec) requires waits_without_buffer {
        if (!nonblocking_) {
            stream.non_blocking(true, ec);
            if (ec) return true;
            nonblocking_ = true;
        }
        auto space = conn.receive_space();
        std::size_t n = stream.read_some(asio::buffer(space.data(), space.size()), ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            ec.clear();
            drained_ = true;
            return false;
        }
        if (ec) return true;
        // A read that did not fill the space emptied the socket: the next one waits first
        // instead of trying a read the kernel would refuse.
        drained_ = n < space.size();
        conn.received(n, clock::now());
        return true;
    }

    /// True if the next try_read() would find the socket empty.
    bool drained() const noexcept { return drained_; }

    /// What a reader reports once the connection ended: the first time, why it ended (a
    /// violation, a timeout, error::closed); afterwards conn.closed_error().
    error_code end_report() noexcept {
        if (!end_reported) {
            end_reported = true;
            if (auto ec = conn.error()) return ec;
        }
        return conn.closed_error();
    }

    // ------------------------------------------------------------------ the writer

    /// Starts the background writer if frames wait and no write is running. Posted, not
    /// dispatched: the calling code goes on queueing until it suspends (an echo loop answers
    /// a whole batch of received frames), and all of that goes out in one write. A reader
    /// about to wait starts the scheduled write itself (write_soon): lower latency, same
    /// batching.
    void kick(const std::shared_ptr<transport>& self) {
        if (writing_ || !conn.has_output() || transport_closed) return;
        writing_ = true;
        write_scheduled_ = true;
        asio::post(stream.get_executor(), [self] { self->write_soon(self); });
    }

    /// Starts the write kick() scheduled, unless it has started already.
    void write_soon(const std::shared_ptr<transport>& self) {
        if (!write_scheduled_) return;
        write_scheduled_ = false;
        write_pending(self);
    }

    /// True while a transport write (background or direct) is in progress.
    bool writing() const noexcept { return writing_; }

    /// Bytes accepted for sending and not yet written (see output_queue::size()).
    std::size_t queued() const noexcept { return conn.queued(); }

    /// A direct write (a large message from the caller's memory) takes the transport; the
    /// send timeout watches it from now.
    void begin_direct(const std::shared_ptr<transport>& self) {
        writing_ = true;
        conn.begin_direct();
        conn.output_progress(clock::now());
        arm_timer(self);
    }

    /// The completion condition of every transport write: Asio's transfer_all that also
    /// tells the connection of each write_some that moved bytes. The send timeout counts
    /// progress, not whole writes, so a large message to a slow but steady reader is not cut.
    /// With the write's `total`, the write_some that completes it reads no clock
    /// (output_written() follows); a direct write's parts pass none, since the next part's
    /// deadline runs on from the last.
    auto noting_progress(std::size_t total = SIZE_MAX) noexcept {
        return [c = &conn, total](const error_code& ec, std::size_t n) {
            if (!ec && n != 0 && n < total) c->output_progress(clock::now());
            return asio::transfer_all()(ec, n);
        };
    }
    /// The direct write is over (`ec` its outcome): the background writer may go on.
    void end_direct(const std::shared_ptr<transport>& self, error_code ec) {
        writing_ = false;
        conn.end_direct();
        if (ec) {
            // A frame may be half written: the stream cannot carry another one.
            conn.write_failed(closed_by_us(ec));
            close_transport_now();
        }
        kick(self);
        notify();
    }

    /// A transport write failed with `ec`: what the caller sees (why we closed it, if we did).
    error_code closed_by_us(error_code ec) const noexcept {
        if (!transport_closed) return ec;
        return conn.closed_error();
    }

    // ------------------------------------------------------------------ waiting and waking

    /// Waits for notify() with `handler(ec)`; `ec` is operation_aborted only if the wait
    /// itself was cancelled through the handler's cancellation slot.
    template <class Handler>
    void wait_signal(Handler&& handler) {
        ++waiters_;
        timer(signal_).async_wait(
            [this, h = std::forward<Handler>(handler)](error_code) mutable {
                --waiters_;
                std::move(h)(error_code{});
            });
    }
    /// The timer behind wait_signal(), for waits that need its cancellation.
    asio::steady_timer& signal_timer() { return timer(signal_); }
    /// Counts a waiter on signal_timer() in or out.
    void add_waiter(int d) noexcept { waiters_ = static_cast<std::size_t>(static_cast<long>(waiters_) + d); }

    /// Wakes every waiter; they re-check their conditions. (Cancelling a timer takes the
    /// scheduler's lock: skipped when nobody waits, which is the common case per write.)
    void notify() noexcept {
        if (waiters_ && signal_) signal_->cancel();
    }

    /// Closes the transport once and cancels everything pending on it.
    void close_transport_now() noexcept {
        if (transport_closed) return;
        transport_closed = true;
        if (conn.state() != connection_state::closed) conn.receive_closed();
        close_transport(stream);
        unschedule();
        notify();
        gone();
    }

    /// Runs on_gone once, if set.
    void gone() noexcept {
        if (cb && cb->on_gone) std::exchange(cb->on_gone, {})();
    }

    /// The connection's state moved: arms its deadline, sends what it queued and, once it is
    /// closed, lets the writer finish and close the transport (at once if nothing is left).
    void settle(const std::shared_ptr<transport>& self) {
        arm_timer(self);
        if (transport_closed) return;
        kick(self); // what the connection queued (a close reply, a failure's close frame)
        if (conn.state() == connection_state::closed && !writing_ && !conn.has_output()) close_transport_now();
    }

    // ------------------------------------------------------------------ the deadline

    /// Keeps conn.deadline() queued with the context's deadline_service; an open connection
    /// without timeouts is not queued at all.
    void arm_timer(const std::shared_ptr<transport>& self) {
        auto at = conn.deadline();
        if (at == clock::time_point::max() || transport_closed) {
            unschedule();
            return;
        }
        // An earlier deadline re-checks when it fires; only a nearer one moves the entry. One
        // that fired keeps its time until deadline_reached() runs, so nothing queues it anew
        // before then.
        if (armed_at_ <= at) return;
        armed_at_ = at;
        if (!deadlines_) deadlines_ = &deadline_service::of(stream.get_executor());
        deadlines_->schedule(deadline_, at, self, &transport::deadline_due, stream.get_executor());
    }

private:
    void unschedule() noexcept {
        if (!deadlines_ || armed_at_ == clock::time_point::max()) return;
        deadlines_->cancel(deadline_);
        armed_at_ = clock::time_point::max();
    }

    // On the service's timer: back onto the connection's own executor.
    static void deadline_due(std::shared_ptr<void> owner) {
        auto self = std::static_pointer_cast<transport>(std::move(owner));
        auto ex = self->stream.get_executor();
        asio::dispatch(ex, [self = std::move(self)] { self->deadline_reached(self); });
    }

    void deadline_reached(const std::shared_ptr<transport>& self) {
        armed_at_ = clock::time_point::max();
        switch (conn.on_timer(clock::now())) {
        case timer_outcome::none: break;
        case timer_outcome::ping: kick(self); break;
        case timer_outcome::timed_out: close_transport_now(); break;
        }
        arm_timer(self);
    }

    asio::steady_timer& timer(std::unique_ptr<asio::steady_timer>& t) {
        if (!t) t = std::make_unique<asio::steady_timer>(stream.get_executor(), clock::time_point::max());
        return *t;
    }

    // The transport reached the end of the connection: make sure the transport gets closed.
    pump_step ended(const std::shared_ptr<transport>& self) {
        settle(self);
        return pump_step::ended;
    }

    // The reader is about to wait for the socket: the scheduled write goes out now, and if the
    // kernel took it all, the send buffers go back to the pool, so an idle connection holds
    // none. Only here, not whenever the writer drains: a server that queues to many
    // connections before any write starts (a broadcast loop) needs more buffers at once than
    // a pool keeps, and would allocate them again for every message.
    void write_before_waiting(const std::shared_ptr<transport>& self) {
        write_soon(self);
        if (!writing_) conn.release_write_buffers();
    }

    // One turn of the background writer: hands everything queued to one transport write, and
    // comes back for what was queued meanwhile. A completion handler, not a coroutine: no
    // frame to allocate per write.
    void write_pending(const std::shared_ptr<transport>& self) {
        if (!conn.has_output() || transport_closed) {
            if (transport_closed && !conn.write_error()) conn.write_failed(error::closed);
            writing_ = false;
            // A closed connection's last frame is out: the transport goes now.
            if (conn.state() == connection_state::closed) close_transport_now();
            notify();
            return;
        }
        auto& q = conn.take_output();
        std::size_t sent = 0;
        if (write_now(q, sent)) {
            write_pending(self); // nothing was queued meanwhile: this ends the turn
            return;
        }
        // The kernel did not take it all: from here the send timeout watches the peer take it.
        conn.output_progress(clock::now());
        arm_timer(self);
        auto done = [self](error_code ec, std::size_t) {
            if (ec) {
                self->conn.write_failed(self->closed_by_us(ec));
                self->writing_ = false;
                self->conn.release_write_buffers();
                if (self->conn.state() == connection_state::closed) self->close_transport_now();
                self->notify();
                return;
            }
            self->conn.output_written();
            self->notify();
            self->write_pending(self);
        };
        auto bytes = q.bytes.data();
        if (!q.has_shared()) {
            asio::async_write(stream, asio::buffer(bytes.data() + sent, bytes.size() - sent),
                              noting_progress(bytes.size() - sent), std::move(done));
            return;
        }
        // Encoded bytes and shared frames interleaved, in queue order, in one gather write.
        if (!gather_) gather_ = std::make_unique<std::vector<asio::const_buffer>>();
        auto& gather = *gather_;
        gather.clear();
        std::size_t total = 0;
        q.for_each_piece([&](std::span<const std::uint8_t> piece) {
            gather.emplace_back(piece.data(), piece.size());
            total += piece.size();
        });
        asio::async_write(stream, std::span<const asio::const_buffer>(gather), noting_progress(total), std::move(done));
    }

    // Plain TCP: hands `q`'s bytes to the kernel at once, without an asynchronous write.
    // Returns true if it took them all (or the socket failed, recorded as the write error);
    // false when an asynchronous write must send the rest, from `sent` bytes on (not moved to
    // the front: a large queue would be copied). Asio's write would make the same send, but
    // holds the buffer until its completion handler runs, after every other ready handler:
    // with many busy connections, their buffers could not go back to the pool between batches.
    bool write_now(output_queue& q, std::size_t& sent) {
        if constexpr (!writes_without_handler) {
            return false;
        } else {
            if (q.has_shared()) return false; // broadcast frames: a gather write
            error_code ec;
            if (!nonblocking_) {
                stream.non_blocking(true, ec);
                if (ec) return false;
                nonblocking_ = true;
            }
            auto bytes = q.bytes.data();
            std::size_t n = stream.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
            if (ec == asio::error::would_block || ec == asio::error::try_again) return false;
            if (ec) {
                conn.write_failed(closed_by_us(ec));
                return true;
            }
            if (n == bytes.size()) {
                conn.output_written();
                return true;
            }
            sent = n;
            return false;
        }
    }

    // The in-flight queue's pieces when it has shared frames; made by the first broadcast.
    std::unique_ptr<std::vector<asio::const_buffer>> gather_;
    // `signal_` wakes everything waiting for the queue to drain or the connection to close:
    // its expiry stays at infinity and cancel() is the notification. It exists only while in
    // use, so an idle connection does not carry it.
    std::unique_ptr<asio::steady_timer> signal_;
    deadline_service* deadlines_ = nullptr; // the context's, from the first deadline on
    deadline_entry deadline_;               // conn.deadline(), queued there
    clock::time_point armed_at_ = clock::time_point::max(); // where deadline_ is queued
    std::size_t waiters_ = 0;
    bool writing_ = false;         // a transport write (background or direct) is in progress
    bool write_scheduled_ = false; // kick() posted a write that has not started yet
    bool nonblocking_ = false;     // the socket's user-level non-blocking mode is set
    bool drained_ = false;         // the last read left nothing in the kernel
};

} // namespace corows::detail
