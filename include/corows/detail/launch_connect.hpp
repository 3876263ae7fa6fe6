// SPDX-License-Identifier: BSL-1.0
// Starting connect() and connect_unix() for any completion token. Unlike a websocket's
// operations they have no I/O object to take an executor from: a token that brings none (a
// plain callback, use_future) needs connect_options::executor.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/initiate.hpp>

#include <stdexcept>
#include <type_traits>
#include <utility>

namespace corows::detail {

/// launch() on `preferred`, or if it is empty on the completion handler's associated
/// executor; throws std::invalid_argument when neither exists. use_awaitable and
/// as_tuple(use_awaitable) run in the awaiting coroutine, as launch() does.
template <class Token, class Make>
auto launch_connect(asio::any_io_executor preferred, Token&& token, Make make) {
    using value_type = awaited_t<std::invoke_result_t<Make&>>;
    if constexpr (std::is_same_v<std::decay_t<Token>, default_token> ||
                  std::is_same_v<std::decay_t<Token>, tuple_token>) {
        return launch(preferred, std::forward<Token>(token), std::move(make));
    } else {
        return asio::async_initiate<Token, signature_of_t<value_type>>(
            [](auto handler, asio::any_io_executor on, Make op) {
                if (!on) {
                    using associated = asio::associated_executor_t<decltype(handler), asio::any_io_executor>;
                    if constexpr (std::is_convertible_v<associated, asio::any_io_executor>)
                        on = asio::get_associated_executor(handler, asio::any_io_executor());
                }
                if (!on)
                    throw std::invalid_argument("corows: no executor to connect on: set connect_options::executor "
                                                "or bind one to the completion handler");
                launch(on, std::move(handler), std::move(op));
            },
            token, std::move(preferred), std::move(make));
    }
}

} // namespace corows::detail
