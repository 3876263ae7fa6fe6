// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>
#include <corows/detail/tls13_records.hpp>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

#include <cstring>
#include <string_view>

namespace corows::detail {
namespace {

constexpr std::size_t tag_size = 16;

// Fetched once: a cipher fetched per key would look the provider up on every connection.
const EVP_CIPHER* cipher_of(tls13_suite s) noexcept {
    static const EVP_CIPHER* const aes128 = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
    static const EVP_CIPHER* const aes256 = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
    static const EVP_CIPHER* const chacha = EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr);
    switch (s) {
    case tls13_suite::aes_128_gcm_sha256: return aes128;
    case tls13_suite::aes_256_gcm_sha384: return aes256;
    case tls13_suite::chacha20_poly1305_sha256: return chacha;
    }
    return nullptr;
}

const EVP_MD* hash_of(tls13_suite s) noexcept {
    return s == tls13_suite::aes_256_gcm_sha384 ? EVP_sha384() : EVP_sha256();
}

std::size_t key_size(tls13_suite s) noexcept { return s == tls13_suite::aes_128_gcm_sha256 ? 16 : 32; }

// RFC 8446 §7.1 HKDF-Expand-Label with an empty context, for outputs of at most one hash
// block (every use here): T(1) = HMAC(secret, HkdfLabel || 0x01).
bool expand_label(tls13_suite s, const tls13_secret& secret, std::string_view label, std::uint8_t* out,
                  std::size_t n) {
    std::array<std::uint8_t, 2 + 1 + 6 + 32 + 1 + 1> info{};
    std::size_t i = 0;
    store_big_endian<2>(info.data() + i, n);
    i += 2;
    info[i++] = static_cast<std::uint8_t>(6 + label.size());
    std::memcpy(info.data() + i, "tls13 ", 6);
    i += 6;
    std::memcpy(info.data() + i, label.data(), label.size());
    i += label.size();
    info[i++] = 0; // context length
    info[i++] = 1; // the HKDF-Expand block counter
    std::array<std::uint8_t, EVP_MAX_MD_SIZE> block{};
    unsigned len = 0;
    if (!HMAC(hash_of(s), secret.bytes.data(), static_cast<int>(secret.size), info.data(), i, block.data(), &len) ||
        len < n)
        return false;
    std::memcpy(out, block.data(), n);
    OPENSSL_cleanse(block.data(), block.size());
    return true;
}

tls13_opened failed(int reason, std::uint8_t alert) noexcept {
    tls13_opened r;
    r.st = tls13_opened::status::failed;
    r.reason = reason;
    r.alert = alert;
    return r;
}

std::size_t record_length(std::span<const std::uint8_t> in) noexcept {
    return static_cast<std::size_t>(load_big_endian<2>(in.data() + 3));
}

} // namespace

std::unique_ptr<tls13_records> tls13_records::make(tls13_suite suite, const tls13_secret& read_secret,
                                                   const tls13_secret& write_secret, std::uint64_t read_seq,
                                                   std::uint64_t write_seq) {
    if (!cipher_of(suite)) return nullptr;
    auto r = std::make_unique<tls13_records>(make_tag{}, suite);
    r->read_.secret = read_secret;
    r->read_.seq = read_seq;
    r->write_.secret = write_secret;
    r->write_.seq = write_seq;
    r->read_.ctx = EVP_CIPHER_CTX_new();
    r->write_.ctx = EVP_CIPHER_CTX_new();
    if (!r->read_.ctx || !r->write_.ctx || !r->key(r->read_, false) || !r->key(r->write_, true)) return nullptr;
    return r;
}

tls13_records::~tls13_records() {
    EVP_CIPHER_CTX_free(read_.ctx);
    EVP_CIPHER_CTX_free(write_.ctx);
    OPENSSL_cleanse(read_.secret.bytes.data(), read_.secret.bytes.size());
    OPENSSL_cleanse(write_.secret.bytes.data(), write_.secret.bytes.size());
    OPENSSL_cleanse(read_.iv.data(), read_.iv.size());
    OPENSSL_cleanse(write_.iv.data(), write_.iv.size());
}

bool tls13_records::key(direction& d, bool encrypt) {
    std::array<std::uint8_t, 32> k{};
    const bool ok = expand_label(suite_, d.secret, "key", k.data(), key_size(suite_)) &&
                    expand_label(suite_, d.secret, "iv", d.iv.data(), d.iv.size()) &&
                    EVP_CipherInit_ex(d.ctx, cipher_of(suite_), nullptr, k.data(), nullptr, encrypt ? 1 : 0) == 1;
    OPENSSL_cleanse(k.data(), k.size());
    return ok;
}

bool tls13_records::update(direction& d, bool encrypt) {
    // RFC 8446 §7.2: the next secret is HKDF-Expand-Label(secret, "traffic upd", "", Hash.length).
    tls13_secret next = d.secret;
    const bool ok = expand_label(suite_, d.secret, "traffic upd", next.bytes.data(), next.size);
    if (ok) d.secret = next;
    OPENSSL_cleanse(next.bytes.data(), next.bytes.size());
    d.seq = 0;
    return ok && key(d, encrypt);
}

bool tls13_records::update_read_key() { return update(read_, false); }

bool tls13_records::update_write_key() { return update(write_, true); }

void tls13_records::nonce(const direction& d, std::uint8_t* out) noexcept {
    // RFC 8446 §5.3: the sequence number, big-endian and left-padded to the IV's length,
    // XORed with the IV.
    std::array<std::uint8_t, 8> seq;
    store_big_endian<8>(seq.data(), d.seq);
    std::memcpy(out, d.iv.data(), d.iv.size());
    for (std::size_t i = 0; i < 8; ++i) out[d.iv.size() - 8 + i] ^= seq[i];
}

bool tls13_records::restart(direction& d, std::uint8_t* iv, std::uint8_t* tag) noexcept {
    if (suite_ == tls13_suite::chacha20_poly1305_sha256) {
        // Its provider reads "tlsivfixed" as TLS 1.2's fixed nonce part, not a whole nonce.
        const int encrypt = tag ? 0 : 1;
        return EVP_CipherInit_ex(d.ctx, nullptr, nullptr, nullptr, iv, encrypt) == 1 &&
               (!tag || EVP_CIPHER_CTX_ctrl(d.ctx, EVP_CTRL_AEAD_SET_TAG, tag_size, tag) == 1);
    }
    // A re-init asks the provider for the IV's length through its parameter lookup on every
    // record; the GCM provider takes a whole nonce as "tlsivfixed" of length -1 (what
    // EVP_CTRL_AEAD_SET_IV_FIXED with -1 sends), and the tag in the same call.
    OSSL_PARAM params[3] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, iv, static_cast<std::size_t>(-1)),
        OSSL_PARAM_END, OSSL_PARAM_END};
    if (tag) params[1] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tag_size);
    return EVP_CIPHER_CTX_set_params(d.ctx, params) == 1;
}

bool tls13_records::take_tag(direction& d, std::uint8_t* tag) noexcept {
    OSSL_PARAM params[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tag_size),
                            OSSL_PARAM_END};
    return EVP_CIPHER_CTX_get_params(d.ctx, params) == 1;
}

bool tls13_records::seal(std::span<const std::uint8_t> data, tls_content type, std::vector<std::uint8_t>& out) {
    do {
        const std::size_t n = std::min(data.size(), max_fragment_);
        const std::size_t length = n + 1 + tag_size;
        const std::size_t at = out.size();
        out.resize(at + 5 + length);
        std::uint8_t* rec = out.data() + at;
        rec[0] = static_cast<std::uint8_t>(tls_content::application_data);
        rec[1] = 3;
        rec[2] = 3;
        store_big_endian<2>(rec + 3, length);
        std::array<std::uint8_t, 12> iv{};
        nonce(write_, iv.data());
        const auto inner_type = static_cast<std::uint8_t>(type);
        int len = 0;
        int tail = 0;
        if (write_.seq == UINT64_MAX || !restart(write_, iv.data(), nullptr) ||
            EVP_EncryptUpdate(write_.ctx, nullptr, &len, rec, 5) != 1 ||
            (n > 0 && EVP_EncryptUpdate(write_.ctx, rec + 5, &len, data.data(), static_cast<int>(n)) != 1) ||
            EVP_EncryptUpdate(write_.ctx, rec + 5 + n, &tail, &inner_type, 1) != 1 ||
            EVP_EncryptFinal_ex(write_.ctx, rec + 5 + n + 1, &len) != 1 || !take_tag(write_, rec + 5 + n + 1)) {
            out.resize(at);
            return false;
        }
        ++write_.seq;
        data = data.subspan(n);
    } while (!data.empty());
    return true;
}

std::size_t tls13_records::plaintext_bound(std::span<const std::uint8_t> in) noexcept {
    if (in.size() < 5) return 0;
    const std::size_t length = record_length(in);
    return length > tag_size ? std::min(length - tag_size, max_plaintext + 1) : 0;
}

std::size_t tls13_records::record_size(std::span<const std::uint8_t> in) noexcept {
    return in.size() < 5 ? 0 : 5 + record_length(in);
}

tls13_opened tls13_records::open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out) {
    if (in.size() < 5) return {};
    // After the handshake every record is protected and says application_data outside; the
    // legacy version field is ignored, as RFC 8446 §5.1 asks.
    if (in[0] != static_cast<std::uint8_t>(tls_content::application_data))
        return failed(SSL_R_UNEXPECTED_RECORD, SSL_AD_UNEXPECTED_MESSAGE);
    const std::size_t length = record_length(in);
    if (length > max_ciphertext) return failed(SSL_R_ENCRYPTED_LENGTH_TOO_LONG, SSL_AD_RECORD_OVERFLOW);
    if (length < tag_size + 1) return failed(SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC, SSL_AD_BAD_RECORD_MAC);
    if (in.size() < 5 + length) return {};
    const std::size_t sealed = length - tag_size;
    if (out.size() < std::min(sealed, max_plaintext + 1)) return failed(SSL_R_DATA_LENGTH_TOO_LONG, SSL_AD_INTERNAL_ERROR);
    if (sealed > out.size()) {
        // Legal only as padding beyond the content: rare enough to take a scratch buffer.
        std::vector<std::uint8_t> scratch(sealed);
        tls13_opened r = open(in, scratch);
        if (r.st == tls13_opened::status::record) std::memcpy(out.data(), scratch.data(), r.plaintext);
        return r;
    }
    std::array<std::uint8_t, 12> iv{};
    nonce(read_, iv.data());
    int len = 0;
    std::array<std::uint8_t, tag_size> tag{};
    std::memcpy(tag.data(), in.data() + 5 + sealed, tag_size);
    if (read_.seq == UINT64_MAX || !restart(read_, iv.data(), tag.data()) ||
        EVP_DecryptUpdate(read_.ctx, nullptr, &len, in.data(), 5) != 1 ||
        EVP_DecryptUpdate(read_.ctx, out.data(), &len, in.data() + 5, static_cast<int>(sealed)) != 1 ||
        EVP_DecryptFinal_ex(read_.ctx, out.data() + sealed, &len) != 1)
        return failed(SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC, SSL_AD_BAD_RECORD_MAC);
    ++read_.seq;
    // RFC 8446 §5.4: the content type is the last non-zero byte; zeros after it are padding.
    std::size_t end = sealed;
    while (end > 0 && out[end - 1] == 0) --end;
    if (end == 0) return failed(SSL_R_BAD_RECORD_TYPE, SSL_AD_UNEXPECTED_MESSAGE);
    const std::uint8_t type = out[end - 1];
    const std::size_t content = end - 1;
    if (content > max_plaintext) return failed(SSL_R_DATA_LENGTH_TOO_LONG, SSL_AD_RECORD_OVERFLOW);
    if (type != static_cast<std::uint8_t>(tls_content::alert) &&
        type != static_cast<std::uint8_t>(tls_content::handshake) &&
        type != static_cast<std::uint8_t>(tls_content::application_data))
        return failed(SSL_R_BAD_RECORD_TYPE, SSL_AD_UNEXPECTED_MESSAGE);
    tls13_opened r;
    r.st = tls13_opened::status::record;
    r.consumed = 5 + length;
    r.plaintext = content;
    r.type = static_cast<tls_content>(type);
    return r;
}

} // namespace corows::detail
