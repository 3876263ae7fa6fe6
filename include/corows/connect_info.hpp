// SPDX-License-Identifier: BSL-1.0
// corows::connect_info: what a reconnecting client's on_connect hook learns about the
// connection just opened. Its own header, without Asio, so that its special members (which
// copy a deprecated field) are compiled once in the library and warn nowhere.
#pragma once

#include <corows/close_info.hpp>
#include <corows/protocol/backoff.hpp>

#include <chrono>

namespace corows {

/// What reconnecting::on_connect's hook learns about the connection just opened.
struct connect_info {
    /// Connection 0 after 0 attempts, nothing before it.
    connect_info();
    /// Connection number `number`, opened after `tries` and `waiting`; `before` ended the
    /// connection before it (a default close_info before the first).
    connect_info(unsigned number, unsigned tries, std::chrono::milliseconds waiting, close_info before);
    // Compiled in src/connect_info.cpp: defined here, they would copy the deprecated field
    // below in every user's file and warn there.
    /// Copies every field.
    connect_info(const connect_info&);
    /// Moves every field.
    connect_info(connect_info&&) noexcept;
    /// Copies every field.
    connect_info& operator=(const connect_info&);
    /// Moves every field.
    connect_info& operator=(connect_info&&) noexcept;
    ~connect_info();

    /// 1 for the first connection, 2 for the first reconnection, and so on.
    unsigned connection = 0;
    /// The tries this connection took (1: the first try succeeded).
    unsigned attempts = 0;
    /// The time spent waiting (backoff, Retry-After) before this connection, over all its tries.
    std::chrono::milliseconds waited{0};
    /// How the previous connection ended (not ended(), phase connecting, before the first
    /// connection); failed attempts since then are not counted here but in attempts.
    close_info previous_close{};
    /// The same in the deprecated record (kind none before the first connection).
    [[deprecated("use previous_close")]] disconnect_reason previous;
};

} // namespace corows
