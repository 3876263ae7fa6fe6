// SPDX-License-Identifier: BSL-1.0
// corows::detail::launch_handler: a server's connection handler as a coroutine thread with a
// small entry frame, and drop_recycled_frames(), which keeps the handler's frames out of the
// larger blocks the handshake's coroutines leave behind.
#include <corows/asio.hpp>
#include <corows/detail/handler_thread.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using executor = asio::any_io_executor;

/// How a launched handler ended, seen from its done callback.
struct outcome {
    int calls = 0;
    std::string what; // the exception's message; empty when the handler returned
};

auto record(outcome& o) {
    return [&o](std::exception_ptr failure) {
        ++o.calls;
        if (!failure) return;
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            o.what = e.what();
        }
    };
}

asio::awaitable<void> wait_then(std::vector<std::string>& log, bool fail) {
    asio::steady_timer t(co_await asio::this_coro::executor, 10ms);
    log.push_back("waiting");
    co_await t.async_wait(asio::use_awaitable);
    log.push_back("woke");
    if (fail) throw std::runtime_error("handler failed");
}

/// `co_await frame_address{&p}` stores where the awaiting coroutine's frame is and goes on:
/// the thread stays attached, so Asio resumes the coroutine at once.
struct frame_address {
    const void** out;
    template <class E>
    asio::detail::awaitable_thread<E>* operator()(asio::detail::awaitable_frame_base<E>* frame) const {
        *out = frame;
        return nullptr;
    }
};

/// A coroutine whose frame holds N bytes; it stores its frame's address in `where`.
template <std::size_t N>
asio::awaitable<void> frame_of(const void** where) {
    std::array<volatile char, N> mem{};
    mem[0] = 1;
    co_await frame_address{where};
    mem[N - 1] = mem[0];
}

/// Whether a small coroutine frame made after a large one ended lands in the large one's
/// block, with or without drop_recycled_frames() between the two.
bool small_frame_lands_in_large_block(bool drop) {
    asio::io_context ctx;
    const void* large = nullptr;
    const void* small = nullptr;
    asio::post(ctx, [&] {
        // Runs to its end inside the launch: its block is in this thread's cache afterwards.
        corows::detail::launch_handler(executor(ctx.get_executor()), [&] { return frame_of<700>(&large); },
                                       [](std::exception_ptr) {});
        if (drop) corows::detail::drop_recycled_frames();
        asio::co_spawn(ctx, frame_of<16>(&small), asio::detached);
    });
    ctx.run();
    BOOST_TEST_REQUIRE(large != nullptr);
    BOOST_TEST_REQUIRE(small != nullptr);
    auto* l = static_cast<const char*>(large);
    auto* s = static_cast<const char*>(small);
    return s >= l - 64 && s < l + 700;
}

} // namespace

BOOST_AUTO_TEST_SUITE(handler_thread)

BOOST_AUTO_TEST_CASE(done_follows_a_handler_that_returns_after_waiting) {
    asio::io_context ctx;
    std::vector<std::string> log;
    outcome o;
    asio::post(ctx, [&] {
        corows::detail::launch_handler(executor(ctx.get_executor()), [&] { return wait_then(log, false); }, record(o));
        log.push_back("launched"); // the handler ran up to its wait inside launch_handler
    });
    ctx.run();
    BOOST_TEST(log == (std::vector<std::string>{"waiting", "launched", "woke"}));
    BOOST_TEST(o.calls == 1);
    BOOST_TEST(o.what.empty());
}

BOOST_AUTO_TEST_CASE(what_the_handler_throws_reaches_done) {
    asio::io_context ctx;
    std::vector<std::string> log;
    outcome o;
    asio::post(ctx, [&] {
        corows::detail::launch_handler(executor(ctx.get_executor()), [&] { return wait_then(log, true); }, record(o));
    });
    ctx.run(); // the exception goes to done, not out of run()
    BOOST_TEST(o.calls == 1);
    BOOST_TEST(o.what == "handler failed");
}

BOOST_AUTO_TEST_CASE(a_handler_that_ends_before_suspending_is_done_within_launch) {
    asio::io_context ctx;
    outcome returned, threw;
    bool checked = false;
    asio::post(ctx, [&] {
        corows::detail::launch_handler(
            executor(ctx.get_executor()), [] { return []() -> asio::awaitable<void> { co_return; }(); },
            record(returned));
        corows::detail::launch_handler(
            executor(ctx.get_executor()),
            [] {
                return []() -> asio::awaitable<void> {
                    throw std::runtime_error("at once");
                    co_return;
                }();
            },
            record(threw));
        BOOST_TEST(returned.calls == 1);
        BOOST_TEST(threw.calls == 1);
        checked = true;
    });
    ctx.run();
    BOOST_TEST(checked);
    BOOST_TEST(returned.what.empty());
    BOOST_TEST(threw.what == "at once");
}

BOOST_AUTO_TEST_CASE(a_handler_left_waiting_is_destroyed_with_its_context) {
    // The handler's frame, with what it holds, goes when the context does; done never runs.
    auto held = std::make_shared<int>(7);
    outcome o;
    {
        asio::io_context ctx;
        asio::post(ctx, [&] {
            corows::detail::launch_handler(
                executor(ctx.get_executor()),
                [&] {
                    return [](std::shared_ptr<int> keep) -> asio::awaitable<void> {
                        asio::steady_timer t(co_await asio::this_coro::executor, 1h);
                        co_await t.async_wait(asio::use_awaitable);
                        (void)keep;
                    }(held);
                },
                record(o));
        });
        ctx.run_for(20ms);
        BOOST_TEST(held.use_count() == 2);
    }
    BOOST_TEST(held.use_count() == 1);
    BOOST_TEST(o.calls == 0);
}

BOOST_AUTO_TEST_CASE(dropped_frames_are_not_recycled_into_the_next_one) {
    // Without the drop, Asio gives the small frame the large one's block: what the drop is for.
    BOOST_TEST(small_frame_lands_in_large_block(false));
    BOOST_TEST(!small_frame_lands_in_large_block(true));
}

BOOST_AUTO_TEST_SUITE_END()
