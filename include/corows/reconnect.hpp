// SPDX-License-Identifier: BSL-1.0
// corows::reconnecting: a client that stays connected. next() connects, and after the
// connection ends connects again when the ending calls for it (protocol/backoff.hpp decides),
// waiting a jittered exponential backoff or the server's Retry-After first.
#pragma once

#include <corows/asio.hpp>
#include <corows/connect.hpp>
#include <corows/connect_info.hpp>
#include <corows/detail/drain_schedule.hpp> // detail::jitter_seed()
#include <corows/error.hpp>
#include <corows/options.hpp>
#include <corows/protocol/backoff.hpp>
#include <corows/protocol/http.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace corows {

/// A client that reconnects: each next() returns an open connection, connecting again after
/// the previous one ended (waiting first), until the ending says not to, or stop():
///
///     corows::reconnecting rc("wss://feed.example.com/", opts);
///     while (auto* ws = co_await rc.next()) {
///         corows::message m;
///         while (co_await ws->read_message(m)) handle(m);
///     }
///     // rc.closed_why() says why it ended
///
/// next() and the connections run on the executor of the coroutine that calls next(), one
/// thread at a time (as every websocket operation); stop() may be called from any thread.
class reconnecting {
public:
    /// Run on each new connection before next() returns it, e.g. to subscribe again; an
    /// exception from it leaves next() (the connection is closed by the next next()).
    using connect_hook = std::function<asio::awaitable<void>(client_websocket&, const connect_info&)>;

    /// Connects to `url` (ws:// or wss://) with `opts` (and options' deprecated client fields,
    /// for one release), reconnecting as `ro` says.
    explicit reconnecting(std::string url, options opts = {}, reconnect_options ro = {})
        : st_(std::make_shared<state>(std::move(url), detail::legacy_connect_options(opts), std::move(ro))) {}
    /// Connects to `url` as connect(url, co) does (co.failure and co.executor are not used),
    /// reconnecting as `ro` says.
    reconnecting(std::string url, connect_options co, reconnect_options ro)
        : st_(std::make_shared<state>(std::move(url), std::move(co), std::move(ro))) {}

    reconnecting(const reconnecting&) = delete;
    reconnecting& operator=(const reconnecting&) = delete;
    /// An open connection closes as a websocket's destructor closes it. Like any I/O object,
    /// destroy it before its io_context while a connection is open or next() is running;
    /// afterwards, order does not matter.
    ~reconnecting() { st_->stopped.store(true); }

    /// Sends `extra` (Origin, Authorization, cookies) with every upgrade request.
    void set_request(handshake_request extra) { st_->co.request = std::move(extra); }
    /// Verifies wss:// servers against `tls` (which must outlive this object) instead of
    /// default_tls_context().
    void set_tls_context(asio::ssl::context& tls) noexcept { st_->co.tls = &tls; }
    /// Runs `hook` on every new connection (see connect_hook).
    void on_connect(connect_hook hook) { st_->hook = std::move(hook); }

    /// The next open connection, valid until the next call or this object's end; nullptr once
    /// the loop is over (closed_why() says why). The first call connects at once; a later one
    /// closes the previous connection if it is still open, then unless should_reconnect says
    /// no, waits (backoff, or a refusal's Retry-After) and connects, again after each failed
    /// attempt. Runs the on_connect hook before returning a connection. Called again after a
    /// nullptr that stop() did not cause, it starts over with a connect at once.
    asio::awaitable<client_websocket*> next() { return run_next(st_); }

    /// Ends the loop, from any thread: a wait ends at once, a connect in progress is abandoned
    /// when it completes, an open connection is closed (1000), and next() returns nullptr with
    /// closed_why().stopped().
    void stop() {
        st_->stopped.store(true);
        std::lock_guard<std::mutex> lock(st_->mutex);
        // Nothing to interrupt once the loop is over: its io_context may be gone by then.
        if (st_->ex && (st_->running || st_->open))
            asio::post(*st_->ex, [w = std::weak_ptr<state>(st_)] {
                if (auto s = w.lock()) s->interrupt();
            });
    }
    /// True once stop() was called.
    bool stopped() const noexcept { return st_->stopped.load(); }

    /// Why the last connection or connect attempt ended; once next() returned nullptr, why
    /// the loop ended (stopped(), or the ending should_reconnect refused). Not ended() before
    /// anything has.
    const close_info& closed_why() const noexcept { return st_->last; }
    /// closed_why() in the deprecated record.
    [[deprecated("use closed_why()")]] disconnect_reason reason() const { return st_->last; }
    /// The connections opened so far.
    unsigned connections() const noexcept { return st_->connections; }

private:
    struct state {
        state(std::string u, connect_options o, reconnect_options r)
            : url(std::move(u)), co(std::move(o)), policy(std::move(r)), waits(policy, detail::jitter_seed()) {}

        // On the executor: ends a wait and the open connection's reading.
        void interrupt() {
            if (timer) timer->cancel();
            if (connected && ws.is_open()) (void)ws.start_close(1000, "client stopping");
        }
        bool should_reconnect(const close_info& r) const {
            return policy.should_reconnect ? policy.should_reconnect(r) : reconnect_by_default(r);
        }

        std::string url;
        connect_options co; // failure and executor are set per attempt
        reconnect_options policy;
        connect_hook hook;
        backoff waits;
        std::atomic<bool> stopped{false};
        std::mutex mutex; // guards ex, running and open: stop() reads them from any thread
        std::optional<asio::any_io_executor> ex;
        bool running = false; // in next()
        bool open = false;    // next() returned a connection that has not been judged yet
        // The wait in progress; in the waiting coroutine's frame, so that no timer outlives
        // the io_context when this object does.
        asio::steady_timer* timer = nullptr;
        client_websocket ws;
        bool connected = false; // ws holds a connection opened by next()
        std::chrono::steady_clock::time_point connected_at{};
        close_info last;
        close_info previous; // how the last connection ended
        unsigned connections = 0;
    };

    // How the connection `s->ws` ended, or code 0 if it is still open (the application moved on).
    static close_info ending_of(state& s) {
        close_info r = s.ws.closed_why();
        // A websocket no longer open without a known ending was closed under us: as dropped.
        if (!s.ws.is_open() && r.code == 0) r.code = static_cast<std::uint16_t>(close_code::abnormal);
        return r;
    }

    // The loop was stopped: `r` (the connection the stop closed, if any) marked so.
    static close_info stopped_reason(close_info r = {}) {
        r.by = ended_by::local;
        r.remote = false;
        r.error = std::make_error_code(std::errc::operation_canceled);
        return r;
    }

    // How a connect attempt that failed with `ec` ended, as `why` describes it.
    static close_info failed_attempt(const error_code& ec, const connect_failure& why) {
        close_info r;
        r.phase = why.phase == connect_phase::http_upgrade ? close_phase::handshake : close_phase::connecting;
        r.code = static_cast<std::uint16_t>(close_code::abnormal); // as a browser reports a failed connect
        r.error = ec;
        r.reason = why.message;
        if (why.response) {
            r.status = why.response->status;
            if (auto v = why.response->find("Retry-After"))
                r.retry_after = parse_retry_after(*v, std::chrono::system_clock::now());
        }
        // The server said no (a status, a refused or dropped connection), or our deadline
        // passed, or something broke a rule (a bad URL, TLS, a bad answer).
        r.remote = r.status != 0 || ec == asio::error::connection_refused || ec == asio::error::connection_reset ||
                   ec == error::handshake_closed;
        r.by = ec == error::timeout ? ended_by::timeout : r.remote ? ended_by::peer : ended_by::error;
        return r;
    }

    // False if stop() ended the wait.
    static asio::awaitable<bool> wait(std::shared_ptr<state> s, std::chrono::milliseconds d) {
        if (s->stopped.load()) co_return false;
        // stop() from another thread posts interrupt(), which runs only once this coroutine
        // is suspended in the wait: the wait cannot miss it.
        asio::steady_timer timer(co_await asio::this_coro::executor, d);
        struct published {
            state& s;
            ~published() { s.timer = nullptr; }
        } guard{*s};
        s->timer = &timer;
        error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        co_return !s->stopped.load();
    }

    // Marks next() as running, and whether it leaves a connection open, for stop().
    struct running_guard {
        state& s;
        explicit running_guard(state& st) : s(st) {
            std::lock_guard<std::mutex> lock(s.mutex);
            s.running = true;
            s.open = false;
        }
        ~running_guard() {
            std::lock_guard<std::mutex> lock(s.mutex);
            s.running = false;
            s.open = s.connected;
        }
    };

    static asio::awaitable<client_websocket*> run_next(std::shared_ptr<state> s) {
        auto ex = co_await asio::this_coro::executor;
        {
            std::lock_guard<std::mutex> lock(s->mutex);
            if (!s->ex) s->ex.emplace(ex);
        }
        running_guard running(*s);
        std::chrono::milliseconds waited{0};
        if (s->connected) {
            s->last = ending_of(*s);
            s->previous = s->last;
            s->connected = false;
            s->waits.connection_lasted(std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - s->connected_at));
            s->ws = client_websocket(); // an open one closes with 1000 in the background
            if (s->stopped.load()) s->last = stopped_reason(s->last);
            if (!s->should_reconnect(s->last)) co_return nullptr;
            const auto d = s->waits.next_delay();
            waited += d;
            if (!co_await wait(s, d)) {
                s->last = stopped_reason();
                co_return nullptr;
            }
        }
        for (unsigned attempts = 1;; ++attempts) {
            if (s->stopped.load()) {
                s->last = stopped_reason();
                co_return nullptr;
            }
            connect_failure why;
            connect_options co = s->co;
            co.failure = &why;
            co.executor = {};
            auto [ec, ws] = co_await connect(s->url, std::move(co), detail::tuple_token());
            if (s->stopped.load()) {
                s->last = stopped_reason();
                co_return nullptr; // `ws` closes as it goes
            }
            if (!ec) {
                s->ws = std::move(ws);
                s->connected = true;
                s->connected_at = std::chrono::steady_clock::now();
                const connect_info info(++s->connections, attempts, waited, s->previous);
                if (s->hook) co_await s->hook(s->ws, info);
                co_return &s->ws;
            }
            s->last = failed_attempt(ec, why);
            if (!s->should_reconnect(s->last)) co_return nullptr;
            // Retry-After is only honoured from a server saying "later" (429, 503), as RFC
            // 9110 §10.2.3 has it; elsewhere the field means nothing for a retry.
            const bool later = s->last.status == 429 || s->last.status == 503;
            const auto d = later && s->last.retry_after ? s->waits.next_delay(*s->last.retry_after)
                                                        : s->waits.next_delay();
            waited += d;
            if (!co_await wait(s, d)) {
                s->last = stopped_reason();
                co_return nullptr;
            }
        }
    }

    std::shared_ptr<state> st_;
};

} // namespace corows
