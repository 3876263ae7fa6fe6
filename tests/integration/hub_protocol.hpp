// SPDX-License-Identifier: BSL-1.0
// The small text protocol the hub and cluster tests speak to a server whose connections
// subscribe and publish through a corows::hub.
#pragma once

#include <corows/hub.hpp>

#include "test_asio.hpp"

#include <stdexcept>
#include <string>

namespace corows::test {

using hub_ws = websocket<asio::ip::tcp::socket>;

/// The tests' subscriber protocol: "join:T", "leave:T", "join-many:N" (topics t0..tN-1) and
/// "leave-all", each answered by one text message, and "say:T:TEXT", which publishes TEXT on
/// T; everything else a client receives was published.
inline asio::awaitable<void> subscriber(hub_ws& ws, corows::hub& hub) {
    corows::message m;
    while (co_await ws.read_message(m)) {
        std::string cmd(m.text());
        if (cmd.starts_with("join:")) {
            ws.send_text((hub.subscribe(ws, cmd.substr(5)) ? "joined:" : "already:") + cmd.substr(5));
        } else if (cmd.starts_with("leave:")) {
            ws.send_text((hub.unsubscribe(ws, cmd.substr(6)) ? "left:" : "not-subscribed:") + cmd.substr(6));
        } else if (cmd.starts_with("join-many:")) {
            std::size_t n = std::stoul(cmd.substr(10)), joined = 0;
            for (std::size_t i = 0; i < n; ++i) joined += hub.subscribe(ws, "t" + std::to_string(i));
            ws.send_text("joined-many:" + std::to_string(joined));
        } else if (cmd.starts_with("say:")) {
            auto colon = cmd.find(':', 4);
            hub.publish_text(cmd.substr(4, colon - 4), cmd.substr(colon + 1));
        } else if (cmd == "leave-all") {
            ws.send_text("left-all:" + std::to_string(hub.unsubscribe_all(ws)));
        }
    }
}

/// Sends `cmd` and returns the answer.
inline asio::awaitable<std::string> command(hub_ws& ws, std::string cmd) {
    co_await ws.write_text(cmd);
    auto m = co_await ws.read_message();
    if (!m) throw std::runtime_error("closed before answering " + cmd);
    co_return std::string(m->text());
}

/// Joins `topic`, or throws.
inline asio::awaitable<void> join(hub_ws& ws, std::string topic) {
    auto answer = co_await command(ws, "join:" + topic);
    if (answer != "joined:" + topic) throw std::runtime_error("join answered " + answer);
}

} // namespace corows::test
