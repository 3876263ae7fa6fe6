// SPDX-License-Identifier: BSL-1.0
// corows::condition: the few kinds of failure an application branches on, each matching the
// codes of every corows error category (and the system and Asio codes named below), so that
// `ec == corows::condition::timeout` holds whichever layer reported it.
#pragma once

#include <system_error>

namespace corows {

/// What went wrong, in the `corows.condition` category: compare any error_code with it.
/// Besides corows' own codes, these system and Asio codes match (by value, in the generic,
/// system and `asio.misc` categories): connection_lost: Asio's eof, ECONNRESET, EPIPE,
/// ECONNABORTED, ENOTCONN; timeout: ETIMEDOUT; tls: every code of `asio.ssl` and
/// `asio.ssl.stream`. Other codes (operation_aborted, deflate_failed, ...) match none.
enum class condition {
    closed = 1,        ///< the close handshake ran (either side began it): error::closed
    connection_lost,   ///< the transport ended without a close handshake, or mid-upgrade
    timeout,           ///< a handshake, idle, close or send deadline expired
    protocol_error,    ///< the peer broke RFC 6455 or RFC 7692 after the opening handshake
    too_big,           ///< a frame, message, HTTP head or body over its configured limit
    handshake_failed,  ///< a malformed or unacceptable opening handshake (HTTP or upgrade fields)
    handshake_refused, ///< the server answered the upgrade with another status than 101, or
                       ///< the application refused it (upgrade_answer::refuse)
    tls,               ///< TLS failed (any code of Asio's SSL categories), or a plain
                       ///< request was answered with TLS
    bad_url,           ///< a WebSocket or proxy URL was rejected before any I/O
    proxy,             ///< the proxy refused the tunnel, the credentials, or spoke nonsense
    redis,             ///< the Redis backplane failed (corows/redis_error.hpp)
};

/// The category of condition values; name() is "corows.condition".
const std::error_category& condition_category() noexcept;

/// Wraps `c` in an std::error_condition of the condition category.
std::error_condition make_error_condition(condition c) noexcept;

namespace detail {
/// True if `cond` is `c` in the condition category (never for condition{}, "none"): what
/// each corows category's equivalent() answers once it knows its code's condition.
bool is_condition(const std::error_condition& cond, condition c) noexcept;
} // namespace detail

} // namespace corows

/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_condition_enum<corows::condition> : std::true_type {};
/// @endcond
