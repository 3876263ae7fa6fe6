// SPDX-License-Identifier: BSL-1.0
// corows::close_info: why a connection ended, one record for every way it can end (either
// side's close frame, a lost transport, a violation, a timeout, a peer that stopped reading, a
// connect attempt that failed), with where it was then and what it had carried.
#pragma once

#include <corows/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace corows {

/// Who or what ended a connection, as close_info, metrics and logs tell them apart.
enum class ended_by : std::uint8_t {
    local,         ///< this side closed it (the application, a server's stop or drain)
    peer,          ///< the peer's close frame came first, or its transport went without one
    timeout,       ///< a handshake, idle or close timeout of ours expired
    slow_consumer, ///< too slow: took nothing for send_timeout, or a hub's close policy closed it (1008)
    error,         ///< a protocol violation (the peer's or a failure of ours: deflate, UTF-8, ...)
};
/// Number of ended_by values.
inline constexpr std::size_t ended_by_count = 5;
/// The metric label of `e`: "local", "peer", "timeout", "slow_consumer" or "error".
constexpr const char* to_string(ended_by e) noexcept {
    constexpr const char* names[] = {"local", "peer", "timeout", "slow_consumer", "error"};
    return names[static_cast<std::size_t>(e)];
}

/// Where a connection was when it ended (or is, while it has not).
enum class close_phase : std::uint8_t {
    connecting, ///< before the HTTP upgrade: TCP, a proxy, TLS (a client's connect, a server's TLS handshake)
    handshake,  ///< the HTTP upgrade: refused with a status, timed out, a bad request or answer
    open,       ///< after the WebSocket opened; a close handshake that completed ends here too
    closing,    ///< a close frame went out but the close handshake never completed (close timeout, transport lost)
};
/// Number of close_phase values.
inline constexpr std::size_t close_phase_count = 4;
/// The name of `p`: "connecting", "handshake", "open" or "closing".
constexpr const char* to_string(close_phase p) noexcept {
    constexpr const char* names[] = {"connecting", "handshake", "open", "closing"};
    return names[static_cast<std::size_t>(p)];
}

/// What one connection carried: data messages whole and their payload (decompressed when
/// received, before compression when sent), counted as connection_counters counts them.
struct traffic_counts {
    std::uint64_t messages_received = 0;      ///< data messages received, whole
    std::uint64_t messages_sent = 0;          ///< data messages queued to send (hub deliveries included)
    std::uint64_t payload_bytes_received = 0; ///< their payload, decompressed
    std::uint64_t payload_bytes_sent = 0;     ///< their payload, before compression
};

/// Why a connection ended, or began to end (websocket::closed_why()), or why a reconnecting
/// client's connect attempt failed or its loop ended (reconnecting::closed_why()).
///
/// `code` and `reason` are the close that decided the ending: the first close frame either
/// side sent, so a peer told 1008 "too slow: send timeout" is reported so even though that
/// frame could not reach it. `error` says what the application's reads and writes report.
struct close_info {
    // Declared so that `close_info{}` is not aggregate initialisation, which g++ 12 gets
    // wrong inside a co_await expression.
    /// Nothing ended: code 0, no error, phase connecting.
    close_info() = default;

    /// The first close frame's code: the peer's when `remote`, else ours (1005 for a frame
    /// without a code); 1006 when the transport ended without either side's close frame, or
    /// the connection never opened; 0 while the connection is open (or not yet).
    std::uint16_t code = 0;
    /// That close frame's reason (ours: the application's, or the failure's, e.g.
    /// "too slow: send timeout"); for a failed connect, connect_error's what(); else empty.
    std::string reason{};
    /// What ended it: error::closed after a close handshake or a lost transport,
    /// error::timeout, error::send_timeout, the protocol violation that failed it, a failed
    /// connect's error; std::errc::operation_canceled when stopped(); empty while the
    /// connection is open or still closing.
    std::error_code error{};
    /// True if the peer ended it: its close frame came first, or its transport went without
    /// one, or it refused a connect (a status, TCP refused).
    bool remote = false;
    /// Who or what ended it: the peer or this side (as `remote` says), or more precisely a
    /// timeout, a slow consumer (send timeout, or a hub's close policy) or a protocol
    /// violation. Meaningful once ended().
    ended_by by = ended_by::local;
    /// Where the connection was when it ended: connecting or handshake if it never opened.
    close_phase phase = close_phase::connecting;
    /// The HTTP status of a refused upgrade, or of a proxy's refusal of the tunnel (a
    /// reconnecting client's connect); 0 otherwise.
    unsigned status = 0;
    /// A refused upgrade's valid Retry-After field: the delay it asks for.
    std::optional<std::chrono::seconds> retry_after{};
    /// What the connection carried until then (all zero if it never opened).
    traffic_counts traffic{};

    /// True once the connection ended or began to end (a close code is known), or a connect
    /// failed, or a reconnecting client was stopped.
    bool ended() const noexcept { return code != 0 || error; }
    /// True if it never opened: a connect or an upgrade that failed (phase connecting or
    /// handshake, ended()).
    bool never_opened() const noexcept {
        return ended() && (phase == close_phase::connecting || phase == close_phase::handshake);
    }
    /// True if a reconnecting client's stop() ended it: by local with
    /// std::errc::operation_canceled.
    bool stopped() const noexcept { return by == ended_by::local && error == std::errc::operation_canceled; }
    /// A sentence for logs, e.g. "closed by us with 1008 (too slow: send timeout): send
    /// timeout: ...; received 2 messages (10 bytes), sent 7 messages (7340032 bytes)".
    std::string describe() const;
};

inline std::string close_info::describe() const {
    if (!ended()) return phase == close_phase::open || phase == close_phase::closing ? "open" : "not open yet";
    const bool plain_close = error == make_error_code(corows::error::closed);
    std::string s;
    if (stopped()) {
        s = "stopped";
        if (code != 0) s += ", closed by us with " + std::to_string(code);
    } else if (never_opened()) {
        s = phase == close_phase::handshake ? "failed in the handshake" : "failed while connecting";
        if (status != 0) s += ": refused with " + std::to_string(status);
        if (retry_after) s += ", Retry-After " + std::to_string(retry_after->count()) + " s";
        if (!reason.empty()) s += ": " + reason;
        else if (error && !plain_close) s += ": " + error.message();
        return s;
    } else {
        s = remote ? "closed by the peer with " : "closed by us with ";
        s += std::to_string(code);
    }
    if (!reason.empty()) s += " (" + reason + ")";
    if (phase == close_phase::closing) s += ", the peer's close frame never came";
    if (error && !plain_close && !stopped()) s += ": " + error.message();
    // What it carried tells an idle peer from a busy one; "nothing" is said only where it is
    // news, for an ending that was not a plain close.
    const traffic_counts& t = traffic;
    if (t.messages_received != 0 || t.messages_sent != 0 || (error && !plain_close)) {
        auto messages = [](std::uint64_t n, std::uint64_t bytes) {
            return std::to_string(n) + (n == 1 ? " message (" : " messages (") + std::to_string(bytes) + " bytes)";
        };
        s += "; received " + messages(t.messages_received, t.payload_bytes_received) + ", sent " +
             messages(t.messages_sent, t.payload_bytes_sent);
    }
    return s;
}

} // namespace corows
