// SPDX-License-Identifier: BSL-1.0
// When a draining server closes each of its connections: decided here, without sockets, so
// that the spread over the window is a unit test.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace corows::detail {

/// The most ticks a drain window is cut into: enough that the closes look continuous to the
/// clients' reconnects, few enough that a long window wakes the thread rarely.
inline constexpr std::size_t max_drain_ticks = 64;

/// A seed for the jitter of a drain; never throws (a clock reading where no random device is).
inline std::uint_fast32_t jitter_seed() noexcept {
    try {
        return std::random_device{}();
    } catch (...) {
        return static_cast<std::uint_fast32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
}

/// Items spread over a window: shuffled, then cut into even shares, one per tick, tick k due
/// at start + (k + phase) * window / ticks with one random phase in [0, 1). Each item thus
/// falls at a uniformly random moment of the window, while every tick closes about as many
/// as the next (independent draws would bunch some and leave gaps).
template <class T>
class drain_schedule {
public:
    using clock = std::chrono::steady_clock;

    /// Nothing to spread: done() at once.
    drain_schedule() = default;

    /// Spreads `items` over `window` from `start` (a window of 0: all due at `start`), in at
    /// most max_drain_ticks ticks of at least a millisecond, drawing the order from `rng`.
    template <class Rng>
    drain_schedule(std::vector<T> items, clock::time_point start, std::chrono::milliseconds window, Rng& rng)
        : items_(std::move(items)), start_(start), window_(std::max(window, std::chrono::milliseconds(0))) {
        if (items_.empty()) return;
        auto most = std::max<std::size_t>(1, static_cast<std::size_t>(window_.count()));
        ticks_ = std::min({max_drain_ticks, items_.size(), most});
        if (window_.count() == 0) return;
        std::shuffle(items_.begin(), items_.end(), rng);
        phase_ = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }

    /// True once every share has been taken.
    bool done() const noexcept { return next_ >= ticks_; }
    /// Number of ticks (0 without items).
    std::size_t ticks() const noexcept { return ticks_; }
    /// When the next share is due; only while !done().
    clock::time_point due() const {
        std::chrono::duration<double, std::milli> at(static_cast<double>(window_.count()) *
                                                     (static_cast<double>(next_) + phase_) /
                                                     static_cast<double>(ticks_));
        return start_ + std::chrono::duration_cast<clock::duration>(at);
    }
    /// The next share, in the order drawn; only while !done(). Valid until the schedule is
    /// replaced or destroyed.
    std::span<T> take() noexcept {
        std::size_t n = items_.size();
        std::size_t from = n * next_ / ticks_, to = n * (next_ + 1) / ticks_;
        ++next_;
        return std::span<T>(items_).subspan(from, to - from);
    }

private:
    std::vector<T> items_;
    clock::time_point start_{};
    std::chrono::milliseconds window_{0};
    std::size_t ticks_ = 0;
    std::size_t next_ = 0;
    double phase_ = 0.0;
};

} // namespace corows::detail
