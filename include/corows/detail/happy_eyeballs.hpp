// SPDX-License-Identifier: BSL-1.0
// Happy Eyeballs (RFC 8305): TCP connection attempts to a name's addresses race, each starting
// a delay after the one before or at once when the one before fails, and the first to connect
// wins. An address that silently drops packets then costs that delay, not the whole handshake
// timeout, as it would if the addresses were tried one after the other.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/family_interleave.hpp>

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace corows::detail {

/// "address:port", with an IPv6 address in brackets.
inline std::string endpoint_text(const asio::ip::tcp::endpoint& e) {
    const auto a = e.address().to_string();
    const auto p = std::to_string(e.port());
    return e.address().is_v6() ? "[" + a + "]:" + p : a + ":" + p;
}

/// One race of connection attempts; cancel() may end it from outside (a deadline).
class happy_eyeballs {
public:
    /// A race whose sockets run on `ex`.
    explicit happy_eyeballs(const asio::any_io_executor& ex) : s_(std::make_shared<state>(ex)) {}

    /// Connects to the first of `endpoints` (reordered by interleave_families) to accept, and
    /// moves that socket into `out`; the other attempts are closed. An attempt starts `delay`
    /// after the one before, or as soon as the one before fails; `delay` 0: one at a time, as
    /// plain sequential connect. Completes with the error of the attempt that failed
    /// last when all fail, asio::error::not_found for an empty list, operation_aborted after
    /// cancel(). Runs once; `*this` must outlive the co_await.
    asio::awaitable<error_code> connect(std::vector<asio::ip::tcp::endpoint> endpoints,
                                        std::chrono::milliseconds delay, asio::ip::tcp::socket& out) {
        auto s = s_;
        const auto order =
            interleave_families(std::move(endpoints), [](const auto& e) { return e.address().is_v6(); });
        using clock = std::chrono::steady_clock;
        std::size_t next = 0;
        auto next_start = clock::now();
        error_code ec;
        for (;;) {
            if (s->cancelled) {
                ec = asio::error::operation_aborted;
                break;
            }
            if (s->winner) break;
            const bool more = next < order.size();
            if (!more && s->pending == 0) {
                ec = s->last_error ? s->last_error : error_code(asio::error::not_found);
                break;
            }
            // RFC 8305 §5: the next attempt starts when the delay has passed or the newest
            // attempt has failed, whichever comes first.
            if (more && (s->pending == 0 || s->newest_failed || clock::now() >= next_start)) {
                start(s, order[next++]);
                next_start = delay.count() > 0 ? clock::now() + delay : clock::time_point::max();
                continue;
            }
            // Woken early by any attempt's completion (state::finished cancels the wait).
            s->wake.expires_at(more ? next_start : clock::time_point::max());
            error_code ignored;
            co_await s->wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        }
        for (auto& a : s->attempts) {
            if (&a == s->winner) continue;
            error_code ignored;
            a.socket.close(ignored);
        }
        if (!ec && s->winner) out = std::move(s->winner->socket);
        co_return ec;
    }

    /// Ends the race at once: every attempt is closed and connect() completes with
    /// operation_aborted. Later calls do nothing.
    void cancel() {
        s_->cancelled = true;
        for (auto& a : s_->attempts) {
            error_code ignored;
            a.socket.close(ignored);
        }
        s_->wake.cancel();
    }

    /// The addresses attempted, in the order started: "A, B, C".
    const std::string& tried() const noexcept { return s_->tried; }
    /// The address that won, else the one attempted last (unspecified before any attempt).
    const asio::ip::tcp::endpoint& last() const noexcept { return s_->last; }
    /// How many attempts were started.
    std::size_t attempts() const noexcept { return s_->attempts.size(); }

private:
    struct attempt {
        attempt(const asio::any_io_executor& ex, asio::ip::tcp::endpoint e) : socket(ex), endpoint(std::move(e)) {}
        asio::ip::tcp::socket socket;
        asio::ip::tcp::endpoint endpoint;
    };

    // Shared with the attempts' completion handlers: a loser's handler runs after the race is
    // over, when its socket is closed.
    struct state {
        explicit state(const asio::any_io_executor& ex) : ex(ex), wake(ex) {}
        asio::any_io_executor ex;
        std::list<attempt> attempts; // stable addresses for the handlers
        asio::steady_timer wake;
        std::size_t pending = 0;
        attempt* winner = nullptr;
        attempt* newest = nullptr;
        bool newest_failed = false;
        error_code last_error;
        bool cancelled = false;
        std::string tried;
        asio::ip::tcp::endpoint last;

        void finished(attempt& a, const error_code& ec) {
            --pending;
            if (cancelled || winner) return;
            if (!ec) {
                winner = &a;
                last = a.endpoint;
            } else {
                last_error = ec;
                if (&a == newest) newest_failed = true;
            }
            wake.cancel();
        }
    };

    static void start(const std::shared_ptr<state>& s, const asio::ip::tcp::endpoint& e) {
        auto& a = s->attempts.emplace_back(s->ex, e);
        s->newest = &a;
        s->newest_failed = false;
        if (!s->tried.empty()) s->tried += ", ";
        s->tried += endpoint_text(e);
        s->last = e;
        // A family this host cannot open fails here, and the next address starts at once.
        error_code ec;
        a.socket.open(e.protocol(), ec);
        if (ec) {
            s->last_error = ec;
            s->newest_failed = true;
            return;
        }
        ++s->pending;
        a.socket.async_connect(e, [s, &a](const error_code& ec) { s->finished(a, ec); });
    }

    std::shared_ptr<state> s_;
};

} // namespace corows::detail
