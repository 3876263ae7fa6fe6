// corows::close_info: why a connection ended, one record for every way it can end (either
// side's close frame, a lost transport, a violation, a timeout, a peer that stopped reading).
#pragma once

#include <corows/error.hpp>

#include <cstddef>
#include <cstdint>
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

/// Why a connection ended, or began to end (websocket::closed_why()).
///
/// `code` and `reason` are the close that decided the ending: the first close frame either
/// side sent, so a peer told 1008 "too slow: send timeout" is reported so even though that
/// frame could not reach it. `error` says what the application's reads and writes report.
struct close_info {
    // Declared so that `close_info{}` is not aggregate initialisation, which g++ 12 gets
    // wrong inside a co_await expression.
    /// Nothing ended: code 0, no error.
    close_info() = default;

    /// The first close frame's code: the peer's when `remote`, else ours (1005 for a frame
    /// without a code); 1006 when the transport ended without either side's close frame; 0
    /// while the connection is open.
    std::uint16_t code = 0;
    /// That close frame's reason (ours: the application's, or the failure's, e.g.
    /// "too slow: send timeout"); empty without one.
    std::string reason{};
    /// What ended it: error::closed after a close handshake or a lost transport,
    /// error::timeout, error::send_timeout, or the protocol violation that failed it; empty
    /// while the connection is open or still closing.
    std::error_code error{};
    /// True if the peer ended it: its close frame came first, or its transport went without one.
    bool remote = false;
    /// Who or what ended it: the peer or this side (as `remote` says), or more precisely a
    /// timeout, a slow consumer (send timeout, or a hub's close policy) or a protocol
    /// violation. Meaningful once ended().
    ended_by by = ended_by::local;

    /// True once the connection ended or began to end (a close code is known).
    bool ended() const noexcept { return code != 0; }
    /// A sentence for logs, e.g. "closed by us with 1008 (too slow: send timeout): send
    /// timeout: ...".
    std::string describe() const {
        if (code == 0) return "open";
        std::string s = remote ? "closed by the peer with " : "closed by us with ";
        s += std::to_string(code);
        if (!reason.empty()) s += " (" + reason + ")";
        if (error && error != make_error_code(corows::error::closed)) s += ": " + error.message();
        return s;
    }
};

} // namespace corows
