// SPDX-License-Identifier: BSL-1.0
// corows::detail::deadline_service: the one timer per execution context behind every
// connection's deadline.
#include <corows/asio.hpp>
#include <corows/detail/deadline_service.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

using corows::detail::deadline_entry;
using deadlines = corows::detail::deadline_service;
using clock_type = deadline_entry::clock;
using namespace std::chrono_literals;

/// An owner as a connection would be: its entry inside, and what its deadline did.
struct owner {
    deadline_entry entry;
    int id = 0;
    std::vector<int>* log = nullptr;
    clock_type::time_point fired_at{};
    std::atomic<int> fired{0};

    static void fire(std::shared_ptr<void> p) {
        auto* o = static_cast<owner*>(p.get());
        o->fired_at = clock_type::now();
        ++o->fired;
        if (o->log) o->log->push_back(o->id);
    }
};

std::shared_ptr<owner> make_owner(int id, std::vector<int>* log = nullptr) {
    auto o = std::make_shared<owner>();
    o->id = id;
    o->log = log;
    return o;
}

void schedule(asio::io_context& ctx, deadline_entry& e, const std::shared_ptr<owner>& self, clock_type::time_point at) {
    deadlines::of(ctx.get_executor()).schedule(e, at, self, &owner::fire, ctx.get_executor());
}

} // namespace

BOOST_AUTO_TEST_SUITE(deadline_service)

BOOST_AUTO_TEST_CASE(entries_fire_in_deadline_order_and_never_early) {
    asio::io_context ctx;
    std::vector<int> log;
    const auto start = clock_type::now();
    const int offsets_ms[] = {120, 40, 200, 80, 10, 160};
    std::vector<std::shared_ptr<owner>> owners;
    for (int i = 0; i < 6; ++i) {
        owners.push_back(make_owner(offsets_ms[i], &log));
        schedule(ctx, owners.back()->entry, owners.back(), start + std::chrono::milliseconds(offsets_ms[i]));
    }
    // A later time leaves an entry where it is; a nearer one moves it.
    schedule(ctx, owners[0]->entry, owners[0], start + 500ms); // stays at 120
    owners[2]->id = 5;
    schedule(ctx, owners[2]->entry, owners[2], start + 5ms); // 200 -> 5
    ctx.run();
    BOOST_TEST(log == (std::vector<int>{5, 10, 40, 80, 120, 160}), boost::test_tools::per_element());
    for (auto& o : owners) {
        BOOST_TEST(o->fired == 1);
        BOOST_TEST(o->entry.index == deadline_entry::unqueued);
    }
    BOOST_TEST((owners[0]->fired_at - start >= 120ms));
    BOOST_TEST((owners[1]->fired_at - start >= 40ms));
    BOOST_TEST((owners[2]->fired_at - start >= 5ms));
    BOOST_TEST((owners[2]->fired_at - start < 120ms));
    BOOST_TEST(deadlines::of(ctx.get_executor()).queued() == 0u);
}

BOOST_AUTO_TEST_CASE(a_nearer_deadline_rearms_the_timer_that_waits_for_a_far_one) {
    // Not `near` and `far`: <windows.h>, which Asio includes on Windows, defines both as macros.
    asio::io_context ctx;
    auto distant = make_owner(1);
    auto nearer = make_owner(2);
    const auto start = clock_type::now();
    schedule(ctx, distant->entry, distant, start + 60s);
    asio::steady_timer later(ctx, start + 50ms);
    later.async_wait([&](corows::error_code) { schedule(ctx, nearer->entry, nearer, start + 100ms); });
    ctx.run_for(2s);
    BOOST_TEST(nearer->fired == 1);
    BOOST_TEST((nearer->fired_at - start >= 100ms));
    BOOST_TEST(distant->fired == 0);
    deadlines::of(ctx.get_executor()).cancel(distant->entry);
}

BOOST_AUTO_TEST_CASE(cancelled_entries_do_not_fire_and_run_returns_with_the_last_gone) {
    asio::io_context ctx;
    std::vector<std::shared_ptr<owner>> owners;
    const auto start = clock_type::now();
    for (int i = 0; i < 100; ++i) {
        owners.push_back(make_owner(i));
        schedule(ctx, owners.back()->entry, owners.back(), start + 30s + std::chrono::milliseconds(i));
    }
    auto& service = deadlines::of(ctx.get_executor());
    BOOST_TEST(service.queued() == 100u);
    // From the middle, the top and the end of the heap.
    for (int i : {50, 0, 99, 1, 98})
        service.cancel(owners[static_cast<std::size_t>(i)]->entry);
    BOOST_TEST(service.queued() == 95u);
    service.cancel(owners[50]->entry); // twice is harmless
    BOOST_TEST(service.queued() == 95u);
    asio::post(ctx, [&] {
        for (auto& o : owners) service.cancel(o->entry);
    });
    // Pending deadlines hold run() like any pending wait; once none is left it returns at
    // once, not when the timer would have expired.
    const auto before = clock_type::now();
    ctx.run();
    BOOST_TEST((clock_type::now() - before < 10s));
    for (auto& o : owners) BOOST_TEST(o->fired == 0);
}

BOOST_AUTO_TEST_CASE(an_owner_gone_before_its_deadline_is_skipped) {
    asio::io_context ctx;
    auto stays = make_owner(1);
    deadline_entry orphan; // its owner dies while it is queued
    {
        auto goes = make_owner(2);
        deadlines::of(ctx.get_executor())
            .schedule(orphan, clock_type::now() + 20ms, goes, &owner::fire, ctx.get_executor());
    }
    schedule(ctx, stays->entry, stays, clock_type::now() + 30ms);
    ctx.run();
    BOOST_TEST(stays->fired == 1);
    BOOST_TEST(orphan.index == deadline_entry::unqueued);
}

BOOST_AUTO_TEST_CASE(a_context_destroyed_with_entries_queued_leaves_them_unqueued) {
    auto o = make_owner(1);
    {
        asio::io_context ctx;
        schedule(ctx, o->entry, o, clock_type::now() + 60s);
        BOOST_TEST(o->entry.index == 0u);
    }
    BOOST_TEST(o->entry.index == deadline_entry::unqueued);
    BOOST_TEST(o->fired == 0);
}

// Connections on several threads of one context schedule and cancel at once (run under
// ThreadSanitizer in tools/check's build-tsan).
BOOST_AUTO_TEST_CASE(threads_of_one_context_share_it) {
    asio::io_context ctx;
    auto work = asio::make_work_guard(ctx);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back([&] { ctx.run(); });
    constexpr int n = 400;
    std::vector<std::shared_ptr<owner>> owners;
    for (int i = 0; i < n; ++i) owners.push_back(make_owner(i));
    std::atomic<int> posted{0};
    for (int i = 0; i < n; ++i)
        asio::post(ctx, [&, i] {
            auto& o = owners[static_cast<std::size_t>(i)];
            const bool cancelled = i % 4 == 0; // far enough not to fire before its cancel
            schedule(ctx, o->entry, o, clock_type::now() + (cancelled ? 10s : std::chrono::milliseconds(i % 40)));
            if (cancelled) deadlines::of(ctx.get_executor()).cancel(o->entry);
            ++posted;
        });
    const auto limit = clock_type::now() + 20s;
    auto fired = [&] {
        int f = 0;
        for (auto& o : owners) f += o->fired;
        return f;
    };
    while ((posted < n || fired() < n - n / 4) && clock_type::now() < limit) std::this_thread::sleep_for(5ms);
    work.reset();
    for (auto& t : threads) t.join();
    for (int i = 0; i < n; ++i) BOOST_TEST(owners[static_cast<std::size_t>(i)]->fired == (i % 4 == 0 ? 0 : 1));
}

BOOST_AUTO_TEST_SUITE_END()
