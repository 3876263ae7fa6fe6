// What a server's listening socket needs that depends on its protocol: TCP gets SO_REUSEADDR
// and may share its port between threads (SO_REUSEPORT); a Unix domain socket has a file,
// which the server removes when done, and no peer address to limit connections by.
#pragma once

#include <corows/asio.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include <sys/socket.h> // SO_REUSEPORT
#include <sys/stat.h>
#include <unistd.h>

namespace corows::detail {

/// SO_REUSEPORT as an Asio settable socket option.
class reuse_port_option {
public:
    explicit reuse_port_option(bool on) noexcept : value_(on ? 1 : 0) {}
    template <class Protocol> int level(const Protocol&) const noexcept { return SOL_SOCKET; }
#ifdef SO_REUSEPORT
    template <class Protocol> int name(const Protocol&) const noexcept { return SO_REUSEPORT; }
#else
    template <class Protocol> int name(const Protocol&) const noexcept { return 0; }
#endif
    template <class Protocol> const void* data(const Protocol&) const noexcept { return &value_; }
    template <class Protocol> std::size_t size(const Protocol&) const noexcept { return sizeof(value_); }

private:
    int value_;
};

/// True where SO_REUSEPORT spreads incoming connections over the sockets sharing a port.
inline constexpr bool reuse_port_balances =
#if defined(__linux__) && defined(SO_REUSEPORT)
    true;
#else
    false;
#endif

/// True if `Protocol` is TCP (and not a Unix domain socket).
template <class Protocol>
inline constexpr bool is_tcp = std::is_same_v<Protocol, asio::ip::tcp>;

/// The file of a bound Unix domain socket, removed on destruction unless something else has
/// taken its path since (another server after a stale one was removed, say).
class socket_file {
public:
    /// Notes the socket file at `path` as it is now; no file (an abstract socket): nothing.
    explicit socket_file(std::string path) : path_(std::move(path)) {
        struct stat st {};
        if (path_.empty() || ::stat(path_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) path_.clear();
        else {
            dev_ = st.st_dev;
            ino_ = st.st_ino;
        }
    }
    socket_file(socket_file&& o) noexcept : path_(std::move(o.path_)), dev_(o.dev_), ino_(o.ino_) { o.path_.clear(); }
    socket_file& operator=(socket_file&&) = delete;
    ~socket_file() {
        struct stat st {};
        if (!path_.empty() && ::stat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
            ::unlink(path_.c_str());
    }

private:
    std::string path_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

/// Opens, binds and listens `a` on `e`; TCP with SO_REUSEADDR, and SO_REUSEPORT if
/// `reuse_port`. Throws system_error.
template <class Acceptor, class Endpoint>
void open_listener(Acceptor& a, const Endpoint& e, bool reuse_port, int backlog) {
    a.open(e.protocol());
    if constexpr (is_tcp<typename Endpoint::protocol_type>) {
        a.set_option(asio::socket_base::reuse_address(true));
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

} // namespace corows::detail
