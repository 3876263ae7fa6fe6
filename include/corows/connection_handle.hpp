// corows::basic_connection_handle<Stream>: a copyable reference to one connection that any
// thread may use to send to it or close it, and that outlives the connection harmlessly.
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
            if (s && !s->transport_closed && (code == 0 || is_sendable_close_code(code)))
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
    template <class S>
    friend class basic_hub;

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

/// The handle of a plain-TCP connection.
using connection_handle = basic_connection_handle<asio::ip::tcp::socket>;

template <class Stream>
basic_connection_handle<Stream> websocket<Stream>::handle() const {
    return basic_connection_handle<Stream>(s_);
}

} // namespace corows
