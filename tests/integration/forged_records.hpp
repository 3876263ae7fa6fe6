// SPDX-License-Identifier: BSL-1.0
// A test's own TLS 1.3 peer forging records: its OpenSSL context logs the traffic secrets, and
// the test then seals records of its choosing with the library's tls13_records, as a hostile
// peer holding the keys would.
#pragma once

#include <corows/detail/tls13_records.hpp>

#include <boost/test/unit_test.hpp>

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace corows::test {

/// The application traffic secrets of one connection, as its key log gave them.
struct traffic_secrets {
    detail::tls13_secret client, server;
};

/// What log_traffic_secret() read last: one forging peer at a time per process.
inline traffic_secrets logged_secrets;

/// An SSL_CTX key log callback (SSL_CTX_set_keylog_callback) that keeps the first
/// application traffic secrets of each side in logged_secrets.
inline void log_traffic_secret(const SSL*, const char* line) {
    const std::string l(line);
    detail::tls13_secret* to = l.rfind("CLIENT_TRAFFIC_SECRET_0 ", 0) == 0   ? &logged_secrets.client
                               : l.rfind("SERVER_TRAFFIC_SECRET_0 ", 0) == 0 ? &logged_secrets.server
                                                                             : nullptr;
    if (!to) return;
    const std::string hex = l.substr(l.rfind(' ') + 1);
    to->size = hex.size() / 2;
    for (std::size_t i = 0; i < to->size; ++i)
        to->bytes[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
}

/// The records the side of `ssl` seals and opens with, keyed from logged_secrets, after `seq`
/// records each way; requires that the connection negotiated TLS_AES_256_GCM_SHA384.
inline std::unique_ptr<detail::tls13_records> forged_records(const SSL* ssl, std::uint64_t seq) {
    BOOST_REQUIRE(SSL_CIPHER_get_id(SSL_get_current_cipher(ssl)) == 0x03001302u);
    const bool client = SSL_is_server(ssl) == 0;
    auto r = detail::tls13_records::make(detail::tls13_suite::aes_256_gcm_sha384,
                                         client ? logged_secrets.server : logged_secrets.client,
                                         client ? logged_secrets.client : logged_secrets.server, seq, seq);
    BOOST_REQUIRE(r);
    return r;
}

/// `text` sealed by `r` as one record of `type`.
inline std::vector<std::uint8_t> sealed(detail::tls13_records& r, std::string_view text,
                                        detail::tls_content type = detail::tls_content::application_data) {
    std::vector<std::uint8_t> out;
    r.seal({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, type, out);
    return out;
}

} // namespace corows::test
