// SPDX-License-Identifier: BSL-1.0
// The reconnect policy of a long-lived client, without I/O: when to try again after a
// connection or a connect attempt ended, how long to wait first (exponential backoff with full
// jitter, a cap, a reset after a healthy connection), and a refusal's Retry-After.
#pragma once

#include <corows/close_info.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace corows {

/// The default reconnect decision. Reconnects after a failed connect (TCP refused, timeout,
/// TLS, a dropped handshake) and after a refusal with 429 or 5xx; not after a bad URL or any
/// other refusal (401, 403, 404, a redirect: trying again cannot help). After a close:
/// reconnects on 1001, 1006, 1011, 1012, 1013, 1014, when the application let the
/// connection go open, and when this side ended it for a fault (a timeout, a slow consumer,
/// the server's protocol violation: as good as dropped); ends on 1000, 1005 and every other
/// code (1002, 1003, 1007, 1008, 1009, 1010, and the application's 3000-4999, which only it
/// can judge). Never once stopped().
bool reconnect_by_default(const close_info& c) noexcept;

/// What ended a reconnecting client's last connection or connect attempt (deprecated: the
/// close_info's phase and stopped() tell these apart).
enum class [[deprecated("use close_info::phase and close_info::stopped()")]] disconnect_kind : std::uint8_t {
    none,           ///< nothing has ended yet
    connect_failed, ///< connect() failed: see error, and status for a refused upgrade
    closed,         ///< an open connection ended: see close_code
    stopped,        ///< stop() was called
};

/// The record a reconnecting client's decision got before close_info had a phase, a status
/// and Retry-After (deprecated). A close_info converts to it, so a should_reconnect taking
/// `const disconnect_reason&` still compiles.
struct [[deprecated("use close_info")]] disconnect_reason {
    /// Nothing ended (kind none).
    disconnect_reason();
    /// The same ending in the old terms: kind from c.phase and c.stopped(), close_code the
    /// server's code (1006 where this side ended it for a fault), message c.describe().
    disconnect_reason(const close_info& c);
    // Compiled in src/protocol/backoff.cpp: defined here, they would copy `kind` (deprecated,
    // so that its type may be named here) in every user's file and warn there.
    /// Copies every field.
    disconnect_reason(const disconnect_reason&);
    /// Moves every field.
    disconnect_reason(disconnect_reason&&) noexcept;
    /// Copies every field.
    disconnect_reason& operator=(const disconnect_reason&);
    /// Moves every field.
    disconnect_reason& operator=(disconnect_reason&&) noexcept;
    ~disconnect_reason();

    [[deprecated("use close_info::phase and close_info::stopped()")]] disconnect_kind kind; ///< which of the cases below
    /// connect_failed: connect()'s error (bad_status for a refused upgrade, a url_error for a
    /// bad URL, a socket, TLS or timeout error otherwise).
    std::error_code error{};
    /// connect_failed by a refused upgrade: the HTTP status (0 otherwise).
    unsigned status = 0;
    /// connect_failed by a refusal with a valid Retry-After field: its delay.
    std::optional<std::chrono::seconds> retry_after{};
    /// closed: how the connection ended, as websocket::closed_why() tells it.
    close_info close{};
    /// closed: the server's close code, 1006 when the connection dropped without a close
    /// frame, 1005 for a close frame without a code, 0 when the application let it go open.
    std::uint16_t close_code = 0;
    /// closed: the server's close reason.
    std::string close_reason{};
    /// A sentence for logs: connect_error's what(), or the close code and reason.
    std::string message{};
};

/// The default decision on the old record (deprecated: use the close_info overload).
[[deprecated("use reconnect_by_default(const close_info&)")]] bool reconnect_by_default(const disconnect_reason& r) noexcept;

/// How a reconnecting client waits between connections (corows::backoff) and which endings it
/// reconnects after.
struct reconnect_options {
    // Declared so that `reconnect_options{}` is not aggregate initialisation, which g++ 12
    // gets wrong inside a co_await expression.
    /// The defaults below.
    reconnect_options() = default;

    /// The first wait's upper bound: the window over which clients cut off together come
    /// back. Each wait is drawn uniformly from [0, min(max_delay, initial_delay *
    /// factor^failures)] ("full jitter").
    std::chrono::milliseconds initial_delay{1'000};
    /// The growth of the bound with each failure in a row (below 1 counts as 1).
    double factor = 2.0;
    /// The largest bound (reached after 6 failures in a row with the defaults).
    std::chrono::milliseconds max_delay{60'000};
    /// A connection that lasted at least this long resets the failure count: one that is
    /// accepted and then cut at once keeps backing off.
    std::chrono::milliseconds reset_after{10'000};
    /// The most a refusal's Retry-After may make the client wait (a hostile server must not
    /// park it for a year).
    std::chrono::milliseconds max_retry_after{300'000};
    /// Decides whether to connect again after each ending (a close, a failed connect, a
    /// stop()); empty: reconnect_by_default. A function taking the deprecated
    /// `const disconnect_reason&` still fits, for one release.
    std::function<bool(const close_info&)> should_reconnect{};
};

/// The waits of one reconnecting client: exponential, capped, fully jittered, with its own
/// random generator.
class backoff {
public:
    /// The policy of `o`, drawing from a generator seeded with `seed`.
    backoff(const reconnect_options& o, std::uint_fast32_t seed);

    /// The current upper bound of a wait: min(max_delay, initial_delay * factor^failures()).
    std::chrono::milliseconds ceiling() const noexcept;
    /// Draws the next wait, uniform in [0, ceiling()], and counts one more failure.
    std::chrono::milliseconds next_delay();
    /// The wait a server asked for with Retry-After: min(`retry_after`, max_retry_after) plus a
    /// draw in [0, min(initial_delay, max_delay)], so that the clients it refused together do not
    /// all return at the same instant; counts one more failure.
    std::chrono::milliseconds next_delay(std::chrono::seconds retry_after);
    /// A connection that lasted `d` ended: resets the failure count if d >= reset_after.
    void connection_lasted(std::chrono::milliseconds d) noexcept;
    /// Forgets every failure: the next wait is drawn from [0, initial_delay].
    void reset() noexcept { failures_ = 0; }
    /// The failures in a row counted so far.
    unsigned failures() const noexcept { return failures_; }

private:
    std::chrono::milliseconds draw(std::chrono::milliseconds bound);

    std::chrono::milliseconds initial_;
    double factor_;
    std::chrono::milliseconds max_;
    std::chrono::milliseconds reset_after_;
    std::chrono::milliseconds max_retry_after_;
    unsigned failures_ = 0;
    std::minstd_rand rng_;
};

/// The delay a Retry-After field value asks for (RFC 9110 §10.2.3): delta-seconds, or an
/// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") taken relative to `now` (0 if past).
/// Delta-seconds beyond about a century saturate there. Anything else (negative, fractional,
/// trailing garbage, the obsolete date forms): nullopt.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now) noexcept;

} // namespace corows
