// SPDX-License-Identifier: BSL-1.0
// detail::server_counters: one server thread's counts (its connections, accepts, refusals and
// handshake times), written by that thread alone, summed by basic_server::metrics().
#pragma once

#include <corows/error.hpp>
#include <corows/metrics.hpp>
#include <corows/protocol/connection_counters.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <system_error>

namespace corows::detail {

/// Why a handshake that ended with `ec` (not a success) did not open: a refusal the server
/// made, or one the client caused. `draining`: the server was refusing upgrades for a stop.
inline refusal_reason refusal_for(std::error_code ec, bool draining) noexcept {
    if (ec == error::timeout) return refusal_reason::handshake_timeout;
    if (ec == error::http_version_not_supported) return refusal_reason::http_version;
    if (ec == error::handshake_failed) return draining ? refusal_reason::draining : refusal_reason::application;
    if (ec.category() == error_category()) {
        const auto e = static_cast<error>(ec.value());
        if ((e >= error::http_parse_error && e <= error::bad_version) || e == error::bad_extension ||
            (e >= error::bad_content_length && e <= error::length_required) || e == error::bad_chunked_encoding)
            return refusal_reason::bad_request;
    }
    return refusal_reason::abandoned;
}

/// One server thread's counts. Aligned apart so that two threads' counts share no cache line.
/// Handshake durations are the connections' (connection::count_handshake_from()).
struct alignas(64) server_counters {
    connection_counters connections;
    single_writer_count accepted;
    std::array<single_writer_count, refusal_reason_count> refused;
    single_writer_count tls_handshakes;
    single_writer_count tls_handshake_failures;
    std::array<single_writer_count, tls_alert_slots> tls_alerts_sent;

    void refuse(refusal_reason r) noexcept { refused[static_cast<std::size_t>(r)].add(); }
    /// A TLS handshake failed, sending the fatal alert `description` (none: negative).
    void tls_failed(int description) noexcept {
        tls_handshake_failures.add();
        if (description >= 0) tls_alerts_sent[tls_alert_slot(static_cast<std::uint8_t>(description))].add();
    }
    /// Adds these counts to `m`, from any thread.
    void add_to(server_metrics& m) const noexcept {
        m.accepted += accepted.get();
        for (std::size_t i = 0; i < refused.size(); ++i) m.refused[i] += refused[i].get();
        connections.add_handshakes_to(m.handshake_duration);
        m.tls_handshakes += tls_handshakes.get();
        m.tls_handshake_failures += tls_handshake_failures.get();
        for (std::size_t i = 0; i < tls_alerts_sent.size(); ++i) m.tls_alerts_sent[i] += tls_alerts_sent[i].get();
        m.connections += connections.snapshot();
    }
};

} // namespace corows::detail
