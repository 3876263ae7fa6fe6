// SPDX-License-Identifier: BSL-1.0
// corows::basic_connection_handle<Stream>: a copyable reference to one connection that any
// thread may use to send to it or close it, and that outlives the connection harmlessly; and
// for code on the connection's own thread (a hub), basic_connection_ref<Stream>, a weak
// reference, and basic_local_connection<Stream>, what it locks to.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/transport.hpp>
#include <corows/message.hpp>
#include <corows/prepared_message.hpp>
#include <corows/websocket.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace corows {

/// A thread-safe handle to one connection (websocket::handle()). Its operations travel to the
/// connection's executor and act there as the websocket's own send() and start_close() do;
/// once the connection is gone they do nothing. The handle does not keep the connection alive.
///
/// Valid as long as the connection's execution context (a server's io_context) exists, from
/// any thread: a connection that is gone makes a send a no-op, not a crash.
template <class Stream>
class basic_connection_handle {
    using transport = detail::transport<Stream>;

public:
    /// Reports whether a send was queued (false: the queue was full, or the connection is
    /// closing or gone); called on the connection's thread.
    using completion = std::function<void(bool queued)>;

    /// A handle to no connection: every operation returns false.
    basic_connection_handle() = default;

    /// Queues `pm` on the connection (as websocket::send(pm), so a full queue drops it);
    /// false if the connection is already known to be gone. `done`, if set, learns the outcome.
    bool send(std::shared_ptr<const prepared_message> pm, completion done = {}) const {
        return post([pm = std::move(pm), done = std::move(done)](const std::shared_ptr<transport>& s) {
            bool queued = s && detail::send_prepared(s, pm);
            if (done) done(queued);
        });
    }
    /// Copies `payload` and queues it as one `kind` message, as send(pm).
    bool send(std::span<const std::uint8_t> payload, message_kind kind, completion done = {}) const {
        if (expired()) return false;
        return send(prepared_message::make(payload, kind), std::move(done));
    }
    /// Queues a text message (`text` must be UTF-8), as send(pm).
    bool send_text(std::string_view text, completion done = {}) const {
        return send(as_bytes(text), message_kind::text, std::move(done));
    }
    /// Queues a binary message, as send(pm).
    bool send_binary(std::span<const std::uint8_t> data, completion done = {}) const {
        return send(data, message_kind::binary, std::move(done));
    }
    /// Starts the close handshake with `code` and `reason` (as websocket::start_close) and
    /// does not wait for it; false if the connection is already known to be gone.
    bool start_close(std::uint16_t code = 1000, std::string reason = {}) const {
        return post([code, reason = std::move(reason)](const std::shared_ptr<transport>& s) {
            if (s && !s->transport_closed && may_close_with(code))
                detail::begin_close(s, code, reason);
        });
    }
    /// The old name of start_close(): it never waited for the close handshake.
    [[deprecated("use start_close")]] bool close(std::uint16_t code = 1000, std::string reason = {}) const {
        return start_close(code, std::move(reason));
    }
    /// True once the connection no longer exists (a false answer may be outdated at once).
    bool expired() const noexcept { return transport_.expired(); }
    /// True if both handles name the same connection (or both none).
    bool same_as(const basic_connection_handle& other) const noexcept {
        return !transport_.owner_before(other.transport_) && !other.transport_.owner_before(transport_);
    }

private:
    friend class websocket<Stream>;
    friend class basic_local_connection<Stream>;

    basic_connection_handle(const std::shared_ptr<transport>& s) : transport_(s), executor_(s->stream.get_executor()) {}

    // Runs `f` with the connection (null if it went meanwhile) on its executor.
    template <class F>
    bool post(F&& f) const {
        if (transport_.expired()) return false;
        asio::post(executor_, [w = transport_, f = std::forward<F>(f)]() mutable { f(w.lock()); });
        return true;
    }

    std::weak_ptr<transport> transport_;
    typename Stream::executor_type executor_;
};

template <class Stream>
class basic_connection_ref;

/// One connection as code running on its thread sees it (websocket::local(),
/// basic_connection_ref::lock()): a strong reference that keeps the connection's state, not
/// its transport, alive while held. Every member but the null check must be called on the
/// connection's thread and on a non-null object. This is the whole of what a hub uses.
template <class Stream>
class basic_local_connection {
    using transport = detail::transport<Stream>;

public:
    /// No connection.
    basic_local_connection() = default;

    /// True if it names a connection.
    explicit operator bool() const noexcept { return s_ != nullptr; }
    /// True while the connection is open: handshake done, no close frame either way, transport open.
    bool is_open() const noexcept { return !s_->transport_closed && s_->conn.state() == connection_state::open; }
    /// Queues `pm` as websocket::send(pm) does; false if the queue is full or nothing more can be sent.
    bool send(const std::shared_ptr<const prepared_message>& pm) const { return detail::send_prepared(s_, pm); }
    /// True once nothing more can reach the peer (transport closed, our close frame queued, a
    /// write failed): a send() refused while this is false was refused for want of room.
    bool sending_ended() const noexcept {
        return s_->transport_closed || s_->conn.close_sent() || static_cast<bool>(s_->conn.write_status());
    }
    /// Starts the close handshake with `code` (sendable) and `reason`, as websocket::start_close().
    void close(std::uint16_t code, std::string_view reason) const { detail::begin_close(s_, code, reason); }
    /// Closes it with 1008 "too slow" for a queue that stayed full, counted as a slow consumer.
    void close_slow_consumer() const {
        s_->conn.note_slow_consumer();
        detail::begin_close(s_, static_cast<std::uint16_t>(close_code::policy_violation), "too slow");
    }
    /// Adds `f` to run once on this thread when the transport closes or the connection goes
    /// without having closed it; it runs before what was added earlier.
    void on_gone(std::function<void()> f) const {
        if (!s_->cb) s_->cb = std::make_unique<typename transport::callbacks>();
        auto& slot = s_->cb->on_gone;
        if (!slot) slot = std::move(f);
        else slot = [f = std::move(f), previous = std::move(slot)]() mutable {
            f();
            previous();
        };
    }
    /// The connection's executor, the one every member must be called on.
    typename Stream::executor_type get_executor() const { return s_->stream.get_executor(); }
    /// An address that identifies the connection among living ones (a map key); also after a
    /// basic_connection_ref to it expired, until it is gone and its on_gone() callbacks ran.
    const void* id() const noexcept { return s_.get(); }
    /// A weak reference to the connection.
    basic_connection_ref<Stream> ref() const noexcept { return basic_connection_ref<Stream>(s_); }
    /// The thread-safe handle of the connection (websocket::handle()).
    basic_connection_handle<Stream> handle() const { return basic_connection_handle<Stream>(s_); }

private:
    friend class websocket<Stream>;
    friend class basic_connection_ref<Stream>;

    explicit basic_local_connection(std::shared_ptr<transport> s) noexcept : s_(std::move(s)) {}

    std::shared_ptr<transport> s_;
};

/// A weak reference to one connection for code on the connection's own thread (a hub's lists
/// of subscribers): one weak pointer, no executor; basic_connection_handle is for other threads.
template <class Stream>
class basic_connection_ref {
    using transport = detail::transport<Stream>;

public:
    /// A reference to no connection.
    basic_connection_ref() = default;

    /// The connection, or a null one if it is gone; on the connection's thread.
    basic_local_connection<Stream> lock() const noexcept { return basic_local_connection<Stream>(w_.lock()); }

private:
    friend class basic_local_connection<Stream>;

    explicit basic_connection_ref(const std::shared_ptr<transport>& s) noexcept : w_(s) {}

    std::weak_ptr<transport> w_;
};

/// The handle of a plain-TCP connection.
using connection_handle = basic_connection_handle<asio::ip::tcp::socket>;

template <class Stream>
basic_connection_handle<Stream> websocket<Stream>::handle() const {
    return basic_connection_handle<Stream>(s_);
}

template <class Stream>
basic_local_connection<Stream> websocket<Stream>::local() const noexcept {
    return basic_local_connection<Stream>(s_);
}

} // namespace corows
