// SPDX-License-Identifier: BSL-1.0
// A WebSocket client on a blocking socket, for the tests that flood a server or stop reading
// it: nothing it does waits for the test's event loop, and a small receive buffer keeps a
// reader that never reads from hiding megabytes in the kernel.
#pragma once

#include "loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace corows::test {

/// A frame as a client sends it, masked with the all-zero key (legal, and the bytes on the
/// wire are then the payload itself: a flood costs the flooder nothing to build).
inline bytes zero_key_frame(std::uint8_t b0, std::span<const std::uint8_t> payload) {
    bytes out{b0};
    if (payload.size() < 126) {
        out.push_back(static_cast<std::uint8_t>(0x80 | payload.size()));
    } else if (payload.size() < 65536) {
        out.push_back(0x80 | 126);
        out.push_back(static_cast<std::uint8_t>(payload.size() >> 8));
        out.push_back(static_cast<std::uint8_t>(payload.size()));
    } else {
        out.push_back(0x80 | 127);
        for (int i = 7; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(payload.size() >> (8 * i)));
    }
    out.insert(out.end(), 4, 0);
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

/// A client on a blocking socket to 127.0.0.1, with an io_context of its own.
class blocking_peer {
public:
    /// Connects; a `receive_buffer` size (SO_RCVBUF) small enough keeps a reader that never
    /// reads from hiding megabytes in the kernel.
    explicit blocking_peer(unsigned short port, int receive_buffer = 0) : sock_(ctx_) {
        sock_.open(tcp::v4());
        if (receive_buffer) sock_.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
        sock_.connect({asio::ip::make_address("127.0.0.1"), port});
        sock_.set_option(tcp::no_delay(true));
    }
    /// Sends an upgrade request (with `extra` header lines) and reads the 101.
    void upgrade(unsigned short port, std::string_view extra = {}) {
        std::string req = "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
                          std::string(extra) + "\r\n";
        asio::write(sock_, asio::buffer(req));
        std::string head;
        char c;
        while (!head.ends_with("\r\n\r\n")) {
            asio::read(sock_, asio::buffer(&c, 1));
            head += c;
        }
        BOOST_REQUIRE(head.starts_with("HTTP/1.1 101"));
    }
    /// Sends `data`; false once the server has hung up.
    bool send(std::span<const std::uint8_t> data) {
        corows::error_code ec;
        asio::write(sock_, asio::buffer(data.data(), data.size()), ec);
        return !ec;
    }
    /// Reads exactly `n` bytes.
    bytes read_exact(std::size_t n) {
        bytes out(n);
        asio::read(sock_, asio::buffer(out));
        return out;
    }
    /// Appends what is there to `into`, up to `max` bytes (blocking until something is);
    /// returns how many, 0 at the end.
    std::size_t read_some(std::size_t max, bytes& into) {
        std::size_t at = into.size();
        into.resize(at + max);
        corows::error_code ec;
        std::size_t n = sock_.read_some(asio::buffer(into.data() + at, max), ec);
        into.resize(at + n);
        return n;
    }
    /// Ends the connection (unblocks a send in another thread).
    void hang_up() {
        corows::error_code ignored;
        sock_.shutdown(tcp::socket::shutdown_both, ignored);
    }

private:
    asio::io_context ctx_;
    tcp::socket sock_;
};

} // namespace corows::test
