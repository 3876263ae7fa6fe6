// SPDX-License-Identifier: BSL-1.0
// corows::connection_counters: what a set of connections did (opened, ended and why, messages,
// frames, bytes, pings, what they have queued, how long their handshakes took), counted by the
// connections themselves, readable from any thread; and connection_metrics, a snapshot of it
// in plain numbers.
#pragma once

#include <corows/close_info.hpp>
#include <corows/detail/platform.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace corows {

class shared_connection_counters;

/// Opening handshake durations, from accept to the open WebSocket, in fixed buckets.
struct handshake_histogram {
    /// Upper bounds of the buckets, in seconds (a last bucket, +Inf, takes the rest).
    static constexpr std::array<double, 8> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5};
    /// Handshakes per bucket (not cumulative; the last is over the last bound).
    std::array<std::uint64_t, bounds.size() + 1> buckets{};
    /// Their durations added up.
    std::chrono::nanoseconds sum{0};

    /// Handshakes counted.
    std::uint64_t count() const noexcept {
        std::uint64_t n = 0;
        for (auto b : buckets) n += b;
        return n;
    }
    /// The bucket a handshake of `d` falls in.
    static std::size_t bucket_of(std::chrono::nanoseconds d) noexcept {
        const double s = std::chrono::duration<double>(d).count();
        std::size_t i = 0;
        while (i < bounds.size() && s > bounds[i]) ++i;
        return i;
    }
};

/// Close codes counted one by one: 1000 to 1015 (RFC 6455 §7.4.1 and IANA's registry); any
/// other (an application's 3000-4999) counts as "other", so a label never takes a value a
/// peer chooses freely.
inline constexpr std::uint16_t first_counted_code = 1000;
/// Slots of connection_metrics::closed_by_code: 1000 to 1015, then "other".
inline constexpr std::size_t counted_codes = 17;

/// A snapshot of connection_counters: plain numbers, totals since the counters were made.
struct connection_metrics {
    /// WebSocket connections that opened (handshake done).
    std::uint64_t opened = 0;
    /// Of those, connections that ended, by who or what ended them (index: ended_by).
    std::array<std::uint64_t, ended_by_count> closed_by{};
    /// The same endings by the close code that decided them (close_info::code; 1006 where
    /// the transport went without a close frame): index code - 1000 for 1000-1015, last for
    /// any other.
    std::array<std::uint64_t, counted_codes> closed_by_code{};
    std::uint64_t messages_received = 0;      ///< data messages received, whole
    std::uint64_t messages_sent = 0;          ///< data messages queued to send (hub deliveries included)
    std::uint64_t payload_bytes_received = 0; ///< their payload, decompressed
    std::uint64_t payload_bytes_sent = 0;     ///< their payload, before compression
    std::uint64_t wire_bytes_received = 0;    ///< frame bytes read (reads made during the handshake not counted)
    std::uint64_t wire_bytes_sent = 0;        ///< frame bytes queued for the transport
    std::uint64_t pings_received = 0; ///< ping frames received
    std::uint64_t pongs_received = 0; ///< pong frames received
    std::uint64_t pings_sent = 0; ///< the application's and the keepalive's
    std::uint64_t pongs_sent = 0; ///< answers to pings (several pings may share one) and the application's
    std::uint64_t frames_received = 0; ///< frames read whole, data (each fragment) and control
    std::uint64_t frames_sent = 0;     ///< frames queued for the transport or written directly, data and control
    /// Bytes the connections have queued to write now (a gauge: output_queue::size() summed,
    /// shared frames by their charge); back to 0 once they have written it or are gone.
    std::uint64_t queued_output_bytes = 0;

    /// Connections ended, all reasons together.
    std::uint64_t closed() const noexcept {
        std::uint64_t n = 0;
        for (auto c : closed_by) n += c;
        return n;
    }
    /// Connections open: opened() less closed() (0 if a snapshot read mid-update says less).
    std::uint64_t open() const noexcept {
        const auto c = closed();
        return opened > c ? opened - c : 0;
    }
    /// Adds `o`'s counts to these (sums the counters of several threads).
    connection_metrics& operator+=(const connection_metrics& o) noexcept;
};

namespace detail {
/// A count that one thread writes at a time and any thread reads: as cheap as a plain
/// increment (no locked instruction; see single_writer_add()), and no data race for the reader.
/// A gauge subtracts by adding the two's complement (modulo 2^64, so sums stay exact).
class single_writer_count {
public:
    void add(std::uint64_t n = 1) noexcept { single_writer_add(v_, n); }
    void subtract(std::uint64_t n) noexcept { single_writer_add(v_, std::uint64_t{0} - n); }
    std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> v_{0};
};
} // namespace detail

/// Where connections count what they do (connection::count_into()). Written by the one thread
/// that runs the connections counting into it (a server gives each of its threads its own),
/// read by snapshot() from any thread. Not copyable: connections point at it. Connections on
/// several threads at once count into a shared_connection_counters instead.
class connection_counters {
public:
    connection_counters() = default;
    /// One connection's part of `whole` (see shared_connection_counters::enlist()).
    explicit connection_counters(shared_connection_counters* whole) noexcept : whole_(whole) {}
    connection_counters(const connection_counters&) = delete;
    connection_counters& operator=(const connection_counters&) = delete;

    /// The counts now, from any thread.
    connection_metrics snapshot() const noexcept;
    /// The shared_connection_counters these are one connection's part of; nullptr if none.
    shared_connection_counters* part_of() const noexcept { return whole_; }
    /// Counts an opening handshake that took `d` (in handshake_buckets and handshake_nanoseconds).
    void handshake_took(std::chrono::nanoseconds d) noexcept {
        handshake_buckets[handshake_histogram::bucket_of(d)].add();
        handshake_nanoseconds.add(static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0));
    }
    /// Adds the handshake durations counted here to `h`.
    void add_handshakes_to(handshake_histogram& h) const noexcept;

    detail::single_writer_count opened;  ///< see connection_metrics
    std::array<detail::single_writer_count, ended_by_count> closed_by;  ///< see connection_metrics
    std::array<detail::single_writer_count, counted_codes> closed_by_code;  ///< see connection_metrics
    detail::single_writer_count messages_received;  ///< see connection_metrics
    detail::single_writer_count messages_sent;  ///< see connection_metrics
    detail::single_writer_count payload_bytes_received;  ///< see connection_metrics
    detail::single_writer_count payload_bytes_sent;  ///< see connection_metrics
    detail::single_writer_count wire_bytes_received;  ///< see connection_metrics
    detail::single_writer_count wire_bytes_sent;  ///< see connection_metrics
    detail::single_writer_count pings_received;  ///< see connection_metrics
    detail::single_writer_count pongs_received;  ///< see connection_metrics
    detail::single_writer_count pings_sent;  ///< see connection_metrics
    detail::single_writer_count pongs_sent;  ///< see connection_metrics
    detail::single_writer_count frames_received;  ///< see connection_metrics
    detail::single_writer_count frames_sent;  ///< see connection_metrics
    detail::single_writer_count queued_output_bytes; ///< a gauge: added on queueing, subtracted on writing
    /// Opening handshakes by duration (connection::count_handshake_from()).
    std::array<detail::single_writer_count, handshake_histogram::bounds.size() + 1> handshake_buckets;
    detail::single_writer_count handshake_nanoseconds;  ///< see connection_metrics

private:
    shared_connection_counters* whole_ = nullptr;
};

/// The slot of closed_by_code that counts `code`.
constexpr std::size_t code_slot(std::uint16_t code) noexcept {
    return code >= first_counted_code && code < first_counted_code + counted_codes - 1
               ? static_cast<std::size_t>(code - first_counted_code)
               : counted_codes - 1;
}

} // namespace corows
