// SPDX-License-Identifier: BSL-1.0
// TLS 1.3 record protection (RFC 8446 §5) for a connection whose handshake OpenSSL finished:
// seals and opens records with keys derived from the application traffic secrets, so that
// the connection can give up OpenSSL's SSL object (about 11 KiB with its session) while the
// records stay the same on the wire. Bytes in, bytes out; no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

struct evp_cipher_ctx_st;

namespace corows::detail {

/// The TLS 1.3 cipher suites tls13_records implements.
enum class tls13_suite : std::uint8_t { aes_128_gcm_sha256, aes_256_gcm_sha384, chacha20_poly1305_sha256 };

/// A traffic secret of its suite's hash length (32 or 48 bytes).
struct tls13_secret {
    std::array<std::uint8_t, 48> bytes{};
    std::size_t size = 0;
};

/// RFC 8446 §5.1 content types.
enum class tls_content : std::uint8_t { alert = 21, handshake = 22, application_data = 23 };

/// Outcome of tls13_records::open().
struct tls13_opened {
    enum class status : std::uint8_t { record, need_more, failed } st = status::need_more;
    std::size_t consumed = 0;       ///< ciphertext bytes of the record (record)
    std::size_t plaintext = 0;      ///< content bytes written to `out` (record)
    tls_content type{};             ///< the inner content type (record)
    int reason = 0;                 ///< OpenSSL SSL_R_ reason (failed)
    std::uint8_t alert = 0;         ///< the alert to send the peer (failed)
};

/// One connection's two directions of TLS 1.3 record protection.
class tls13_records {
    struct make_tag {
        explicit make_tag() = default;
    };

public:
    /// Use make(); public only for std::make_unique.
    tls13_records(make_tag, tls13_suite suite) noexcept : suite_(suite) {}
    /// Keys for `suite` from the two application traffic secrets, with the sequence numbers
    /// the records already sent each way have used; null if OpenSSL cannot make the ciphers.
    static std::unique_ptr<tls13_records> make(tls13_suite suite, const tls13_secret& read_secret,
                                               const tls13_secret& write_secret, std::uint64_t read_seq,
                                               std::uint64_t write_seq);
    ~tls13_records();
    tls13_records(const tls13_records&) = delete;
    tls13_records& operator=(const tls13_records&) = delete;

    /// Most content bytes in one record.
    static constexpr std::size_t max_plaintext = 16384;
    /// Most ciphertext bytes after a record's 5-byte header (RFC 8446 §5.2).
    static constexpr std::size_t max_ciphertext = max_plaintext + 256;
    /// Bytes one record adds to its content: header, content type, tag.
    static constexpr std::size_t overhead = 5 + 1 + 16;

    /// Appends `data` to `out` as records of `type` of at most the fragment limit each (one
    /// empty record for empty data); false if the cipher failed.
    bool seal(std::span<const std::uint8_t> data, tls_content type, std::vector<std::uint8_t>& out);
    /// Opens the record at the start of `in` into `out`, which must hold max_plaintext + 1
    /// bytes or the record's ciphertext length, whichever is less; need_more until the whole
    /// record is in `in`.
    tls13_opened open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out);
    /// Bytes `out` must offer open() for the record at the start of `in` (0 if its header
    /// is incomplete).
    static std::size_t plaintext_bound(std::span<const std::uint8_t> in) noexcept;
    /// Bytes of the record at the start of `in`, its 5-byte header included (0 if that header
    /// is incomplete).
    static std::size_t record_size(std::span<const std::uint8_t> in) noexcept;

    /// Seals at most `n` content bytes per record from now on (max_plaintext at most): the
    /// limit a max_fragment_length extension (RFC 6066 §4) negotiated.
    void limit_fragment(std::size_t n) noexcept { max_fragment_ = n < max_plaintext ? n : max_plaintext; }
    /// The most content bytes seal() puts in one record.
    std::size_t fragment_limit() const noexcept { return max_fragment_; }

    /// RFC 8446 §7.2: moves the receiving direction to its next traffic secret.
    bool update_read_key();
    /// Moves the sending direction to its next traffic secret (after sending a KeyUpdate).
    bool update_write_key();

private:
    struct direction {
        evp_cipher_ctx_st* ctx = nullptr;
        tls13_secret secret;
        std::array<std::uint8_t, 12> iv{};
        std::uint64_t seq = 0;
    };
    bool key(direction& d, bool encrypt);
    bool update(direction& d, bool encrypt);
    static void nonce(const direction& d, std::uint8_t* out) noexcept;
    /// Starts d's next record under nonce `iv`; to open, with the record's `tag`.
    bool restart(direction& d, std::uint8_t* iv, std::uint8_t* tag) noexcept;
    /// Writes the tag of the record d just sealed to `tag`.
    static bool take_tag(direction& d, std::uint8_t* tag) noexcept;

    tls13_suite suite_;
    std::size_t max_fragment_ = max_plaintext;
    direction read_;
    direction write_;
};

} // namespace corows::detail
