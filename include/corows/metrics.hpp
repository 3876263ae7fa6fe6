// SPDX-License-Identifier: BSL-1.0
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

/// A TLS alert description counted by name (RFC 8446 §6, with TLS 1.2's from RFC 5246 §7.2):
/// the fatal alerts a server sends when a handshake fails.
struct tls_alert_label {
    std::uint8_t description; ///< the alert's code on the wire
    const char* name;         ///< the metric label: the RFC's name
};
/// The alerts counted one by one; any other description counts as "other" (the last slot of
/// server_metrics::tls_alerts_sent), so a label never takes a value a peer chooses freely.
inline constexpr std::array<tls_alert_label, 24> tls_alert_labels{{
    {10, "unexpected_message"},   {20, "bad_record_mac"},       {22, "record_overflow"},
    {40, "handshake_failure"},    {42, "bad_certificate"},      {43, "unsupported_certificate"},
    {44, "certificate_revoked"},  {45, "certificate_expired"},  {46, "certificate_unknown"},
    {47, "illegal_parameter"},    {48, "unknown_ca"},           {49, "access_denied"},
    {50, "decode_error"},         {51, "decrypt_error"},        {70, "protocol_version"},
    {71, "insufficient_security"}, {80, "internal_error"},      {86, "inappropriate_fallback"},
    {109, "missing_extension"},   {110, "unsupported_extension"}, {112, "unrecognized_name"},
    {115, "unknown_psk_identity"}, {116, "certificate_required"}, {120, "no_application_protocol"},
}};
/// Slots of server_metrics::tls_alerts_sent: tls_alert_labels, then "other".
inline constexpr std::size_t tls_alert_slots = tls_alert_labels.size() + 1;
/// The slot of server_metrics::tls_alerts_sent that counts alert `description`.
constexpr std::size_t tls_alert_slot(std::uint8_t description) noexcept {
    for (std::size_t i = 0; i < tls_alert_labels.size(); ++i)
        if (tls_alert_labels[i].description == description) return i;
    return tls_alert_labels.size();
}
/// The metric label of slot `i` of server_metrics::tls_alerts_sent ("other" for the last).
constexpr const char* tls_alert_name(std::size_t i) noexcept {
    return i < tls_alert_labels.size() ? tls_alert_labels[i].name : "other";
}

/// A snapshot of a server's counts, totals since run() began (basic_server::metrics()).
struct server_metrics {
    /// Sockets accepted (before any limit); each ends as an opened WebSocket, a refusal, or a
    /// plain HTTP exchange of a run_http() handler.
    std::uint64_t accepted = 0;
    /// Connections turned away, by reason (index: refusal_reason).
    std::array<std::uint64_t, refusal_reason_count> refused{};
    /// Connections in their opening handshake now (TLS included).
    std::uint64_t handshakes_in_progress = 0;
    /// How long the handshakes of the opened connections took, from accept to open (TLS
    /// included; under run_http(), to the handler's successful accept).
    handshake_histogram handshake_duration;
    /// TLS handshakes completed (a basic_server<tls_stream>; 0 without TLS).
    std::uint64_t tls_handshakes = 0;
    /// TLS handshakes that failed (or were cut by handshake_timeout or a stop): each also a
    /// refusal, as `tls`, `handshake_timeout` or `draining`.
    std::uint64_t tls_handshake_failures = 0;
    /// Fatal alerts those failed handshakes sent, by description (index: tls_alert_slot()).
    std::array<std::uint64_t, tls_alert_slots> tls_alerts_sent{};
    /// The WebSocket connections: opened, open, ended and why, messages, frames, bytes, pings,
    /// bytes queued now.
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
