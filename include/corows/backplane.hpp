// SPDX-License-Identifier: BSL-1.0
// corows::backplane: what a hub needs of a pub/sub system that joins several processes (Redis:
// corows/redis_backplane.hpp). No Asio here: an implementation brings its own I/O.
#pragma once

#include <corows/message.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace corows {

/// A pub/sub system shared by several processes. A hub tells it which topics this process
/// needs and what it publishes; it hands the hub what other processes published.
///
/// Every member may be called from any thread and must not block: an implementation queues
/// the work on its own executor.
class backplane {
public:
    /// Receives a message another process published on `topic`. The payload is valid until
    /// the call returns; a text payload must be valid UTF-8 (an implementation checks what it
    /// receives: subscribers' clients would fail the connection with 1007).
    using sink = std::function<void(std::string_view topic, std::span<const std::uint8_t> payload, message_kind kind)>;

    backplane() = default;
    backplane(const backplane&) = delete;
    backplane& operator=(const backplane&) = delete;
    virtual ~backplane() = default;

    /// Sets where messages from other processes go (a hub calls this once, before any
    /// subscribe). An empty sink drops them from then on.
    virtual void attach(sink s) = 0;
    /// This process needs `topic`: its first local subscriber came. Called once per topic
    /// until unsubscribe(topic); calls for one topic arrive in order.
    virtual void subscribe(std::string topic) = 0;
    /// This process no longer needs `topic`: its last local subscriber left.
    virtual void unsubscribe(std::string topic) = 0;
    /// Sends a message published here to the other processes on `topic` (not back to this
    /// one: the hub delivered it here already). The payload is copied before the call returns.
    virtual void publish(std::string_view topic, std::span<const std::uint8_t> payload, message_kind kind) = 0;
};

} // namespace corows
