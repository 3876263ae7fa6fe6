// SPDX-License-Identifier: BSL-1.0
// What connect() and connect_unix() know about a failure beyond its error_code (the phase, the
// peer, a detail, a refusal's answer), and the exception that carries it. Its own header so
// that connect_options (which can point at one) and connect_unix() need no TLS.
#pragma once

#include <corows/asio.hpp>
#include <corows/protocol/http.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace corows {

/// The step of connect() that failed.
enum class connect_phase : std::uint8_t {
    url,           ///< the URL did not parse
    resolve,       ///< the host name did not resolve
    tcp_connect,   ///< no address accepted the TCP connection (connect_unix: the socket connect)
    tls_handshake, ///< wss://: TLS failed (certificate, protocol)
    http_upgrade,  ///< the WebSocket handshake failed or was refused
    proxy,         ///< the proxy refused or failed the tunnel (after TCP reached it)
};

/// What connect() knows about a failure beyond its error_code.
struct connect_failure {
    connect_phase phase = connect_phase::url; ///< where it failed
    /// "host:port", with the address tried last once known ("localhost:80 (127.0.0.1:80)"); through
    /// a proxy "proxy 127.0.0.1:3128 for example.com:443"; connect_unix: the socket's path
    std::string peer;
    std::string detail;  ///< more from below: OpenSSL's verify result ("certificate has expired"), the proxy's refusal, a hint
    /// A refused upgrade's answer, with up to max_refusal_body of body; or an HTTP proxy's
    /// refusal of CONNECT (head only)
    std::optional<http_response> response;
    std::string message; ///< what connect_error::what() says: phase, peer, error and detail
};

/// A connect() or connect_unix() failure: code() is the error the other tokens report (url_error,
/// resolver, socket or TLS error, error::timeout, the handshake's error); what() names the
/// phase and the peer; failure() has the parts, and the server's answer for a refusal.
class connect_error : public system_error {
public:
    /// A failure with `ec` as described by `f` (what() is f.message).
    connect_error(error_code ec, connect_failure f)
        : system_error(ec), f_(std::make_shared<const connect_failure>(std::move(f))) {}
    /// The phase, peer, detail, answer and message.
    const connect_failure& failure() const noexcept { return *f_; }
    /// Where connect() failed.
    connect_phase phase() const noexcept { return f_->phase; }
    /// The refused upgrade's answer (status, reason, fields, bounded body), or nullptr.
    const http_response* response() const noexcept { return f_->response ? &*f_->response : nullptr; }
    /// "corows::connect: <phase> <peer> failed: <error> (<detail>)".
    const char* what() const noexcept override { return f_->message.c_str(); }

private:
    // Shared: exceptions are copied, and a copy must not throw.
    std::shared_ptr<const connect_failure> f_;
};

} // namespace corows
