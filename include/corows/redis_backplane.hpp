// SPDX-License-Identifier: BSL-1.0
// corows::redis_backplane: a corows::backplane over Redis pub/sub, so that hubs in several
// processes (or on several machines) share their topics.
//
// Two connections to one Redis, driven by Asio on the executor the application gives (one of
// its server's threads; no thread of its own): one subscribes to the channels of the topics
// this process needs, the other publishes (RESP2 allows only (P)(UN)SUBSCRIBE, PING and QUIT
// on a subscribed connection); each is a detail::redis_link (corows/detail/redis_link.hpp),
// which does the I/O with the I/O-free parts of hiredis. A connection that hears nothing for
// ping_interval is sent a PING, and one that stays silent for another is made again.
//
// Channel: `channel_prefix + topic`. Message: the envelope of corows/detail/backplane_envelope.hpp
// (version byte 1, kind byte 0 text / 1 binary, the publisher's 16-byte random node id, then
// the payload), so a process skips its own publishes and the kind survives. A message whose
// envelope is malformed (or a text one that is not UTF-8) is dropped and counted in malformed().
//
// Delivery is at most once: Redis pub/sub stores nothing. While Redis is unreachable:
//   - publish() queues its message (up to publish_queue_limit bytes; beyond, it drops it and
//     counts it in dropped()); the queue is sent, in order, when the publishing connection is
//     back. A message the socket had taken when the connection broke is lost.
//   - subscribe()/unsubscribe() only change the set of topics; a new connection subscribes to
//     the whole set, in batches. Messages published by others meanwhile are lost; on_gap says
//     for how long that may have been, once the subscriptions are confirmed again.
//   - each connection retries on its own, forever until stop(): after a failure it waits a
//     random delay between half and all of its current backoff (reconnect_min at first,
//     doubling up to reconnect_max; back to reconnect_min once a connection stayed up for
//     reconnect_max). A wrong password is one failure like any other: on_error hears
//     redis_error::auth_failed and the retries slow down.
// Bounds: the publish queue (publish_queue_limit), a reply (max_message_size plus 64 KiB of
// channel and framing, and 16 array elements: over either the reply is a protocol error and
// the connection is made again), the subscribing connection's unsent commands
// (subscribe_output_limit: over it, the connection is made again, which resubscribes the
// current set in bounded batches). A server that sends replies nobody asked for is a protocol
// error too.
#pragma once

#if !defined(COROWS_HAS_REDIS)
#error "corows/redis_backplane.hpp needs hiredis: install libhiredis-dev and build corows with -Dredis=enabled (its dependency then defines COROWS_HAS_REDIS)"
#endif

#include <corows/asio.hpp>
#include <corows/backplane.hpp>
#include <corows/detail/backplane_envelope.hpp>
#include <corows/detail/redis_link.hpp>
#include <corows/detail/resp.hpp>
#include <corows/detail/log_limiter.hpp>
#include <corows/error.hpp>
#include <corows/log.hpp>
#include <corows/metrics.hpp>
#include <corows/redis_error.hpp>
#include <corows/protocol/utf8.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corows {

/// Where the Redis of a redis_backplane is and how the backplane behaves when it is not there.
struct redis_options {
    /// The defaults below (declared, as options' is, for g++ 12's sake).
    redis_options() = default;

    /// Redis' host name or IP address (a name is resolved on each connection attempt).
    std::string host = "127.0.0.1";
    /// Redis' TCP port.
    unsigned short port = 6379;
    /// Non-empty: connect to this Unix socket instead of host:port (where there are Unix
    /// domain sockets: on Windows each attempt fails with operation_not_supported).
    std::string unix_path;
    /// With `password`: `AUTH username password` (Redis 6 ACL users).
    std::string username;
    /// Non-empty: `AUTH password` (or with `username`) first on each connection.
    std::string password;
    /// The Redis channel of a topic is channel_prefix + topic.
    std::string channel_prefix = "corows:";
    /// How long connecting (name resolution, TCP, AUTH and the first PING) may take.
    std::chrono::milliseconds connect_timeout{2000};
    /// The first delay before a reconnection; it doubles with each failure in a row.
    std::chrono::milliseconds reconnect_min{100};
    /// The longest delay before a reconnection.
    std::chrono::milliseconds reconnect_max{5000};
    /// Bytes of publishes (as formatted for Redis) held while Redis is unreachable or slow;
    /// beyond it, new publishes are dropped and counted in dropped().
    std::size_t publish_queue_limit = 1 << 20;
    /// The largest payload published or accepted: a larger publish is dropped (and counted in
    /// dropped()); a larger message from Redis is a protocol error (the connection is redone).
    std::size_t max_message_size = 16 * 1024 * 1024;
    /// Unsent SUBSCRIBE/UNSUBSCRIBE bytes that make the subscribing connection start over.
    std::size_t subscribe_output_limit = 1 << 20;
    /// A connection that received nothing for this long is sent a PING; one that then
    /// receives nothing for as long again is taken for dead (error::timeout) and made again,
    /// so a vanished host or a half-open TCP connection is noticed. Zero: never.
    std::chrono::milliseconds ping_interval{10'000};
    /// Called (on the backplane's executor) after a lost subscribing connection is back and
    /// resubscribed, with how long this process may have missed others' messages. Not called
    /// for the first connection.
    std::function<void(std::chrono::steady_clock::duration)> on_gap{};
    /// Called (on the backplane's executor) with each connection failure and each error reply
    /// from Redis, for logging.
    std::function<void(error_code)> on_error{};
    /// Where the backplane logs (category backplane): connected at info; a connection lost or
    /// an attempt failed, losing the cluster, and each gap, at warning. Silent by default.
    log_options log{};
};

/// A backplane over Redis pub/sub (see the top of this header for the wire format, the
/// bounds and what happens while Redis is down). Create it with create(), start() it, hand it
/// to a hub; it reconnects until stop(). Its callbacks (the sink, on_gap, on_error) run on
/// its executor, one at a time; an exception from one is caught and dropped. Until stop(), its
/// own pending operations keep it alive: stop() it, then drop it (or destroy its io_context).
class redis_backplane final : public backplane,
                              public std::enable_shared_from_this<redis_backplane>,
                              private detail::redis_link_owner {
    struct token {};

public:
    /// A stopped backplane that will run on `ex` (wrapped in a strand of its own).
    static std::shared_ptr<redis_backplane> create(asio::any_io_executor ex, redis_options o) {
        return std::make_shared<redis_backplane>(token{}, std::move(ex), std::move(o));
    }

    /// Use create(): the backplane must be owned by a shared_ptr.
    redis_backplane(token, asio::any_io_executor ex, redis_options o)
        : options_(std::move(o)),
          strand_(asio::make_strand(std::move(ex))),
          node_(detail::random_node_id()),
          subscriber_(strand_, link_config(options_), subscriber_bytes_, *this),
          publisher_(strand_, link_config(options_), queued_, *this),
          limiter_(options_.log.per_second, options_.log.burst) {}

    /// Connects both connections in the background and keeps them up until stop(); any
    /// thread; does nothing after the first call or after stop().
    void start() {
        asio::post(strand_, [self = shared_from_this()] {
            if (self->started_ || self->stopped_) return;
            self->started_ = true;
            self->subscriber_.start();
            self->publisher_.start();
        });
    }

    /// Closes both connections, drops the publish queue and stops reconnecting; any thread;
    /// idempotent. Nothing is delivered after it has run on the executor.
    void stop() {
        asio::post(strand_, [self = shared_from_this()] { self->shut_down(); });
    }

    /// True while both connections are up and every subscription sent on connecting is confirmed.
    bool connected() const noexcept { return connected_.load(std::memory_order_relaxed); }
    /// Publishes dropped because the queue was full or the payload over max_message_size.
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
    /// Messages from Redis dropped because their envelope was malformed (or their text not UTF-8).
    std::uint64_t malformed() const noexcept { return malformed_.load(std::memory_order_relaxed); }
    /// Bytes of publishes queued and not yet taken by the socket.
    std::size_t queued_bytes() const noexcept { return queued_.load(std::memory_order_relaxed); }
    /// All the counts above and more (publishes, arrivals, connection failures, gaps), from any
    /// thread; write_prometheus() formats them.
    backplane_metrics metrics() const noexcept {
        backplane_metrics m;
        m.connected = connected();
        m.queued_bytes = queued_bytes();
        m.published = published_.load(std::memory_order_relaxed);
        m.received = received_.load(std::memory_order_relaxed);
        m.dropped = dropped();
        m.malformed = malformed();
        m.connection_failures = failures_.load(std::memory_order_relaxed);
        m.gaps = gaps_.load(std::memory_order_relaxed);
        m.gap_time = std::chrono::nanoseconds(gap_nanoseconds_.load(std::memory_order_relaxed));
        return m;
    }

    /// Sets where other processes' messages go; posted to the executor.
    void attach(sink s) override {
        asio::post(strand_, [self = shared_from_this(), s = std::move(s)]() mutable { self->sink_ = std::move(s); });
    }

    /// Adds `topic` to the set; subscribes to its channel if connected; posted to the executor.
    void subscribe(std::string topic) override {
        asio::post(strand_, [self = shared_from_this(), t = std::move(topic)]() mutable { self->add_topic(std::move(t)); });
    }

    /// Removes `topic` from the set (its messages stop at once); posted to the executor.
    void unsubscribe(std::string topic) override {
        asio::post(strand_, [self = shared_from_this(), t = std::move(topic)]() mutable { self->remove_topic(std::move(t)); });
    }

    /// Formats PUBLISH here (a copy of `payload`) and queues it on the executor, or drops it
    /// (counted) if the queue is over publish_queue_limit or the payload over max_message_size.
    void publish(std::string_view topic, std::span<const std::uint8_t> payload, message_kind kind) override {
        // A full queue costs no formatting: the command is longer than its payload.
        std::size_t floor = payload.size() + detail::envelope_header_size;
        if (payload.size() > options_.max_message_size ||
            queued_.load(std::memory_order_relaxed) + floor > options_.publish_queue_limit) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        std::string channel = options_.channel_prefix;
        channel += topic;
        std::string body = detail::encode_envelope(node_, kind, payload);
        std::string_view args[] = {"PUBLISH", channel, body};
        detail::resp_command cmd(args);
        if (!reserve(cmd.size())) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        asio::post(strand_, [self = shared_from_this(), cmd = std::move(cmd)]() mutable { self->queue_publish(std::move(cmd)); });
    }

private:
    using clock = std::chrono::steady_clock;
    using executor_type = detail::redis_link::executor_type;

    // Replies hold at most this many array elements (a message is 3).
    static constexpr long long max_reply_elements = 16;
    // Room for a channel name and RESP framing besides the payload.
    static constexpr std::size_t reply_slack = 64 * 1024;
    // SUBSCRIBE batches on (re)connecting: channels and bytes per command.
    static constexpr std::size_t batch_channels = 256;
    static constexpr std::size_t batch_bytes = 64 * 1024;

    static detail::redis_link_config link_config(const redis_options& o) {
        return {.host = o.host, .port = o.port, .unix_path = o.unix_path, .username = o.username,
                .password = o.password, .connect_timeout = o.connect_timeout, .reconnect_min = o.reconnect_min,
                .reconnect_max = o.reconnect_max, .ping_interval = o.ping_interval,
                .max_reply_bytes = o.max_message_size + reply_slack, .max_reply_elements = max_reply_elements};
    }

    // --- on the executor ---

    // What the links ask of their owner (detail::redis_link_owner).

    std::shared_ptr<void> keep_alive() override { return shared_from_this(); }

    void on_up(detail::redis_link& l) override {
        if (&l == &subscriber_) {
            resubscribing_ = true;
            cursor_.reset();
            queue_next_batch();
        }
        update_connected();
    }

    error_code on_reply(detail::redis_link& l, const redisReply& r) override {
        return &l == &subscriber_ ? on_subscriber_reply(r) : on_publisher_reply(r);
    }

    void on_drained(detail::redis_link& l) override {
        if (&l == &subscriber_ && resubscribing_) queue_next_batch();
    }

    void on_down(detail::redis_link& l, error_code why) override {
        failures_.fetch_add(1, std::memory_order_relaxed);
        if (!stopped_ && options_.log.enabled(log_level::warning))
            log(log_level::warning, std::string("Redis ") + (&l == &subscriber_ ? "subscribing" : "publishing") +
                                        " connection down: " + why.message());
        if (&l == &subscriber_) {
            if (subscribed_ && !lost_at_) lost_at_ = clock::now();
            subscribed_ = false;
            resubscribing_ = false;
            cursor_.reset();
            sent_channels_ = confirmed_ = confirm_target_ = 0;
            // The set is the state: a new connection sends it whole.
            l.clear_queue();
        }
        update_connected();
        report(why);
    }

    error_code on_subscriber_reply(const redisReply& r) {
        if (r.type == REDIS_REPLY_ERROR) return detail::error_reply_code(r);
        // A keepalive PING on a connection with no channel (yet) is answered as outside pub/sub.
        if (r.type == REDIS_REPLY_STATUS && detail::reply_text(r) == "PONG") return {};
        if (r.type != REDIS_REPLY_ARRAY || r.elements < 2 || !is_string(*r.element[0]))
            return make(redis_error::protocol_error);
        std::string_view what = detail::reply_text(*r.element[0]);
        if (what == "message") {
            if (r.elements != 3 || !is_string(*r.element[1]) || !is_string(*r.element[2]))
                return make(redis_error::protocol_error);
            deliver(detail::reply_text(*r.element[1]), detail::reply_text(*r.element[2]));
            return {};
        }
        if (what == "subscribe" || what == "unsubscribe") {
            if (confirmed_ >= sent_channels_) return make(redis_error::protocol_error); // unasked
            ++confirmed_;
            check_subscribed();
            return {};
        }
        if (what == "pong") return {};
        return make(redis_error::protocol_error);
    }

    error_code on_publisher_reply(const redisReply& r) {
        if (!publisher_.take_reply()) return make(redis_error::protocol_error); // unasked
        if (r.type == REDIS_REPLY_INTEGER) return {};
        if (r.type == REDIS_REPLY_STATUS && detail::reply_text(r) == "PONG") return {}; // keepalive
        if (r.type != REDIS_REPLY_ERROR) return make(redis_error::protocol_error);
        error_code ec = detail::error_reply_code(r);
        if (ec == make(redis_error::auth_failed)) return ec; // every publish would fail: start over
        report(ec);
        return {};
    }

    void deliver(std::string_view channel, std::string_view data) {
        const std::string& prefix = options_.channel_prefix;
        if (channel.substr(0, prefix.size()) != prefix) return;
        std::string_view topic = channel.substr(prefix.size());
        if (!topics_.contains(topic)) return; // unsubscribed since: deliver nothing more
        std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
        auto e = detail::decode_envelope(bytes);
        if (!e || (e->kind == message_kind::text && !is_valid_utf8(e->payload))) {
            malformed_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (e->origin == node_) return; // our own: the hub delivered it here already
        if (!sink_) return;
        received_.fetch_add(1, std::memory_order_relaxed);
        try {
            sink_(topic, e->payload, e->kind);
        } catch (...) {
        }
    }

    void add_topic(std::string topic) {
        if (stopped_) return;
        auto [it, inserted] = topics_.insert(std::move(topic));
        if (!inserted || !subscriber_.up()) return;
        // A topic past the batches' cursor is in a batch still to come.
        if (resubscribing_ && *it > *cursor_) return;
        std::vector<std::string> channel{options_.channel_prefix + *it};
        queue_subscriber_command("SUBSCRIBE", channel);
        check_subscriber_output();
    }

    void remove_topic(std::string topic) {
        if (stopped_) return;
        auto it = topics_.find(topic);
        if (it == topics_.end()) return;
        bool in_a_later_batch = resubscribing_ && *it > *cursor_;
        topics_.erase(it);
        if (!subscriber_.up() || in_a_later_batch) return;
        std::vector<std::string> channel{options_.channel_prefix + topic};
        queue_subscriber_command("UNSUBSCRIBE", channel);
        check_subscriber_output();
    }

    // The next SUBSCRIBE of a new connection's resubscription, from the cursor on.
    void queue_next_batch() {
        auto it = cursor_ ? topics_.upper_bound(*cursor_) : topics_.begin();
        std::vector<std::string> channels;
        std::size_t bytes = 0;
        for (; it != topics_.end() && channels.size() < batch_channels && bytes < batch_bytes; ++it) {
            channels.push_back(options_.channel_prefix + *it);
            bytes += channels.back().size();
            cursor_ = *it;
        }
        if (it == topics_.end()) {
            resubscribing_ = false;
            cursor_.reset();
        }
        if (!channels.empty()) queue_subscriber_command("SUBSCRIBE", channels);
        if (!resubscribing_) {
            confirm_target_ = sent_channels_;
            check_subscribed();
        }
    }

    void queue_subscriber_command(std::string_view verb, const std::vector<std::string>& channels) {
        std::vector<std::string_view> args{verb};
        args.insert(args.end(), channels.begin(), channels.end());
        detail::resp_command cmd(args);
        subscriber_bytes_.fetch_add(cmd.size(), std::memory_order_relaxed);
        sent_channels_ += channels.size();
        subscriber_.queue(std::move(cmd));
    }

    // Batches are sent one at a time, so only churn can fill the subscribing connection.
    void check_subscriber_output() {
        if (subscriber_bytes_.load(std::memory_order_relaxed) <= options_.subscribe_output_limit) return;
        // Redis reads slower than the set changes: a new connection sends only the set.
        subscriber_.fail(error_code(make_error_code(std::errc::no_buffer_space)));
    }

    void check_subscribed() {
        if (!subscriber_.up() || resubscribing_ || subscribed_ || confirmed_ < confirm_target_) return;
        subscribed_ = true;
        update_connected();
        if (lost_at_) {
            auto gap = clock::now() - *lost_at_;
            lost_at_.reset();
            gaps_.fetch_add(1, std::memory_order_relaxed);
            if (options_.log.enabled(log_level::warning))
                log(log_level::warning,
                    "subscriptions back after " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(gap).count()) +
                        " ms: what other processes published meanwhile may be lost");
            gap_nanoseconds_.fetch_add(static_cast<std::int64_t>(std::chrono::nanoseconds(gap).count()),
                                       std::memory_order_relaxed);
            if (options_.on_gap) {
                try {
                    options_.on_gap(gap);
                } catch (...) {
                }
            }
        }
    }

    void queue_publish(detail::resp_command cmd) {
        if (stopped_) {
            release(cmd.size());
            return;
        }
        published_.fetch_add(1, std::memory_order_relaxed);
        publisher_.queue(std::move(cmd));
    }

    void shut_down() {
        if (stopped_) return;
        stopped_ = true;
        subscriber_.stop();
        publisher_.stop();
        publisher_.clear_queue();
        connected_.store(false, std::memory_order_relaxed);
    }

    void update_connected() {
        bool up = !stopped_ && subscribed_ && publisher_.up();
        bool was = connected_.exchange(up, std::memory_order_relaxed);
        if (up == was || stopped_) return;
        if (up && options_.log.enabled(log_level::info))
            log(log_level::info, "connected to Redis: " + std::to_string(topics_.size()) + " topics subscribed");
        else if (!up && options_.log.enabled(log_level::warning))
            log(log_level::warning, "lost Redis: publishes wait in the queue, other processes' messages do not arrive");
    }

    // On the executor: a record to redis_options::log's sink, within the rate limit.
    void log(log_level l, const std::string& message) noexcept {
        log_record r;
        if (!limiter_.admit(log_category::backplane, clock::now(), r.suppressed)) return;
        r.level = l;
        r.category = log_category::backplane;
        r.message = message;
        try {
            options_.log.sink(r);
        } catch (...) {
        }
    }

    void report(error_code ec) {
        if (!ec || stopped_ || !options_.on_error) return;
        try {
            options_.on_error(ec);
        } catch (...) {
        }
    }

    // --- any thread ---

    // Takes `n` bytes of the publish queue's allowance, or returns false if they do not fit.
    bool reserve(std::size_t n) noexcept {
        std::size_t now = queued_.load(std::memory_order_relaxed);
        do {
            if (n > options_.publish_queue_limit || now > options_.publish_queue_limit - n) return false;
        } while (!queued_.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
        return true;
    }

    void release(std::size_t n) noexcept { queued_.fetch_sub(n, std::memory_order_relaxed); }

    static error_code make(error e) { return error_code(make_error_code(e)); }
    static error_code make(redis_error e) { return error_code(make_error_code(e)); }

    static bool is_string(const redisReply& r) noexcept { return r.type == REDIS_REPLY_STRING; }

    const redis_options options_;
    executor_type strand_;
    const detail::node_id node_;

    // The links count their unsent bytes here (the subscriber's is atomic only because the
    // links' counters are: it belongs to the strand).
    std::atomic<std::size_t> subscriber_bytes_{0}; // unsent (UN)SUBSCRIBE bytes
    std::atomic<std::size_t> queued_{0};           // reserved, queued and unsent PUBLISH bytes

    // Everything below but the atomics belongs to the strand.
    detail::redis_link subscriber_;
    detail::redis_link publisher_;
    bool started_ = false;
    bool stopped_ = false;
    sink sink_;
    std::set<std::string, std::less<>> topics_;
    // A new subscribing connection sends the set in batches; topics up to the cursor are sent.
    bool resubscribing_ = false;
    std::optional<std::string> cursor_;
    std::uint64_t sent_channels_ = 0;  // channels named in (UN)SUBSCRIBEs on this connection
    std::uint64_t confirmed_ = 0;      // their confirmations so far
    std::uint64_t confirm_target_ = 0; // confirmations that complete the resubscription
    bool subscribed_ = false;          // the subscribing connection's set is confirmed
    std::optional<clock::time_point> lost_at_;

    std::atomic<bool> connected_{false};
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> malformed_{0};
    std::atomic<std::uint64_t> published_{0};
    std::atomic<std::uint64_t> received_{0};
    std::atomic<std::uint64_t> failures_{0};
    std::atomic<std::uint64_t> gaps_{0};
    std::atomic<std::int64_t> gap_nanoseconds_{0};
    detail::log_limiter limiter_; // on the executor
};

} // namespace corows
