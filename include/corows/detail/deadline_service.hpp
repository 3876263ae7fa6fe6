// SPDX-License-Identifier: BSL-1.0
// One timer per execution context for every connection's deadline. A steady_timer per
// connection costs its object and a pending wait (about 320 bytes with their heap chunks) for
// as long as the connection lives, since an idle connection always has a deadline (its ping
// or idle timeout); here a connection keeps an entry of a few words in a heap that one timer
// serves.
#pragma once

#include <corows/asio.hpp>

#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace corows::detail {

/// A deadline_service's handle on one owner's deadline; lives in the owner. Its fields belong
/// to the service (under its lock) while it is queued.
struct deadline_entry {
    using clock = std::chrono::steady_clock;
    static constexpr std::size_t unqueued = std::numeric_limits<std::size_t>::max();

    std::weak_ptr<void> owner;                                   ///< what fire() gets, if alive
    void (*fire)(std::shared_ptr<void>) = nullptr;               ///< called once the time came
    clock::time_point at = clock::time_point::max();             ///< when
    std::size_t index = unqueued;                                ///< position in the heap
};

/// The execution context's deadlines: a binary heap of entries, served by one timer armed for
/// the earliest. Safe to use from several threads of one context (one mutex, taken only when a
/// deadline moves nearer or goes); each entry's fire() runs on the service's timer, outside
/// the lock, and should dispatch to its owner's executor.
class deadline_service : public asio::execution_context::service {
public:
    using clock = deadline_entry::clock;
    using key_type = deadline_service;
    inline static asio::execution_context::id id;

    explicit deadline_service(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

    /// The service of the context that `ex` runs on.
    template <class Executor>
    static deadline_service& of(const Executor& ex) {
        return asio::use_service<deadline_service>(asio::query(ex, asio::execution::context));
    }

    /// Queues `e` to fire at `at`, or moves it to `at` if that is nearer than where it is
    /// queued; a later time leaves it where it is (its owner re-checks when it fires). `ex`
    /// serves the service's timer if it has none yet.
    template <class Executor>
    void schedule(deadline_entry& e, clock::time_point at, std::weak_ptr<void> owner,
                  void (*fire)(std::shared_ptr<void>), const Executor& ex) {
        std::lock_guard lock(mutex_);
        if (shut_down_) return;
        if (e.index == deadline_entry::unqueued) {
            e.owner = std::move(owner);
            e.fire = fire;
            e.at = at;
            e.index = heap_.size();
            heap_.push_back(&e);
        } else if (at < e.at) {
            e.at = at;
        } else {
            return;
        }
        sift_up(e.index);
        if (e.index == 0 && at < timer_at_) {
            if (!timer_) timer_.emplace(ex, clock::time_point::max());
            arm(at);
        }
    }

    /// Takes `e` out of the heap if it is there. An entry must be cancelled before it dies.
    /// The last one out cancels the timer: a pending wait would keep io_context::run() from
    /// returning after the last connection ended.
    void cancel(deadline_entry& e) noexcept {
        std::lock_guard lock(mutex_);
        if (e.index == deadline_entry::unqueued) return;
        remove_at(e.index);
        e.owner.reset();
        if (heap_.empty() && timer_ && timer_at_ != clock::time_point::max()) {
            timer_at_ = clock::time_point::max();
            timer_->cancel();
        }
    }

    /// How many entries are queued (for tests).
    std::size_t queued() {
        std::lock_guard lock(mutex_);
        return heap_.size();
    }

private:
    void shutdown() override {
        std::lock_guard lock(mutex_);
        shut_down_ = true;
        for (deadline_entry* e : heap_) {
            e->index = deadline_entry::unqueued;
            e->owner.reset();
        }
        heap_.clear();
        timer_.reset();
    }

    // Called with the lock held.
    void arm(clock::time_point at) {
        timer_at_ = at;
        timer_->expires_at(at);
        timer_->async_wait([this](error_code ec) {
            if (!ec) expired();
        });
    }

    // The timer fired: every entry that is due leaves the heap, then fires outside the lock
    // (a fire may schedule again).
    void expired() {
        std::vector<std::pair<std::shared_ptr<void>, void (*)(std::shared_ptr<void>)>> due;
        {
            std::lock_guard lock(mutex_);
            timer_at_ = clock::time_point::max();
            due.swap(due_);
            const auto now = clock::now();
            while (!heap_.empty() && heap_.front()->at <= now) {
                deadline_entry& e = *heap_.front();
                remove_at(0);
                if (auto owner = e.owner.lock()) due.emplace_back(std::move(owner), e.fire);
                e.owner.reset();
            }
            if (!heap_.empty()) arm(heap_.front()->at);
        }
        for (auto& [owner, fire] : due) fire(std::move(owner));
        due.clear();
        std::lock_guard lock(mutex_);
        if (due_.capacity() < due.capacity()) due_.swap(due);
    }

    void remove_at(std::size_t i) noexcept {
        heap_[i]->index = deadline_entry::unqueued;
        deadline_entry* last = heap_.back();
        heap_.pop_back();
        if (i == heap_.size()) return;
        heap_[i] = last;
        last->index = i;
        sift_up(i);
        sift_down(last->index);
    }

    void place(std::size_t i, deadline_entry* e) noexcept {
        heap_[i] = e;
        e->index = i;
    }

    void sift_up(std::size_t i) noexcept {
        deadline_entry* e = heap_[i];
        while (i > 0) {
            const std::size_t parent = (i - 1) / 2;
            if (!(e->at < heap_[parent]->at)) break;
            place(i, heap_[parent]);
            i = parent;
        }
        place(i, e);
    }

    void sift_down(std::size_t i) noexcept {
        deadline_entry* e = heap_[i];
        const std::size_t n = heap_.size();
        for (;;) {
            std::size_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && heap_[child + 1]->at < heap_[child]->at) ++child;
            if (!(heap_[child]->at < e->at)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, e);
    }

    std::mutex mutex_;
    std::vector<deadline_entry*> heap_;
    std::vector<std::pair<std::shared_ptr<void>, void (*)(std::shared_ptr<void>)>> due_;
    std::optional<asio::steady_timer> timer_;
    clock::time_point timer_at_ = clock::time_point::max(); // what timer_ waits for
    bool shut_down_ = false;
};

} // namespace corows::detail
