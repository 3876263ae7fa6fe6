// SPDX-License-Identifier: BSL-1.0
// Settings of one connection, fixed at construction.
#pragma once

#include <corows/protocol/http.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace corows {

/// Limits, timeouts and extension settings of a websocket; the same type serves both roles
/// (a client's connect-only settings are connect_options').
struct options {
    // Declared so that `options{}` is not aggregate initialisation, which g++ 12 gets wrong
    // inside a co_await expression (each member destroyed twice).
    /// The defaults below.
    options();
    // Compiled in src/options.cpp: defined here, they would copy the deprecated fields below in
    // every user's file and warn there (a diagnostic pragma around them is lost when the
    // header is precompiled).
    /// Copies every setting.
    options(const options&);
    /// Moves every setting.
    options(options&&) noexcept;
    /// Copies every setting.
    options& operator=(const options&);
    /// Moves every setting.
    options& operator=(options&&) noexcept;
    ~options();

    /// Largest message accepted, after decompression; a bigger one closes with 1009.
    std::size_t max_message_size = 16 * 1024 * 1024;
    /// Outgoing messages are split into frames of at most this payload; 0 never splits.
    std::size_t frame_size = 0;
    /// Bytes queued for sending beyond which write_message() waits for the socket.
    std::size_t write_queue_limit = 1024 * 1024;
    /// A server writes unfragmented, uncompressed messages of at least this size straight from
    /// the caller's memory instead of copying them into the queue.
    std::size_t direct_write_threshold = 64 * 1024;
    /// Time allowed for the opening handshake; zero: unlimited. A server counts it once from
    /// accept, for the TLS handshake and the upgrade together (see basic_server).
    std::chrono::milliseconds handshake_timeout{10'000};
    /// Time allowed for the peer to answer a close frame and close TCP; zero: unlimited.
    std::chrono::milliseconds close_timeout{5'000};
    /// The connection is closed when nothing arrives for this long (a pong counts); zero:
    /// never. On by default: a peer that vanished without closing, or squats a connection
    /// it never uses, must not hold it forever.
    std::chrono::milliseconds idle_timeout{60'000};
    /// A ping is sent when nothing arrived for this long; zero: no keepalive pings. The
    /// default keeps an honest quiet peer inside idle_timeout, and traffic on the connection
    /// inside the 60 s idle timeouts of common proxies (nginx, AWS's load balancers).
    std::chrono::milliseconds ping_interval{25'000};
    /// The connection is closed (1008, "too slow: send timeout", error::send_timeout) when
    /// output waits this long without the peer taking a byte of it: a peer that stopped
    /// reading must not pin what it was sent until idle_timeout. A large message written
    /// slowly but steadily is not cut, since every byte taken counts as progress. Zero: never.
    std::chrono::milliseconds send_timeout{30'000};
    /// permessage-deflate: off unless deflate.enabled.
    deflate_options deflate{};
    /// Limits on the HTTP head of the handshake.
    http_limits http{};
    /// Server: subprotocols supported, in order of preference. Client: subprotocols offered.
    std::vector<std::string> subprotocols{};
    /// Disable Nagle's algorithm: the send queue already batches small frames.
    bool tcp_nodelay = true;
    /// The TCP socket's kernel send buffer (SO_SNDBUF), set when the connection opens; Linux
    /// doubles the value for its bookkeeping. A small one makes a peer that stopped reading
    /// stall our writes (and meet send_timeout) after kilobytes rather than megabytes. Zero:
    /// the kernel's default (which autotunes).
    std::size_t send_buffer_size = 0;
    // Client-only settings, moved to connect_options; read only by the deprecated connect()
    // overloads (and reconnecting's options constructor) for one release.
    /// Deprecated: connect_options::happy_eyeballs_delay.
    [[deprecated("use connect_options::happy_eyeballs_delay")]] std::chrono::milliseconds happy_eyeballs_delay{250};
    /// Deprecated: connect_options::resolve.
    [[deprecated("use connect_options::resolve")]] std::vector<std::string> resolve{};
    /// Deprecated: connect_options::proxy.
    [[deprecated("use connect_options::proxy")]] std::string proxy{};
    /// Deprecated: connect_options::proxy_from_environment.
    [[deprecated("use connect_options::proxy_from_environment")]] bool proxy_from_environment = false;
};

} // namespace corows
