// SPDX-License-Identifier: BSL-1.0
// corows::log_options: where a server's (or a backplane's) log records go, how much is
// logged, and the rate limit that keeps an attack from flooding the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace corows {

/// How much a log record matters.
enum class log_level : std::uint8_t { debug, info, warning, error };

/// What a log record is about; each category has its own rate limit.
enum class log_category : std::uint8_t {
    connection, ///< a WebSocket opened, or ended (who or what ended it, its code and reason)
    refusal,    ///< a connection turned away before its WebSocket opened, and why
    protocol,   ///< a peer broke the protocol: the violation and its RFC section
    backplane,  ///< the link to the cluster's other processes went down, came back, or had a gap
};
/// Number of log_category values.
inline constexpr std::size_t log_category_count = 4;

/// "debug", "info", "warning" or "error".
constexpr const char* to_string(log_level l) noexcept {
    constexpr const char* names[] = {"debug", "info", "warning", "error"};
    return names[static_cast<std::size_t>(l)];
}
/// "connection", "refusal", "protocol" or "backplane".
constexpr const char* to_string(log_category c) noexcept {
    constexpr const char* names[] = {"connection", "refusal", "protocol", "backplane"};
    return names[static_cast<std::size_t>(c)];
}

/// One log record. Its views are valid during the sink's call only.
struct log_record {
    log_level level = log_level::info; ///< how much it matters
    log_category category = log_category::connection; ///< what it is about (each category has its own rate limit)
    /// The connection's number on its server, from 1 in accept order; 0 for none.
    std::uint64_t connection = 0;
    /// The peer's address ("127.0.0.1:5000", "[::1]:5000"), or empty where there is none.
    std::string_view peer{};
    /// What happened, in a sentence.
    std::string_view message{};
    /// Records of this category and thread that the rate limit dropped since its last one.
    std::uint64_t suppressed = 0;
};

/// Receives log records; called on the thread of what it reports (for a server, possibly from
/// several of its threads at once), never on a message's path. An exception from it is dropped.
using log_sink = std::function<void(const log_record&)>;

/// What is logged, and where (server_options::log, redis_options::log).
struct log_options {
    /// The defaults below (declared for g++ 12's sake, as options' are).
    log_options() = default;

    /// Where records go; none (the default): nothing is logged, and nothing is formatted.
    log_sink sink{};
    /// Records below this level are not made.
    log_level level = log_level::info;
    /// Each category's records per second, per thread, once a burst of `burst` is spent; the
    /// rest are counted and the next record passed says how many (log_record::suppressed).
    std::uint32_t per_second = 20;
    /// Records of a category that may pass at once.
    std::uint32_t burst = 50;

    /// True if a record of `l` would be made.
    bool enabled(log_level l) const noexcept { return sink && l >= level; }
};

} // namespace corows
