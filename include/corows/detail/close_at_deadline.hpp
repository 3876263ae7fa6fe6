// SPDX-License-Identifier: BSL-1.0
// A deadline that closes something when it passes: connect()'s and connect_unix()'s bound on
// reaching the server, and a server's bound on its drain. The closing is what ends the
// operations in progress (their sockets fail), so the code that waits on them needs no timer
// of its own; it asks fired() afterwards to tell a timeout from another failure.
#pragma once

#include <corows/asio.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace corows::detail {

/// One timer that runs a closing action once its deadline passes, unless disarmed before.
class close_at_deadline {
public:
    using clock_type = std::chrono::steady_clock;

    /// A disarmed deadline whose timer runs on `ex`.
    explicit close_at_deadline(const asio::any_io_executor& ex) : s_(std::make_shared<state>(ex)) {}

    /// Runs `close()` on the timer's executor at `at`, unless disarm() or another arm() comes
    /// first, or this object is destroyed first; fired() is false until then.
    template <class Close>
    void arm(clock_type::time_point at, Close close) {
        s_->fired = false;
        s_->timer.expires_at(at);
        // Weak: a completion already queued when this object goes must not touch it.
        s_->timer.async_wait([w = std::weak_ptr<state>(s_), close = std::move(close)](error_code ec) mutable {
            auto s = w.lock();
            if (ec || !s) return;
            s->fired = true;
            close();
        });
    }

    /// arm() at `limit` from now; a zero or negative `limit` means no deadline (nothing armed).
    template <class Close>
    void arm_after(std::chrono::milliseconds limit, Close close) {
        if (limit.count() > 0) arm(clock_type::now() + limit, std::move(close));
    }

    /// The deadline no longer applies; a `close` already due may still run (fired() tells).
    void disarm() { s_->timer.cancel(); }

    /// True once the deadline passed and `close` ran.
    bool fired() const noexcept { return s_->fired; }

private:
    struct state {
        explicit state(const asio::any_io_executor& ex) : timer(ex) {}
        asio::steady_timer timer;
        bool fired = false;
    };
    std::shared_ptr<state> s_;
};

} // namespace corows::detail
