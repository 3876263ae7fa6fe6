// SPDX-License-Identifier: BSL-1.0
// Certificates made in memory for the TLS tests: self-signed ones, a CA and the certificates
// it signs, expired ones; and the Asio contexts that present or trust them.
#pragma once

#include "test_asio.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>

namespace corows::test {

struct openssl_free {
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
    void operator()(X509* p) const noexcept { X509_free(p); }
    void operator()(X509_EXTENSION* p) const noexcept { X509_EXTENSION_free(p); }
    void operator()(BIO* p) const noexcept { BIO_free(p); }
};
template <class T>
using openssl_ptr = std::unique_ptr<T, openssl_free>;

/// Throws if an OpenSSL call failed.
inline void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what);
}

/// The bytes a memory BIO holds.
inline std::string bio_text(BIO* b) {
    BUF_MEM* mem = nullptr;
    BIO_get_mem_ptr(b, &mem);
    return std::string(mem->data, mem->length);
}

/// A certificate and its private key, PEM-encoded.
struct test_cert {
    std::string cert_pem;
    std::string key_pem;
};

/// How make_cert() makes a certificate.
struct cert_spec {
    const test_cert* issuer = nullptr; ///< signs it; nullptr: self-signed
    bool ca = false;                   ///< basicConstraints CA:TRUE
    long valid_from = -3600;           ///< seconds from now
    long valid_to = 86400;             ///< seconds from now
};

inline void add_extension(X509* x, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, x, nullptr, nullptr, 0);
    openssl_ptr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str()));
    check(ext != nullptr, "X509V3_EXT_conf_nid");
    check(X509_add_ext(x, ext.get(), -1) == 1, "X509_add_ext");
}

/// A P-256 certificate for `cn`, valid for the names in `san` (OpenSSL config syntax, e.g.
/// "DNS:localhost,IP:127.0.0.1"; empty: none), as `spec` says.
inline test_cert make_cert(const std::string& cn, const std::string& san, const cert_spec& spec = {}) {
    openssl_ptr<EVP_PKEY> key(EVP_EC_gen("P-256"));
    check(key != nullptr, "EC key generation");
    openssl_ptr<X509> x(X509_new());
    check(x != nullptr, "X509_new");
    check(X509_set_version(x.get(), X509_VERSION_3) == 1, "X509_set_version");
    static std::mt19937 serials(std::random_device{}());
    check(ASN1_INTEGER_set(X509_get_serialNumber(x.get()), static_cast<long>(serials() & 0x7fffffff)) == 1,
          "serial");
    check(X509_gmtime_adj(X509_getm_notBefore(x.get()), spec.valid_from) != nullptr, "notBefore");
    check(X509_gmtime_adj(X509_getm_notAfter(x.get()), spec.valid_to) != nullptr, "notAfter");
    check(X509_set_pubkey(x.get(), key.get()) == 1, "X509_set_pubkey");
    X509_NAME* name = X509_get_subject_name(x.get());
    check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()),
                                     -1, -1, 0) == 1, "CN");

    openssl_ptr<X509> issuer_cert;
    openssl_ptr<EVP_PKEY> issuer_key;
    if (spec.issuer) {
        openssl_ptr<BIO> cb(BIO_new_mem_buf(spec.issuer->cert_pem.data(), static_cast<int>(spec.issuer->cert_pem.size())));
        issuer_cert.reset(PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
        openssl_ptr<BIO> kb(BIO_new_mem_buf(spec.issuer->key_pem.data(), static_cast<int>(spec.issuer->key_pem.size())));
        issuer_key.reset(PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
        check(issuer_cert && issuer_key, "reading the issuer");
    }
    X509* signer = issuer_cert ? issuer_cert.get() : x.get();
    check(X509_set_issuer_name(x.get(), X509_get_subject_name(signer)) == 1, "issuer");
    if (!san.empty()) add_extension(x.get(), signer, NID_subject_alt_name, san);
    if (spec.ca) add_extension(x.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    check(X509_sign(x.get(), issuer_key ? issuer_key.get() : key.get(), EVP_sha256()) > 0, "X509_sign");

    test_cert out;
    openssl_ptr<BIO> cb(BIO_new(BIO_s_mem()));
    check(cb && PEM_write_bio_X509(cb.get(), x.get()) == 1, "PEM_write_bio_X509");
    out.cert_pem = bio_text(cb.get());
    openssl_ptr<BIO> kb(BIO_new(BIO_s_mem()));
    check(kb && PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "PEM_write_bio_PrivateKey");
    out.key_pem = bio_text(kb.get());
    return out;
}

/// The certificate most tests use: localhost and 127.0.0.1, self-signed.
inline const test_cert& loopback_cert() {
    static const test_cert c = make_cert("localhost", "DNS:localhost,IP:127.0.0.1");
    return c;
}

/// A server context presenting `c`.
inline asio::ssl::context server_context(const test_cert& c) {
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    ctx.use_certificate(asio::buffer(c.cert_pem), asio::ssl::context::pem);
    ctx.use_private_key(asio::buffer(c.key_pem), asio::ssl::context::pem);
    return ctx;
}

/// A client context that trusts `c` (and nothing else).
inline asio::ssl::context client_context(const test_cert& c) {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.add_certificate_authority(asio::buffer(c.cert_pem));
    return ctx;
}

} // namespace corows::test
