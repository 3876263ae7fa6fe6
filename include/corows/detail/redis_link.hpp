// SPDX-License-Identifier: BSL-1.0
// corows::detail::redis_link: one connection to Redis, made again after each failure until
// stopped; redis_backplane drives two of them (corows/redis_backplane.hpp).
//
// Of hiredis only the parts without I/O are used: its reply reader and command formatter
// (corows/detail/resp.hpp); the link does the I/O itself, on its owner's strand. An attempt
// connects (resolving host on each attempt, or to the Unix socket), then sends AUTH (if
// configured) and PING pipelined, all within connect_timeout. Once up, it writes what its
// owner queues, in order, and hands every reply to its owner until one of them, the socket or
// the keepalive ends the connection: a link that hears nothing for ping_interval sends a PING,
// and one that stays silent for another fails with error::timeout. After a failure it waits a
// random delay between half and all of its backoff (reconnect_min at first, doubling up to
// reconnect_max; back to reconnect_min once a connection stayed up for reconnect_max).
//
// Each attempt has a generation, so the completions of an earlier one do nothing. fail() ends
// an attempt from outside its coroutine: it closes the socket, and the coroutine, which sees
// its I/O fail, reports the reason fail() was given.
#pragma once

#if !defined(COROWS_HAS_REDIS)
#error "corows/detail/redis_link.hpp needs hiredis: install libhiredis-dev and build corows with -Dredis=enabled (which defines COROWS_HAS_REDIS)"
#endif

#include <corows/asio.hpp>
#include <corows/detail/platform.hpp>
#include <corows/detail/resp.hpp>
#include <corows/error.hpp>
#include <corows/redis_error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace corows::detail {

/// Where a redis_link connects, as whom, and how patiently (see redis_options for each).
struct redis_link_config {
    /// Redis' host name or IP address.
    std::string host;
    /// Redis' TCP port.
    unsigned short port = 0;
    /// Non-empty: the Unix socket to connect to instead of host:port.
    std::string unix_path;
    /// With `password`: the ACL user of AUTH.
    std::string username;
    /// Non-empty: AUTH first on each connection.
    std::string password;
    /// How long connecting and the handshake may take.
    std::chrono::milliseconds connect_timeout{0};
    /// The first delay before a reconnection.
    std::chrono::milliseconds reconnect_min{0};
    /// The longest delay before a reconnection.
    std::chrono::milliseconds reconnect_max{0};
    /// Silence that sends a PING (and twice as much fails the connection); zero: never.
    std::chrono::milliseconds ping_interval{0};
    /// Received bytes one reply may take before it is a protocol error.
    std::size_t max_reply_bytes = 0;
    /// Array elements one reply may hold before it is a protocol error.
    long long max_reply_elements = 0;
};

/// NOAUTH (no password sent) and WRONGPASS are about credentials (redis_error::auth_failed);
/// any other error reply is Redis' own (redis_error::server_error).
inline error_code error_reply_code(const redisReply& r) {
    std::string_view text = reply_text(r);
    if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS")) return error_code(make_error_code(redis_error::auth_failed));
    return error_code(make_error_code(redis_error::server_error));
}

class redis_link;

/// What a redis_link asks of the one that drives it; always called on the link's strand.
class redis_link_owner {
public:
    /// Keeps the owner (and so the link it owns) alive while an operation of the link is pending.
    virtual std::shared_ptr<void> keep_alive() = 0;
    /// The handshake succeeded and the link is up: queue what a new connection needs.
    virtual void on_up(redis_link& l) = 0;
    /// Handles one reply on an up link; an error ends the connection with it.
    virtual error_code on_reply(redis_link& l, const redisReply& r) = 0;
    /// A write completed and left nothing queued on an up link: the owner may queue more.
    virtual void on_drained(redis_link& l) = 0;
    /// An attempt ended with `why` and the link is down; it retries after its backoff unless stopped.
    virtual void on_down(redis_link& l, error_code why) = 0;

protected:
    ~redis_link_owner() = default;
};

/// One connection to Redis that reconnects until stop(); everything on its strand.
class redis_link {
public:
    using executor_type = asio::strand<asio::any_io_executor>;

    /// A down link on `ex` that counts the bytes of its queue in `unsent` (see queue()).
    redis_link(const executor_type& ex, redis_link_config config, std::atomic<std::size_t>& unsent,
               redis_link_owner& owner)
        : strand_(ex),
          config_(std::move(config)),
          unsent_(unsent),
          owner_(owner),
          socket_(ex),
          resolver_(ex),
          deadline_(ex),
          retry_(ex),
          rng_(std::random_device{}()) {}

    redis_link(const redis_link&) = delete;
    redis_link& operator=(const redis_link&) = delete;

    /// Connects in the background, and again after each failure, until stop(); call once.
    void start() { asio::co_spawn(strand_, run(owner_.keep_alive()), asio::detached); }

    /// Closes the connection and stops reconnecting; idempotent; the queue stays (see clear_queue()).
    void stop() {
        stopped_ = true;
        error_code ignored;
        socket_.close(ignored);
        resolver_.cancel();
        deadline_.cancel();
        retry_.cancel();
    }

    /// True from the handshake's success until the attempt ends.
    bool up() const noexcept { return state_ == state::up; }

    /// Queues `cmd`, whose bytes the caller has counted in `unsent` already; written, in
    /// order, while up. The counter drops as the socket takes them.
    void queue(resp_command cmd) {
        out_.push_back(std::move(cmd));
        start_write();
    }

    /// Drops what the socket has not been handed yet and takes its bytes off `unsent`.
    void clear_queue() noexcept {
        std::size_t bytes = 0;
        for (const auto& c : out_) bytes += c.size();
        out_.clear();
        unsent_.fetch_sub(bytes, std::memory_order_relaxed);
    }

    /// Counts a reply against the commands sent on this connection; false if none was owed.
    bool take_reply() noexcept {
        if (owed_replies_ == 0) return false;
        --owed_replies_;
        return true;
    }

    /// Ends the current attempt with `why` (the first reason given wins); retrying follows.
    void fail(error_code why) {
        if (!failure_) failure_ = why;
        error_code ignored;
        socket_.close(ignored);
        resolver_.cancel();
    }

private:
    using clock = std::chrono::steady_clock;
    using socket_type = asio::generic::stream_protocol::socket;

    // One socket write takes at most this much of a queue.
    static constexpr std::size_t write_chunk = 256 * 1024;

    enum class state { down, connecting, up };

    asio::awaitable<void> run(std::shared_ptr<void> owner) {
        (void)owner; // keeps the owner, and so this link, alive while this coroutine runs
        backoff_ = config_.reconnect_min;
        while (!stopped_) {
            error_code ec;
            try {
                ec = co_await session();
            } catch (const std::bad_alloc&) {
                ec = error_code(make_error_code(std::errc::not_enough_memory));
            } catch (const system_error& e) {
                ec = e.code();
            }
            if (failure_) ec = failure_;
            auto up_since = up_since_;
            tear_down();
            owner_.on_down(*this, ec);
            if (stopped_) break;
            auto now = clock::now();
            if (up_since && now - *up_since >= config_.reconnect_max) backoff_ = config_.reconnect_min;
            auto full = std::max<std::chrono::milliseconds::rep>(backoff_.count(), 0);
            std::uniform_int_distribution<std::chrono::milliseconds::rep> jitter(full / 2, full);
            retry_.expires_after(std::chrono::milliseconds(jitter(rng_)));
            backoff_ = std::min(std::max(backoff_ * 2, std::chrono::milliseconds(1)), config_.reconnect_max);
            error_code waited;
            co_await retry_.async_wait(asio::redirect_error(asio::use_awaitable, waited));
        }
    }

    // One attempt: connect, authenticate, then serve until something fails.
    asio::awaitable<error_code> session() {
        ++generation_;
        failure_ = {};
        reader_.emplace(config_.max_reply_bytes, config_.max_reply_elements);
        state_ = state::connecting;
        arm_deadline();
        error_code ec = co_await connect();
        if (!ec) ec = co_await handshake();
        if (ec || stopped_) co_return ec;
        state_ = state::up;
        up_since_ = clock::now();
        heard_ = false;
        ping_owed_ = false;
        arm_keepalive();
        owner_.on_up(*this);
        start_write();
        co_return co_await serve();
    }

    asio::awaitable<error_code> connect() {
        error_code ec;
        if (!config_.unix_path.empty()) {
#if !COROWS_HAS_UNIX_SOCKETS
            co_return make_error_code(asio::error::operation_not_supported);
#else
            std::optional<asio::local::stream_protocol::endpoint> where;
            try {
                where.emplace(config_.unix_path);
            } catch (const system_error& e) { // a path too long for sockaddr_un
                co_return e.code();
            }
            co_await socket_.async_connect(asio::generic::stream_protocol::endpoint(*where),
                                           asio::redirect_error(asio::use_awaitable, ec));
            co_return ec;
#endif
        }
        std::vector<asio::ip::tcp::endpoint> targets;
        auto address = asio::ip::make_address(config_.host, ec);
        if (!ec) {
            targets.emplace_back(address, config_.port);
        } else {
            ec = {};
            auto found = co_await resolver_.async_resolve(config_.host, std::to_string(config_.port),
                                                          asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return ec;
            for (const auto& entry : found) targets.push_back(entry.endpoint());
        }
        for (const auto& target : targets) {
            error_code ignored;
            socket_.close(ignored);
            ec = {};
            co_await socket_.async_connect(asio::generic::stream_protocol::endpoint(target),
                                           asio::redirect_error(asio::use_awaitable, ec));
            if (!ec) {
                // The publisher pipelines and the subscriber sends small commands: Nagle only delays.
                socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
                co_return ec;
            }
            if (failure_ || stopped_) break;
        }
        if (!ec && targets.empty()) ec = asio::error::host_not_found;
        co_return ec;
    }

    // AUTH (if configured) and PING, pipelined: the PING proves a Redis answers, with or
    // without a password.
    asio::awaitable<error_code> handshake() {
        std::vector<resp_command> commands;
        bool auth = !config_.password.empty();
        if (auth && !config_.username.empty()) {
            std::string_view args[] = {"AUTH", config_.username, config_.password};
            commands.emplace_back(args);
        } else if (auth) {
            std::string_view args[] = {"AUTH", config_.password};
            commands.emplace_back(args);
        }
        std::string_view ping[] = {"PING"};
        commands.emplace_back(ping);
        std::vector<asio::const_buffer> buffers;
        for (const auto& c : commands) buffers.emplace_back(c.data(), c.size());
        error_code ec;
        co_await asio::async_write(socket_, buffers, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return ec;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            reply_ptr r = co_await read_reply(ec);
            if (ec) co_return ec;
            bool is_auth = auth && i == 0;
            if (r->type == REDIS_REPLY_ERROR) co_return is_auth ? make(redis_error::auth_failed) : error_reply_code(*r);
            if (r->type != REDIS_REPLY_STATUS) co_return make(redis_error::protocol_error);
            if (!is_auth && reply_text(*r) != "PONG") co_return make(redis_error::protocol_error);
        }
        co_return error_code{};
    }

    // Reads until the reader has a whole reply.
    asio::awaitable<reply_ptr> read_reply(error_code& ec) {
        for (;;) {
            if (auto r = reader_->next()) co_return r;
            if (reader_->failed()) {
                ec = make(redis_error::protocol_error);
                co_return nullptr;
            }
            ec = co_await read_some();
            if (ec) co_return nullptr;
        }
    }

    asio::awaitable<error_code> read_some() {
        error_code ec;
        std::size_t n = co_await socket_.async_read_some(asio::buffer(read_buffer_),
                                                         asio::redirect_error(asio::use_awaitable, ec));
        if (!ec && !reader_->feed(std::span<const char>(read_buffer_.data(), n)))
            ec = make(redis_error::protocol_error);
        if (n > 0) {
            heard_ = true;
            ping_owed_ = false;
        }
        co_return ec;
    }

    // Hands replies to the owner until one ends the connection or the socket fails.
    asio::awaitable<error_code> serve() {
        for (;;) {
            while (auto r = reader_->next()) {
                error_code ec = owner_.on_reply(*this, *r);
                if (ec) co_return ec;
                if (stopped_ || failure_) co_return failure_;
            }
            if (reader_->failed()) co_return make(redis_error::protocol_error);
            if (error_code ec = co_await read_some()) co_return ec;
        }
    }

    // Hands what is queued to the socket, unless a write is in flight or the link is not up.
    void start_write() {
        if (write_in_flight_ || out_.empty() || state_ != state::up) return;
        std::vector<asio::const_buffer> buffers;
        std::size_t bytes = 0;
        while (!out_.empty() && (bytes == 0 || bytes + out_.front().size() <= write_chunk)) {
            bytes += out_.front().size();
            writing_.push_back(std::move(out_.front()));
            out_.pop_front();
            buffers.emplace_back(writing_.back().data(), writing_.back().size());
        }
        // Counted when sent, not when written: a reply may come before the write's completion.
        owed_replies_ += writing_.size();
        write_in_flight_ = true;
        asio::async_write(socket_, buffers,
                          [this, owner = owner_.keep_alive(), generation = generation_](error_code ec, std::size_t) {
                              written(generation, ec);
                          });
    }

    void written(std::uint64_t generation, error_code ec) {
        std::size_t bytes = 0;
        for (const auto& c : writing_) bytes += c.size();
        writing_.clear();
        write_in_flight_ = false;
        unsent_.fetch_sub(bytes, std::memory_order_relaxed);
        if (stopped_) return;
        if (ec && generation == generation_) {
            fail(ec);
            return;
        }
        if (out_.empty() && state_ == state::up) owner_.on_drained(*this);
        start_write();
    }

    void arm_deadline() {
        deadline_.expires_after(config_.connect_timeout);
        deadline_.async_wait([this, owner = owner_.keep_alive(), generation = generation_](error_code ec) {
            if (ec || generation != generation_ || state_ != state::connecting) return;
            fail(make(error::timeout));
        });
    }

    // While up: a PING after a quiet interval, a failure after two.
    void arm_keepalive() {
        deadline_.cancel();
        if (config_.ping_interval <= std::chrono::milliseconds::zero()) return;
        deadline_.expires_after(config_.ping_interval);
        deadline_.async_wait([this, owner = owner_.keep_alive(), generation = generation_](error_code ec) {
            if (ec || generation != generation_ || state_ != state::up || stopped_) return;
            keepalive_tick();
        });
    }

    void keepalive_tick() {
        bool quiet = !heard_;
        heard_ = false;
        if (quiet && ping_owed_) {
            fail(make(error::timeout));
            return;
        }
        arm_keepalive();
        if (!quiet) return;
        ping_owed_ = true;
        std::string_view args[] = {"PING"};
        out_.emplace_back(args);
        // Every byte written comes off the counter, so the link's own PING goes on it too.
        unsent_.fetch_add(out_.back().size(), std::memory_order_relaxed);
        start_write();
    }

    void tear_down() {
        ++generation_;
        state_ = state::down;
        up_since_.reset();
        error_code ignored;
        socket_.close(ignored);
        resolver_.cancel();
        deadline_.cancel();
        reader_.reset();
        owed_replies_ = 0;
    }

    static error_code make(error e) { return error_code(make_error_code(e)); }
    static error_code make(redis_error e) { return error_code(make_error_code(e)); }

    executor_type strand_;
    const redis_link_config config_;
    std::atomic<std::size_t>& unsent_;
    redis_link_owner& owner_;

    socket_type socket_;
    asio::ip::tcp::resolver resolver_;
    asio::steady_timer deadline_; // connecting and the handshake, then the keepalive
    asio::steady_timer retry_;    // the backoff between attempts
    state state_ = state::down;
    bool stopped_ = false;
    std::uint64_t generation_ = 0; // counts attempts, so stale completions do nothing
    error_code failure_;           // why this attempt was ended from outside its coroutine
    std::optional<resp_reader> reader_;
    std::deque<resp_command> out_;     // not yet handed to the socket
    std::vector<resp_command> writing_; // handed to the socket
    bool write_in_flight_ = false;
    std::uint64_t owed_replies_ = 0; // commands sent on this connection and not answered yet
    std::optional<clock::time_point> up_since_;
    bool heard_ = false;     // bytes arrived since the last keepalive tick
    bool ping_owed_ = false; // a keepalive PING went and nothing arrived since
    std::chrono::milliseconds backoff_{0};
    std::minstd_rand rng_;
    std::array<char, 16 * 1024> read_buffer_{};
};

} // namespace corows::detail
