// SPDX-License-Identifier: BSL-1.0
// Waiting for a readable stream inside an asio::awaitable coroutine, for what an idle
// connection holds while it waits. `co_await stream.async_wait(..., use_awaitable)` costs a
// coroutine frame for the operation (about 200 bytes) and an operation that tracks work on
// two executors; this wait suspends the awaiting coroutine itself and resumes it from a
// completion handler that holds only the coroutine's thread, the error slot and the
// cancellation slot. It uses Asio's awaitable internals (the hook through which use_awaitable
// starts operations), which are the same in standalone Asio 1.22 and Boost.Asio 1.81.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/transport.hpp>

#include <utility>

namespace corows::detail {

/// Resumes the coroutine of value type T whose thread it took; a completion handler.
template <class Executor, class T>
class readable_resumer : public asio::detail::awaitable_handler_base<Executor, T> {
public:
    readable_resumer(asio::detail::awaitable_thread<Executor>* thread, error_code* ec)
        : asio::detail::awaitable_handler_base<Executor, T>(thread), ec_(ec) {}

    void operator()(error_code ec) {
        // A wait whose coroutine was cancelled may complete anyway: an I/O completion port
        // cannot take back a zero-byte receive that has finished, and a reactor may have
        // queued the completion already. It ends cancelled, before anything is read: bytes
        // decoded now could complete a message in an operation whose result is dropped.
        if (!ec && this->get_cancellation_state().cancelled() != asio::cancellation_type::none)
            ec = asio::error::operation_aborted;
        *ec_ = ec;
        this->frame()->attach_thread(this);
        this->frame()->clear_cancellation_slot();
        this->pump();
    }

private:
    error_code* ec_;
};

/// A readable_resumer without an associated executor: for a coroutine that runs on the
/// stream's own executor, so the operation tracks work on that one executor only.
template <class Resumer>
struct plain_resumer {
    Resumer r;
    void operator()(error_code ec) { r(ec); }
};

/// `co_await readable<T>(stream, ec)` in an asio::awaitable<T> coroutine: returns once
/// `stream` is readable, or with the wait's error in `ec` (operation_aborted if the
/// coroutine's cancellation slot fired).
template <class T, class Stream>
struct readable {
    Stream& stream;
    error_code& ec;

    template <class Executor>
    asio::detail::awaitable_thread<Executor>* operator()(asio::detail::awaitable_frame_base<Executor>* frame) const {
        readable_resumer<Executor, T> r(frame->detach_thread(), &ec);
        auto slot = r.get_cancellation_slot();
        const bool same_executor = r.get_executor() == Executor(stream.get_executor());
        if (same_executor)
            stream.async_wait(asio::socket_base::wait_read,
                              asio::bind_cancellation_slot(
                                  slot, asio::bind_allocator(exact_allocator<void>{},
                                                             plain_resumer<readable_resumer<Executor, T>>{std::move(r)})));
        else
            stream.async_wait(asio::socket_base::wait_read,
                              asio::bind_cancellation_slot(slot, asio::bind_allocator(exact_allocator<void>{}, std::move(r))));
        return nullptr;
    }
};

} // namespace corows::detail
