// corows::server_metrics: what a server did, as plain numbers (basic_server::metrics()), and
// write_prometheus(), which writes them in Prometheus' text exposition format.
#pragma once

#include <corows/protocol/connection_counters.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace corows {

/// Why a server turned a connection away before its WebSocket opened.
enum class refusal_reason : std::uint8_t {
    connection_limit,  ///< 503 at accept: server_options::max_connections open
    address_limit,     ///< 429 at accept: max_connections_per_address from its address
    handshake_shed,    ///< aborted in its handshake for a newer one (max_handshakes)
    handshake_timeout, ///< its handshake (TLS included) outlasted handshake_timeout
    bad_request,       ///< not a valid upgrade request: answered 400 (or 413, 426, ...)
    http_version,      ///< an HTTP version above 1.1: answered 505
    application,       ///< on_upgrade refused it
    draining,          ///< 503 while the server drains for a stop
    tls,               ///< its TLS handshake failed
    abandoned,         ///< the client went away (or reset) before its handshake was done
};
/// Number of refusal_reason values.
inline constexpr std::size_t refusal_reason_count = 10;
/// The metric label of `r`, its enumerator's name ("connection_limit", ...).
constexpr const char* to_string(refusal_reason r) noexcept {
    constexpr const char* names[] = {"connection_limit", "address_limit", "handshake_shed", "handshake_timeout",
                                     "bad_request",      "http_version",  "application",    "draining",
                                     "tls",              "abandoned"};
    return names[static_cast<std::size_t>(r)];
}

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

/// A snapshot of a server's counts, totals since run() began (basic_server::metrics()).
struct server_metrics {
    /// Sockets accepted (before any limit); each ends as an opened WebSocket, a refusal, or a
    /// plain HTTP exchange of a run_http() handler.
    std::uint64_t accepted = 0;
    /// Connections turned away, by reason (index: refusal_reason).
    std::array<std::uint64_t, refusal_reason_count> refused{};
    /// Connections in their opening handshake now (TLS included).
    std::uint64_t handshakes_in_progress = 0;
    /// How long the handshakes of the opened connections took (run() and run_events();
    /// run_http()'s handler decides when its handshake ends, so it has none).
    handshake_histogram handshake_duration;
    /// The WebSocket connections: opened, open, ended and why, messages, bytes, pings.
    connection_metrics connections;
};

/// Number of a hub's slow-consumer policies (corows::slow_consumer: close, drop, drop_and_notify).
inline constexpr std::size_t slow_consumer_policies = 3;

/// A snapshot of a hub's counts in this process (basic_hub::metrics()).
struct hub_metrics {
    std::uint64_t topics = 0;        ///< topics with a subscriber here, now
    std::uint64_t subscriptions = 0; ///< subscriptions here, now
    std::uint64_t publishes = 0;     ///< publish() calls here (a backplane's arrivals are not counted)
    std::uint64_t deliveries = 0;    ///< messages queued to subscribers here, from any publisher
    /// Subscribers whose queue was full when a message came, by the topic's policy (index:
    /// corows::slow_consumer): closed, skipped, skipped and reported.
    std::array<std::uint64_t, slow_consumer_policies> slow_consumers{};
};

/// A snapshot of a backplane's counts (redis_backplane::metrics()): its link to the other
/// processes of a cluster.
struct backplane_metrics {
    bool connected = false;              ///< both connections up and every subscription confirmed
    std::uint64_t queued_bytes = 0;      ///< publishes held for Redis (formatted), now
    std::uint64_t published = 0;         ///< publishes queued for Redis
    std::uint64_t received = 0;          ///< other processes' messages handed to the hub
    std::uint64_t dropped = 0;           ///< publishes dropped: the queue was full, or the payload too large
    std::uint64_t malformed = 0;         ///< messages from Redis dropped as malformed
    std::uint64_t connection_failures = 0; ///< connections to Redis lost, or attempts failed
    std::uint64_t gaps = 0;              ///< times the subscriptions came back after a loss (on_gap)
    std::chrono::nanoseconds gap_time{0}; ///< how long those gaps may have lasted, added up
};

/// Appends `m` to `out` in the Prometheus text exposition format (version 0.0.4): each family
/// with `# HELP` and `# TYPE`, names prefixed `corows_`, labelled values for every reason and
/// code (zeros included, so that rates start from the first scrape).
void write_prometheus(std::string& out, const server_metrics& m);

/// Appends a hub's `m` to `out` in the Prometheus text exposition format (`corows_hub_`...).
void write_prometheus(std::string& out, const hub_metrics& m);

/// Appends a backplane's `m` to `out` in the Prometheus text exposition format (`corows_backplane_`...).
void write_prometheus(std::string& out, const backplane_metrics& m);

/// `m` in the Prometheus text exposition format (see write_prometheus()).
std::string to_prometheus(const server_metrics& m);

/// The Content-Type of a response carrying write_prometheus()'s text.
inline constexpr const char* prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

} // namespace corows
