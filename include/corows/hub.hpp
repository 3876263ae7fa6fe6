// SPDX-License-Identifier: BSL-1.0
// corows::basic_hub<Stream>: topics across the threads of a process (and, with a backplane,
// across processes). Subscribers are connections; a message published on a topic reaches each
// of its subscribers on that subscriber's own thread, framed once for all of them.
#pragma once

#include <corows/asio.hpp>
#include <corows/backplane.hpp>
#include <corows/connection_handle.hpp>
#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/metrics.hpp>
#include <corows/prepared_message.hpp>
#include <corows/websocket.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace corows {

/// What a topic does with a subscriber whose write queue is full (options::write_queue_limit)
/// when a message for it arrives.
enum class slow_consumer : std::uint8_t {
    close,           ///< close it with 1008 (policy violation), "too slow": it never sees a gap
    drop,            ///< skip the message for it; it stays subscribed
    drop_and_notify, ///< skip the message and call hub options' on_drop
};
static_assert(static_cast<std::size_t>(slow_consumer::drop_and_notify) + 1 == slow_consumer_policies);

/// Settings of a hub.
template <class Stream>
struct basic_hub_options {
    /// The settings below (declared for g++ 12's sake, as options' are).
    basic_hub_options() = default;

    /// The slow-consumer policy of topics that set_policy() did not name.
    slow_consumer policy = slow_consumer::close;
    /// slow_consumer::drop_and_notify: called on the subscriber's thread with its handle and
    /// the topic whose message it missed. An exception from it propagates to the thread's
    /// run() (a server reports it to on_error) after the delivery to the others finished.
    std::function<void(const basic_connection_handle<Stream>&, std::string_view topic)> on_drop;
    /// Another process's half of the topics (corows/redis_backplane.hpp); null: this process only.
    std::shared_ptr<corows::backplane> backplane;
};

/// Topics for the connections of a process. subscribe() and unsubscribe() run on the
/// subscriber's thread; publish() runs on any thread. A subscriber receives each message on
/// its own executor, in publish order per publishing thread; its closing unsubscribes it.
/// Each message is framed once, and compressed at most once per window size for all the
/// subscribers that take it without context takeover (see prepared_message).
///
/// Connections are grouped by executor: those of a corows::server share one group per thread.
/// A connection on a strand of its own makes a group of its own (correct, but each publish
/// then posts once per such connection).
///
/// The hub must outlive the calls made on it; deliveries in flight when it is destroyed still
/// arrive.
template <class Stream>
class basic_hub {
    using local_connection = basic_local_connection<Stream>;

public:
    /// The connection type subscribers are.
    using websocket_type = websocket<Stream>;
    /// The old name of websocket_type.
    using connection_type [[deprecated("use websocket_type")]] = websocket_type;
    /// The hub's settings.
    using options_type = basic_hub_options<Stream>;

    /// A hub with `o`; with a backplane, it attaches itself to it.
    explicit basic_hub(options_type o = {}) : core_(std::make_shared<core>(std::move(o))) {
        core_->self = core_;
        if (auto& b = core_->opts.backplane) {
            b->attach([w = std::weak_ptr<core>(core_)](std::string_view topic, std::span<const std::uint8_t> payload,
                                                        message_kind kind) {
                auto c = w.lock();
                if (c && c->has_topic(topic)) c->deliver_local(topic, prepared_message::make(payload, kind));
            });
        }
    }
    basic_hub(const basic_hub&) = delete;
    basic_hub& operator=(const basic_hub&) = delete;
    /// Detaches from the backplane; subscribers are left as they are.
    ~basic_hub() {
        if (auto& b = core_->opts.backplane) b->attach({});
    }

    /// Subscribes the open connection `ws` to `topic`; on `ws`'s thread. False if it was
    /// subscribed already or is not open.
    bool subscribe(websocket_type& ws, std::string_view topic) { return core_->subscribe(ws.local(), topic); }
    /// Unsubscribes `ws` from `topic`; on `ws`'s thread. False if it was not subscribed.
    bool unsubscribe(websocket_type& ws, std::string_view topic) { return core_->unsubscribe(ws.local(), topic); }
    /// Unsubscribes `ws` from every topic; on `ws`'s thread. Returns how many it left.
    std::size_t unsubscribe_all(websocket_type& ws) { return core_->unsubscribe_all(ws.local()); }

    /// Publishes `pm` on `topic` to this process's subscribers and, with a backplane, to the
    /// other processes'. Any thread.
    void publish(std::string_view topic, std::shared_ptr<const prepared_message> pm) {
        core_->publishes.fetch_add(1, std::memory_order_relaxed);
        core_->deliver_local(topic, pm);
        if (auto& b = core_->opts.backplane) b->publish(topic, pm->payload(), pm->kind());
    }
    /// Publishes one `kind` message with `payload` (copied), as publish(topic, pm). Any thread.
    void publish(std::string_view topic, std::span<const std::uint8_t> payload, message_kind kind) {
        core_->publishes.fetch_add(1, std::memory_order_relaxed);
        // Framed only for a topic held here; the backplane copies the payload its own way.
        if (core_->has_topic(topic)) core_->deliver_local(topic, prepared_message::make(payload, kind));
        if (auto& b = core_->opts.backplane) b->publish(topic, payload, kind);
    }
    /// Publishes the text `text` (UTF-8), as publish(topic, pm). Any thread.
    void publish_text(std::string_view topic, std::string_view text) { publish(topic, as_bytes(text), message_kind::text); }
    /// Publishes `m` with its own kind (a relay), as publish(topic, pm). Any thread.
    void publish(std::string_view topic, const message& m) { publish(topic, m.data(), m.kind()); }

    /// Sets what `topic` does with slow consumers from the next publish on. Any thread.
    void set_policy(std::string_view topic, slow_consumer p) { core_->set_policy(topic, p); }
    /// Topics that have a subscriber in this process. Any thread.
    std::size_t topics() const {
        std::lock_guard<std::mutex> lock(core_->mutex);
        return core_->topics.size();
    }
    /// What the hub did in this process: topics and subscriptions now, publishes, deliveries
    /// and slow consumers by policy since it was made (write_prometheus() formats it). Any thread.
    hub_metrics metrics() const {
        hub_metrics m;
        m.publishes = core_->publishes.load(std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(core_->mutex);
        m.topics = core_->topics.size();
        std::uint64_t subscribed = 0, unsubscribed = 0;
        for (const auto& g : core_->groups) {
            // Removals before additions: a subscription made and left meanwhile counts, at most.
            unsubscribed += g->counts.unsubscribed.get();
            subscribed += g->counts.subscribed.get();
            m.deliveries += g->counts.deliveries.get();
            for (std::size_t i = 0; i < slow_consumer_policies; ++i)
                m.slow_consumers[i] += g->counts.slow_consumers[i].get();
        }
        m.subscriptions = subscribed > unsubscribed ? subscribed - unsubscribed : 0;
        return m;
    }

private:
    struct string_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    template <class T>
    using by_name = std::unordered_map<std::string, T, string_hash, std::equal_to<>>;

    struct group;

    // A topic with subscribers in this process: which groups have some. Touched under the
    // hub's mutex only.
    struct topic_state {
        explicit topic_state(std::string_view n) : name(n) {}
        std::string name;
        mutable std::vector<group*> groups; // the hub's mutex guards it, not constness
    };

    // One subscription in a group's list; `p` (the connection's id()) keys it, `w` sends to it.
    struct member {
        const void* p = nullptr;
        basic_connection_ref<Stream> w;
    };
    // A topic's subscribers in one group. `delivering` defers removals (they leave holes) so
    // that a delivery's loop never sees its list move.
    struct member_list {
        std::vector<member> list;
        std::size_t holes = 0;
        int delivering = 0;
    };
    // One subscription as its connection knows it: the topic and the place in its list.
    struct subscription {
        std::shared_ptr<topic_state> topic;
        std::size_t index;
    };

    // The connections of one executor and their subscriptions, touched only on that executor.
    struct group {
        explicit group(asio::any_io_executor e) : ex(std::move(e)) {}
        asio::any_io_executor ex;
        /// This group's counts: written on `ex` only, read by metrics() from any thread.
        struct counters {
            detail::single_writer_count deliveries;   ///< messages queued to members
            detail::single_writer_count subscribed;   ///< subscriptions made
            detail::single_writer_count unsubscribed; ///< subscriptions ended
            /// members found with a full queue, by the topic's policy
            std::array<detail::single_writer_count, slow_consumer_policies> slow_consumers;
        } counts;
        std::unordered_map<const topic_state*, member_list> topics;
        // Kept while the connection lives, so its close listener is installed once.
        std::unordered_map<const void*, std::vector<subscription>> connections;
    };

    struct core {
        explicit core(options_type o) : opts(std::move(o)) {}

        options_type opts;
        std::atomic<std::uint64_t> publishes{0}; // from any thread
        mutable std::mutex mutex; // guards what follows
        by_name<std::shared_ptr<topic_state>> topics;
        by_name<slow_consumer> policies;
        std::vector<std::unique_ptr<group>> groups;

        bool has_topic(std::string_view name) const {
            std::lock_guard<std::mutex> lock(mutex);
            return topics.find(name) != topics.end();
        }

        void set_policy(std::string_view name, slow_consumer p) {
            std::lock_guard<std::mutex> lock(mutex);
            auto it = policies.find(name);
            if (it == policies.end()) policies.emplace(std::string(name), p);
            else it->second = p;
        }
        slow_consumer policy_of(std::string_view name) const {
            auto it = policies.find(name);
            return it == policies.end() ? opts.policy : it->second;
        }

        // Under the mutex: the group of `ex`, made on first use.
        group& group_of(const asio::any_io_executor& ex) {
            for (auto& g : groups)
                if (g->ex == ex) return *g;
            return *groups.emplace_back(std::make_unique<group>(ex));
        }

        // Posts `pm` to every group with subscribers of `name`.
        void deliver_local(std::string_view name, const std::shared_ptr<const prepared_message>& pm) {
            std::lock_guard<std::mutex> lock(mutex);
            auto it = topics.find(name);
            if (it == topics.end()) return;
            auto& t = it->second;
            slow_consumer policy = policy_of(name);
            for (group* g : t->groups) {
                asio::post(g->ex, [c = self.lock(), g, t, pm, policy] { c->deliver(*g, *t, pm, policy); });
            }
        }

        // On g's executor: `pm` to each of `t`'s subscribers there.
        void deliver(group& g, const topic_state& t, const std::shared_ptr<const prepared_message>& pm,
                     slow_consumer policy) {
            auto it = g.topics.find(&t);
            if (it == g.topics.end()) return;
            member_list& ml = it->second; // a reference stays valid while the map grows
            struct delivering_guard {
                core& c;
                group& g;
                const topic_state& t;
                member_list& ml;
                ~delivering_guard() {
                    if (--ml.delivering == 0 && ml.holes) c.compact(g, t, ml);
                }
            } guard{*this, g, t, ml};
            ++ml.delivering;
            for (std::size_t i = 0; i < ml.list.size(); ++i) {
                auto s = ml.list[i].w.lock();
                if (!s) continue;
                if (s.send(pm)) {
                    g.counts.deliveries.add();
                    continue;
                }
                if (s.sending_ended()) continue;
                g.counts.slow_consumers[static_cast<std::size_t>(policy)].add();
                switch (policy) {
                case slow_consumer::close:
                    s.close_slow_consumer();
                    break;
                case slow_consumer::drop:
                    break;
                case slow_consumer::drop_and_notify:
                    if (opts.on_drop) opts.on_drop(s.handle(), t.name);
                    break;
                }
            }
        }

        bool subscribe(const local_connection& s, std::string_view name) {
            if (!s || !s.is_open()) return false;
            group* g;
            {
                std::lock_guard<std::mutex> lock(mutex);
                g = &group_of(s.get_executor());
            }
            auto [conn, first] = g->connections.try_emplace(s.id());
            for (auto& sub : conn->second)
                if (sub.topic->name == name) return false;
            if (first) listen_for_close(*g, s);
            std::shared_ptr<topic_state> t;
            {
                std::lock_guard<std::mutex> lock(mutex);
                auto it = topics.find(name);
                bool created = it == topics.end();
                if (created) it = topics.emplace(std::string(name), std::make_shared<topic_state>(name)).first;
                t = it->second;
                if (std::find(t->groups.begin(), t->groups.end(), g) == t->groups.end()) t->groups.push_back(g);
                if (created && opts.backplane) opts.backplane->subscribe(std::string(name));
            }
            member_list& ml = g->topics[t.get()];
            ml.list.push_back(member{s.id(), s.ref()});
            g->counts.subscribed.add();
            conn->second.push_back(subscription{std::move(t), ml.list.size() - 1});
            return true;
        }

        // The connection's subscriptions go with its transport (or with it, if it never closed).
        void listen_for_close(group& g, const local_connection& s) {
            s.on_gone([w = self, g = &g, p = s.id()] {
                if (auto c = w.lock()) {
                    try {
                        c->forget(*g, p);
                    } catch (...) {
                        // Out of memory while unsubscribing: the entries stay until the hub goes.
                    }
                }
            });
        }

        // On g's executor: `p` is gone; every subscription of it goes too.
        void forget(group& g, const void* p) {
            auto it = g.connections.find(p);
            if (it == g.connections.end()) return;
            auto subs = std::move(it->second);
            g.connections.erase(it);
            for (auto& sub : subs) remove_member(g, *sub.topic, sub.index);
        }

        group* group_for(const local_connection& s) {
            auto ex = s.get_executor();
            std::lock_guard<std::mutex> lock(mutex);
            for (auto& g : groups)
                if (g->ex == ex) return g.get();
            return nullptr;
        }

        bool unsubscribe(const local_connection& s, std::string_view name) {
            group* g = s ? group_for(s) : nullptr;
            if (!g) return false;
            auto it = g->connections.find(s.id());
            if (it == g->connections.end()) return false;
            auto& subs = it->second;
            for (std::size_t i = 0; i < subs.size(); ++i) {
                if (subs[i].topic->name != name) continue;
                auto sub = std::move(subs[i]);
                subs.erase(subs.begin() + static_cast<std::ptrdiff_t>(i));
                remove_member(*g, *sub.topic, sub.index);
                return true;
            }
            return false;
        }

        std::size_t unsubscribe_all(const local_connection& s) {
            group* g = s ? group_for(s) : nullptr;
            if (!g) return 0;
            auto it = g->connections.find(s.id());
            if (it == g->connections.end()) return 0;
            auto subs = std::move(it->second);
            it->second.clear();
            for (auto& sub : subs) remove_member(*g, *sub.topic, sub.index);
            return subs.size();
        }

        // Takes the member at `index` out of t's list in g. Without a delivery under way the
        // last member moves into its place (its connection's record learns the new index);
        // during one it leaves a hole for compact().
        void remove_member(group& g, const topic_state& t, std::size_t index) {
            auto it = g.topics.find(&t);
            if (it == g.topics.end()) return;
            g.counts.unsubscribed.add();
            member_list& ml = it->second;
            if (ml.delivering) {
                ml.list[index] = member{};
                ++ml.holes;
                return;
            }
            if (index + 1 != ml.list.size()) {
                ml.list[index] = std::move(ml.list.back());
                moved(g, t, ml.list[index].p, index);
            }
            ml.list.pop_back();
            if (ml.list.empty()) drop_topic(g, it);
        }

        // The member of `p` in t's list is now at `index`. (A connection has one member per
        // topic, so the one that moves is never the one leaving.)
        void moved(group& g, const topic_state& t, const void* p, std::size_t index) {
            auto it = g.connections.find(p);
            if (it == g.connections.end()) return;
            for (auto& sub : it->second)
                if (sub.topic.get() == &t) sub.index = index;
        }

        // After a delivery that saw removals: closes the holes, keeping the order.
        void compact(group& g, const topic_state& t, member_list& ml) {
            std::size_t kept = 0;
            for (std::size_t i = 0; i < ml.list.size(); ++i) {
                if (!ml.list[i].p) continue;
                if (kept != i) {
                    ml.list[kept] = std::move(ml.list[i]);
                    moved(g, t, ml.list[kept].p, kept);
                }
                ++kept;
            }
            ml.list.resize(kept);
            ml.holes = 0;
            if (kept == 0) drop_topic(g, g.topics.find(&t));
        }

        // t's last subscriber in g left: g leaves t, and t goes once no group has it.
        void drop_topic(group& g, typename std::unordered_map<const topic_state*, member_list>::iterator it) {
            const topic_state* t = it->first;
            g.topics.erase(it);
            std::lock_guard<std::mutex> lock(mutex);
            auto& gs = t->groups;
            gs.erase(std::remove(gs.begin(), gs.end(), &g), gs.end());
            if (!gs.empty()) return;
            auto found = topics.find(t->name);
            if (found == topics.end() || found->second.get() != t) return;
            if (opts.backplane) opts.backplane->unsubscribe(t->name);
            topics.erase(found);
        }

        std::weak_ptr<core> self; // this, for what is posted and what listens
    };

    std::shared_ptr<core> core_;
};

/// The hub of plain-TCP connections.
using hub = basic_hub<asio::ip::tcp::socket>;
/// Its settings.
using hub_options = basic_hub_options<asio::ip::tcp::socket>;

} // namespace corows
