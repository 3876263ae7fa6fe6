// SPDX-License-Identifier: BSL-1.0
// read_or_closed(): one read_message() whose end of the connection is error::closed, for tests
// that wait for "any end" and then judge the code.
#pragma once

#include <corows/error.hpp>
#include <corows/message.hpp>

#include "test_asio.hpp"

#include <tuple>

namespace corows::test {

/// Reads the next message into `m`; error::closed once the connection closed, else the
/// read's error (what the deprecated read_message(m, ec) reported).
template <class Websocket>
asio::awaitable<error_code> read_or_closed(Websocket& ws, message& m) {
    auto [ec, more] = co_await ws.read_message(m, use_tuple);
    if (!ec && !more) ec = error::closed;
    co_return ec;
}

} // namespace corows::test
