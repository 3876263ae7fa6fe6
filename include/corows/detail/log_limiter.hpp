// SPDX-License-Identifier: BSL-1.0
// detail::log_limiter: a token bucket per log category, so that a flood of bad requests or
// violations (an attack) costs the log sink a bounded number of records per second.
#pragma once

#include <corows/log.hpp>

#include <array>
#include <chrono>
#include <cstdint>

namespace corows::detail {

/// The rate limit of one thread's log records. Not thread-safe: one per thread.
class log_limiter {
public:
    using clock = std::chrono::steady_clock;

    /// `per_second` records of each category once `burst` are spent (0 per second: only the burst).
    log_limiter(std::uint32_t per_second, std::uint32_t burst) noexcept
        : rate_(per_second < 1'000'000'000u ? per_second : 1'000'000'000), burst_(burst) {
        for (auto& b : buckets_) b.tokens = burst;
    }

    /// True if a record of `c` may pass at `now`; then `suppressed` is how many were dropped
    /// since the last one that passed. False (and counted) otherwise.
    bool admit(log_category c, clock::time_point now, std::uint64_t& suppressed) noexcept {
        auto& b = buckets_[static_cast<std::size_t>(c)];
        refill(b, now);
        if (b.tokens == 0) {
            ++b.dropped;
            return false;
        }
        --b.tokens;
        suppressed = b.dropped;
        b.dropped = 0;
        return true;
    }

private:
    struct bucket {
        std::uint64_t tokens = 0;
        std::uint64_t dropped = 0;
        clock::time_point since{}; // when the tokens were last counted
    };

    void refill(bucket& b, clock::time_point now) noexcept {
        if (b.since == clock::time_point{}) {
            b.since = now;
            return;
        }
        if (rate_ == 0 || now <= b.since) return;
        // Whole tokens only; the rest of the interval counts towards the next one.
        const std::chrono::nanoseconds per_token(1'000'000'000 / rate_);
        const std::int64_t earned = (now - b.since) / per_token;
        if (earned <= 0) return;
        b.since += per_token * earned;
        const std::uint64_t tokens = b.tokens + static_cast<std::uint64_t>(earned);
        b.tokens = tokens < burst_ ? tokens : burst_;
        if (b.tokens == burst_) b.since = now; // a full bucket saves nothing up
    }

    std::int64_t rate_;   // records per second, at most 10^9 (one a nanosecond)
    std::uint64_t burst_;
    std::array<bucket, log_category_count> buckets_{};
};

} // namespace corows::detail
