// SPDX-License-Identifier: BSL-1.0
// The SOCKS5 half of corows/protocol/proxy.hpp: RFC 1928 messages, RFC 1929 authentication.
#include <corows/condition.hpp>
#include <corows/detail/byte_order.hpp>
#include <corows/protocol/proxy.hpp>

#include "../detail/enum_category.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace corows {
namespace {

const char* message_of(socks5_reply e) noexcept {
    switch (static_cast<int>(e)) {
    case 1: return "SOCKS5 proxy: general server failure";
    case 2: return "SOCKS5 proxy: connection not allowed by its ruleset";
    case 3: return "SOCKS5 proxy: network unreachable";
    case 4: return "SOCKS5 proxy: host unreachable";
    case 5: return "SOCKS5 proxy: connection refused by the target";
    case 6: return "SOCKS5 proxy: TTL expired";
    case 7: return "SOCKS5 proxy: command not supported";
    case 8: return "SOCKS5 proxy: address type not supported";
    default: return nullptr;
    }
}

// Every code of this category is one kind of failure.
condition condition_of(socks5_reply) noexcept { return condition::proxy; }

constexpr std::uint8_t version5 = 0x05;
constexpr std::uint8_t method_none = 0x00;
constexpr std::uint8_t method_password = 0x02;
constexpr std::uint8_t method_unacceptable = 0xff;
constexpr std::uint8_t auth_version = 0x01; // RFC 1929 §2: the subnegotiation's own version
constexpr std::uint8_t cmd_connect = 0x01;
constexpr std::uint8_t atyp_ipv4 = 0x01;
constexpr std::uint8_t atyp_name = 0x03;
constexpr std::uint8_t atyp_ipv6 = 0x04;

std::string hex_byte(std::uint8_t b) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

void append_port(std::vector<std::uint8_t>& out, std::uint16_t port) {
    std::uint8_t bytes[2];
    detail::store_big_endian<2>(bytes, port);
    out.insert(out.end(), bytes, bytes + 2);
}

} // namespace

const std::error_category& socks5_category() noexcept {
    static const detail::enum_category<socks5_reply> category("corows.socks5", message_of,
                                                              "SOCKS5 proxy: unassigned reply code ",
                                                              condition_of, detail::unknown_code::text_and_number);
    return category;
}

std::error_code make_error_code(socks5_reply e) noexcept {
    return {static_cast<int>(e), socks5_category()};
}

std::vector<std::uint8_t> socks5_connect_by_name(std::string_view host, std::uint16_t port) {
    if (host.size() > 255) throw std::length_error("SOCKS5: a host name is at most 255 bytes");
    // Built by push_back: g++ 12 -O2 misreads an insert after a braced list (-Warray-bounds).
    std::vector<std::uint8_t> out;
    out.reserve(5 + host.size() + 2);
    for (std::uint8_t b : {version5, cmd_connect, std::uint8_t{0x00}, atyp_name}) out.push_back(b);
    out.push_back(static_cast<std::uint8_t>(host.size()));
    for (char c : host) out.push_back(static_cast<std::uint8_t>(c));
    append_port(out, port);
    return out;
}

std::vector<std::uint8_t> socks5_connect_by_address(std::span<const std::uint8_t> address, std::uint16_t port) {
    if (address.size() != 4 && address.size() != 16)
        throw std::invalid_argument("SOCKS5: an address is 4 (IPv4) or 16 (IPv6) bytes");
    std::vector<std::uint8_t> out;
    out.reserve(4 + address.size() + 2);
    for (std::uint8_t b : {version5, cmd_connect, std::uint8_t{0x00}, address.size() == 4 ? atyp_ipv4 : atyp_ipv6})
        out.push_back(b);
    for (std::uint8_t b : address) out.push_back(b);
    append_port(out, port);
    return out;
}

socks5_handshake::socks5_handshake(const proxy_url& proxy, std::vector<std::uint8_t> connect_request)
    : connect_(std::move(connect_request)) {
    // Offering "none" too, as curl does: a proxy that needs no password then uses none.
    if (proxy.has_credentials) {
        out_ = {version5, 2, method_none, method_password};
        auth_.push_back(auth_version);
        auth_.push_back(static_cast<std::uint8_t>(proxy.user.size()));
        auth_.insert(auth_.end(), proxy.user.begin(), proxy.user.end());
        auth_.push_back(static_cast<std::uint8_t>(proxy.password.size()));
        auth_.insert(auth_.end(), proxy.password.begin(), proxy.password.end());
    } else {
        out_ = {version5, 1, method_none};
    }
}

std::size_t socks5_handshake::need() const noexcept {
    return status_ == proxy_status::need_more ? want_ - in_.size() : 0;
}

void socks5_handshake::fail(std::error_code ec, std::string why) {
    status_ = proxy_status::failed;
    error_ = ec;
    detail_ = std::move(why);
    out_.clear();
    state_ = state::done;
}

proxy_feed_result socks5_handshake::feed(std::span<const std::uint8_t> bytes) {
    std::size_t used = 0;
    // Stops at new output too: the proxy cannot answer a message that was not sent yet.
    while (status_ == proxy_status::need_more && used < bytes.size() && out_.empty()) {
        const std::size_t n = std::min(need(), bytes.size() - used);
        in_.insert(in_.end(), bytes.begin() + static_cast<std::ptrdiff_t>(used),
                   bytes.begin() + static_cast<std::ptrdiff_t>(used + n));
        used += n;
        if (in_.size() == want_) step();
    }
    return {used, status_, error_};
}

void socks5_handshake::step() {
    switch (state_) {
    case state::method: {
        if (in_[0] != version5) {
            return fail(error::proxy_protocol_error,
                        "not a SOCKS5 proxy: its answer starts with " + hex_byte(in_[0]) +
                            (in_[0] == 'H' ? " ('H': an HTTP proxy? use http://)" : ""));
        }
        const std::uint8_t method = in_[1];
        in_.clear();
        if (method == method_none) {
            out_ = connect_;
            state_ = state::reply_head;
            want_ = 4;
        } else if (method == method_password && !auth_.empty()) {
            out_ = auth_;
            state_ = state::auth;
            want_ = 2;
        } else if (method == method_unacceptable) {
            fail(error::proxy_auth_failed,
                 auth_.empty() ? "the SOCKS5 proxy requires authentication: user:password@ in the proxy URL"
                               : "the SOCKS5 proxy accepts neither no authentication nor user name and password");
        } else {
            fail(error::proxy_protocol_error,
                 "the SOCKS5 proxy chose authentication method " + hex_byte(method) + ", which was not offered");
        }
        return;
    }
    case state::auth:
        if (in_[0] != auth_version) {
            return fail(error::proxy_protocol_error,
                        "malformed SOCKS5 authentication reply (version " + hex_byte(in_[0]) + ")");
        }
        if (in_[1] != 0x00) return fail(error::proxy_auth_failed, "the SOCKS5 proxy rejected the user name and password");
        in_.clear();
        out_ = connect_;
        state_ = state::reply_head;
        want_ = 4;
        return;
    case state::reply_head:
        if (in_[0] != version5) {
            return fail(error::proxy_protocol_error,
                        "malformed SOCKS5 CONNECT reply (version " + hex_byte(in_[0]) + ")");
        }
        if (in_[1] != 0x00) {
            return fail(make_error_code(static_cast<socks5_reply>(in_[1])),
                        "the proxy could not open the connection (SOCKS5 reply " + std::to_string(in_[1]) + ")");
        }
        // The bound address is of no use to a client, but it must be read: what follows it is
        // the target's.
        switch (in_[3]) {
        case atyp_ipv4: want_ = 4 + 4 + 2; break;
        case atyp_ipv6: want_ = 4 + 16 + 2; break;
        case atyp_name: want_ = 4 + 1; break;
        default:
            return fail(error::proxy_protocol_error,
                        "malformed SOCKS5 CONNECT reply (address type " + hex_byte(in_[3]) + ")");
        }
        state_ = state::reply_address;
        return;
    case state::reply_address:
        if (in_[3] == atyp_name && in_.size() == 5) {
            want_ = 5 + std::size_t{in_[4]} + 2;
            return;
        }
        status_ = proxy_status::complete;
        state_ = state::done;
        return;
    case state::done: return;
    }
}

} // namespace corows
