// SPDX-License-Identifier: BSL-1.0
// corows::shared_connection_counters: counters that connections on any threads count into at
// once (clients on a thread pool, connect_options::counters), at the cost of a lock when a
// connection starts or stops counting, never per count.
#pragma once

#include <corows/protocol/connection_counters.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace corows {

/// Counts of connections that run on any threads, read by snapshot() from any thread.
///
/// A connection_counters may be written by one thread only; a lock-free count shared by
/// several would need a locked add per message. Here each connection counts into a part of its
/// own (enlist(), with connection::count_into(shared_connection_counters&)), written as cheaply
/// as a server thread's counters, and snapshot() adds the parts up under a lock; a connection
/// that is done (destroyed, or counting elsewhere) hands its part back (retire()), whose counts
/// then stay in the total. Must outlive the connections that count into it.
class shared_connection_counters {
public:
    shared_connection_counters() = default;
    shared_connection_counters(const shared_connection_counters&) = delete;
    shared_connection_counters& operator=(const shared_connection_counters&) = delete;

    /// The counts now, from any thread: the connections that are done and those counting.
    connection_metrics snapshot() const;
    /// The opening handshakes counted, by duration, from any thread.
    handshake_histogram handshakes() const;
    /// A part for one connection to count into (its part_of() is this); from any thread.
    connection_counters& enlist();
    /// The connection that counted into `part` is done with it: its counts join the total and
    /// the part goes; from any thread. Ignores a part that is not one of these.
    void retire(connection_counters& part) noexcept;
    /// Connections counting into parts now.
    std::size_t parts() const;

private:
    mutable std::mutex m_;
    std::unordered_map<const connection_counters*, std::unique_ptr<connection_counters>> live_;
    connection_metrics retired_;
    handshake_histogram retired_handshakes_;
};

} // namespace corows
