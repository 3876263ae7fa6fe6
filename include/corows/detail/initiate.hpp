// SPDX-License-Identifier: BSL-1.0
// Completion tokens for websocket<Stream>'s and connect()'s operations: use_awaitable (the
// default) returns the operation's own coroutine, as_tuple(use_awaitable) that coroutine
// wrapped in one that catches; any other token runs it with co_spawn and reports what it
// throws as an error_code.
#pragma once

#include <corows/asio.hpp>

#include <exception>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

namespace corows::detail {

/// The completion signature of an operation whose coroutine returns T.
template <class T>
struct signature_of {
    using type = void(error_code, T);
};
template <>
struct signature_of<void> {
    using type = void(error_code);
};
template <class T>
using signature_of_t = typename signature_of<T>::type;

/// The value type of an awaitable.
template <class A>
using awaited_t = typename A::value_type;

/// The token an operation takes when given none.
using default_token = asio::use_awaitable_t<>;

/// An operation's result as the generic path reports it: the error, then the value.
template <class T>
struct outcome {
    error_code ec;
    T value{};
};
template <>
struct outcome<void> {
    error_code ec;
};

/// Runs `op` and catches the system_error it throws into an outcome. Other exceptions
/// (std::bad_alloc) propagate, as they would out of a completion handler.
template <class T>
asio::awaitable<outcome<T>> catch_error(asio::awaitable<T> op) {
    outcome<T> r;
    try {
        if constexpr (std::is_void_v<T>) co_await std::move(op);
        else r.value = co_await std::move(op);
    } catch (const system_error& e) {
        r.ec = e.code();
    }
    co_return r;
}

/// as_tuple(use_awaitable)'s type.
using tuple_token = as_tuple_t<default_token>;

/// Awaits `op` and gives its error and value as a tuple, as as_tuple(use_awaitable) does.
template <class T>
asio::awaitable<std::tuple<error_code, T>> tuple_of(asio::awaitable<T> op) {
    try {
        co_return std::tuple<error_code, T>(error_code{}, co_await std::move(op));
    } catch (const system_error& e) {
        co_return std::tuple<error_code, T>(e.code(), T{});
    }
}

/// tuple_of() for an operation without a value.
inline asio::awaitable<std::tuple<error_code>> tuple_of(asio::awaitable<void> op) {
    try {
        co_await std::move(op);
    } catch (const system_error& e) {
        co_return std::tuple<error_code>(e.code());
    }
    co_return std::tuple<error_code>(error_code{});
}

/// Starts the coroutine that `make()` returns for `token`: use_awaitable gets that coroutine
/// itself (no extra frame, no co_spawn); any other token gets it run on `ex`, its handler
/// called on the handler's associated executor with (error_code[, value]). `make` owns the
/// operation's arguments, so a deferred token may launch it later.
template <class Token, class Executor, class Make>
auto launch(const Executor& ex, Token&& token, Make make) {
    using awaitable_type = std::invoke_result_t<Make&>;
    using value_type = awaited_t<awaitable_type>;
    if constexpr (std::is_same_v<std::decay_t<Token>, default_token>) {
        return make();
    } else if constexpr (std::is_same_v<std::decay_t<Token>, tuple_token>) {
        // Awaited in the caller's coroutine like use_awaitable, one frame more: no co_spawn,
        // so an echo loop keeps its batching.
        return tuple_of(make());
    } else {
        return asio::async_initiate<Token, signature_of_t<value_type>>(
            [](auto handler, Executor run_on, Make op) {
                auto handler_ex = asio::get_associated_executor(handler, run_on);
                auto slot = asio::get_associated_cancellation_slot(handler);
                auto done = [h = std::move(handler)](std::exception_ptr e, outcome<value_type> r) mutable {
                    if (e) std::rethrow_exception(e);
                    if constexpr (std::is_void_v<value_type>) std::move(h)(r.ec);
                    else std::move(h)(r.ec, std::move(r.value));
                };
                asio::co_spawn(run_on, catch_error<value_type>(op()),
                               asio::bind_cancellation_slot(slot, asio::bind_executor(handler_ex, std::move(done))));
            },
            token, ex, std::move(make));
    }
}

} // namespace corows::detail

namespace corows {

/// The completion token as_tuple(use_awaitable), spelt the same on every Asio corows runs on
/// (Asio 1.22 has as_tuple only as experimental): the operation never throws, and co_await
/// gives (error_code[, value]), e.g. `auto [ec, more] = co_await ws.read_message(m, corows::use_tuple);`.
inline constexpr detail::tuple_token use_tuple{};

} // namespace corows
