// SPDX-License-Identifier: BSL-1.0
// Starting a server's connection handler as a coroutine thread of its own, for what an idle
// connection holds. asio::co_spawn's entry frame keeps the completion handler, three
// executors (the spawn's, two work guards') and the result while the handler runs: 440
// bytes per connection for its whole life. This entry frame keeps the handler's awaitable and
// one callback. It uses Asio's awaitable internals (awaitable_thread and its entry point),
// the same in standalone Asio 1.22 and Boost.Asio 1.81, as detail/readable_wait.hpp does.
#pragma once

#include <corows/asio.hpp>

#include <cstddef>
#include <exception>
#include <utility>

namespace corows::detail {

/// The bottom frame of a handler's thread: awaits the handler, then tells `done` how it ended.
template <class Executor, class Done>
asio::awaitable<asio::detail::awaitable_thread_entry_point, Executor> handler_entry(asio::awaitable<void, Executor> a,
                                                                                   Done done) {
    std::exception_ptr failure;
    try {
        co_await std::move(a);
    } catch (...) {
        failure = std::current_exception();
    }
    std::move(done)(failure);
}

/// Empties the calling thread's cache of freed Asio coroutine frames, so that the frames made
/// next get blocks of their own size, not a larger block a finished frame left behind.
inline void drop_recycled_frames() {
    using info = asio::detail::thread_info_base;
    using tag = info::awaitable_frame_tag;
    auto* thread = asio::detail::thread_context::top_of_thread_call_stack();
    if (!thread) return;
    // Asio never caches a block this large: each allocation frees one cached block to make
    // room, and the release frees the large block itself.
    constexpr std::size_t uncacheable = 8192;
    for (int i = tag::begin_mem_index; i < tag::end_mem_index; ++i)
        info::deallocate(tag(), thread, info::allocate(tag(), thread, uncacheable), uncacheable);
}

/// Runs the awaitable `make()` returns on `ex` at once, in the calling thread until it first
/// suspends (the caller must be running on `ex`), then calls `done(failure)` where it ends:
/// a null exception_ptr when it returned, else what it threw. `done` must not throw.
template <class Executor, class Make, class Done>
void launch_handler(const Executor& ex, Make make, Done done) {
    // The handler's frames live as long as its connection: they should not keep the larger
    // blocks the handshake's coroutines just freed.
    drop_recycled_frames();
    asio::awaitable<void, Executor> a = make();
    asio::detail::awaitable_thread<Executor>(handler_entry(std::move(a), std::move(done)), ex, asio::cancellation_slot(),
                                             asio::cancellation_state())
        .launch();
}

} // namespace corows::detail
