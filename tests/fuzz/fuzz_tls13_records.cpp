// SPDX-License-Identifier: BSL-1.0
// A TLS connection after release_openssl() (tls_engine over tls13_records), a server's or a
// client's (which skips session tickets), reading what a peer holding the keys sends: records
// of any content type and content, key updates, and raw bytes between them, lent in pieces of
// any size and read into any room. Whatever comes, the engine returns only application data
// the peer sealed, in order, and holds at most a couple of records.
//
// Input: byte 0 sets the piece size, byte 1 the read room and (its low bit) the client's side;
// then repeated [op][length][bytes]:
// op % 4 is application data, alert, handshake content (a KeyUpdate rekeys the peer), or
// unsealed bytes.
#include <corows/detail/tls13_records.hpp>
#include <corows/detail/tls_engine.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace {

using corows::detail::tls13_records;
using corows::detail::tls_content;
using corows::detail::tls_status;

corows::detail::tls13_secret secret(std::uint8_t fill) {
    corows::detail::tls13_secret s;
    s.size = 48;
    std::fill_n(s.bytes.begin(), 48, fill);
    return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t piece = 1 + data[0] * 67u;
    const std::size_t room = 1 + data[1] * 131u;
    const auto suite = corows::detail::tls13_suite::aes_256_gcm_sha384;
    auto peer = tls13_records::make(suite, secret(2), secret(1), 0, 0);
    corows::detail::tls_engine engine(tls13_records::make(suite, secret(1), secret(2), 0, 0), (data[1] & 1) != 0);
    if (!peer) std::abort();

    std::vector<std::uint8_t> wire;
    std::string sent; // every application byte sealed
    for (std::size_t i = 2; i + 2 <= size;) {
        const std::uint8_t op = data[i];
        const std::size_t n = std::min<std::size_t>(data[i + 1] * (op & 0x80 ? 129u : 1u), size - i - 2);
        const std::span<const std::uint8_t> bytes(data + i + 2, n);
        i += 2 + std::min<std::size_t>(n, data[i + 1]);
        switch (op & 3) {
        case 0:
            peer->seal(bytes, tls_content::application_data, wire);
            sent.append(bytes.begin(), bytes.end());
            break;
        case 1: peer->seal(bytes, tls_content::alert, wire); break;
        case 2:
            peer->seal(bytes, tls_content::handshake, wire);
            if (n == 5 && bytes[0] == 24) peer->update_write_key();
            break;
        default: wire.insert(wire.end(), bytes.begin(), bytes.end());
        }
    }

    std::string got;
    std::vector<std::uint8_t> buf(room);
    std::size_t at = 0;
    for (;;) {
        std::size_t n = 0;
        const tls_status st = engine.read(buf, n);
        if (st == tls_status::done) {
            if (n == 0 || n > room) std::abort();
            got.append(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
            continue;
        }
        if (st != tls_status::need_input || at == wire.size()) break;
        const std::size_t k = std::min(piece, wire.size() - at);
        engine.lend(std::span<const std::uint8_t>(wire).subspan(at, k));
        at += k;
        engine.settle();
        // A partial record and one piece, with vector growth: never more.
        if (engine.held_bytes() > 4 * (tls13_records::max_ciphertext + 5 + piece)) std::abort();
    }
    if (got.size() > sent.size() || sent.compare(0, got.size(), got) != 0) std::abort();
    return 0;
}
