// SPDX-License-Identifier: BSL-1.0
// What a server's listening socket needs that depends on its protocol: TCP keeps its port
// (SO_REUSEADDR, SO_EXCLUSIVEADDRUSE on Windows) and may share it between threads
// (SO_REUSEPORT); a Unix domain socket has a file (socket_file, in platform.hpp), which the
// server removes when done, and no peer address to limit connections by.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/platform.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace corows::detail {

/// True if `Protocol` is TCP (and not a Unix domain socket).
template <class Protocol>
inline constexpr bool is_tcp = std::is_same_v<Protocol, asio::ip::tcp>;

/// Opens, binds and listens `a` on `e`; TCP with listener_address_option() (SO_REUSEADDR, or
/// SO_EXCLUSIVEADDRUSE on Windows), and SO_REUSEPORT if `reuse_port`. Throws system_error.
template <class Acceptor, class Endpoint>
void open_listener(Acceptor& a, const Endpoint& e, bool reuse_port, int backlog) {
    a.open(e.protocol());
    if constexpr (is_tcp<typename Endpoint::protocol_type>) {
        a.set_option(listener_address_option());
        if (reuse_port) a.set_option(reuse_port_option(true));
    }
    a.bind(e);
    a.listen(backlog);
}

/// The key of the per-address connection limit for a peer at `a`: an IPv4 address as it is
/// (also when IPv4-mapped into IPv6); an IPv6 address by its /64, since one host or site
/// commonly holds a whole /64 and could otherwise take a fresh address per connection.
inline std::string address_key(const asio::ip::address& a) {
    if (!a.is_v6()) return a.to_string();
    const auto v6 = a.to_v6();
    if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string();
    auto bytes = v6.to_bytes();
    for (std::size_t i = 8; i < bytes.size(); ++i) bytes[i] = 0;
    return asio::ip::address_v6(bytes).to_string() + "/64";
}

/// The key of the per-address connection limit for `sock`: address_key() of its peer; empty
/// for a Unix domain socket, whose peers have none. Sets `ec` if the peer is gone already.
template <class Socket>
std::string peer_address(const Socket& sock, error_code& ec) {
    if constexpr (is_tcp<typename Socket::protocol_type>) {
        auto peer = sock.remote_endpoint(ec);
        return ec ? std::string() : address_key(peer.address());
    } else {
        ec.clear();
        return {};
    }
}

/// The peer of `sock` as logs show it: "address:port" ("[v6]:port"), or empty for a Unix
/// domain socket or a peer already gone.
template <class Socket>
std::string peer_name(const Socket& sock) {
    if constexpr (is_tcp<typename Socket::protocol_type>) {
        error_code ec;
        auto peer = sock.remote_endpoint(ec);
        if (ec) return {};
        const auto a = peer.address();
        std::string s = a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
        return s + ":" + std::to_string(peer.port());
    } else {
        return {};
    }
}

} // namespace corows::detail
