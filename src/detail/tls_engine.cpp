// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>
#include <corows/detail/tls_engine.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace corows::detail {

namespace {

tls_engine* engine_of(BIO* b) noexcept { return static_cast<tls_engine*>(BIO_get_data(b)); }

int bio_read_cb(BIO* b, char* to, int size) {
    BIO_clear_retry_flags(b);
    int n = engine_of(b)->bio_read(to, size);
    if (n < 0) BIO_set_retry_read(b);
    return n;
}

int bio_write_cb(BIO* b, const char* from, int size) {
    BIO_clear_retry_flags(b);
    try {
        return engine_of(b)->bio_write(from, size);
    } catch (...) {
        return -1; // out of memory: OpenSSL reports the write as failed
    }
}

long bio_ctrl_cb(BIO*, int cmd, long, void*) {
    // OpenSSL flushes after each flight; the output vector needs no flush. Everything else
    // (kTLS, datagram and pending queries) this BIO does not do.
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create_cb(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
}

int bio_destroy_cb(BIO*) { return 1; }

// One method table for every engine, made on first use.
const BIO_METHOD* engine_bio_method() {
    static const BIO_METHOD* method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "corows tls_engine");
        if (!m) throw std::runtime_error("OpenSSL: BIO_meth_new failed");
        BIO_meth_set_read(m, bio_read_cb);
        BIO_meth_set_write(m, bio_write_cb);
        BIO_meth_set_ctrl(m, bio_ctrl_cb);
        BIO_meth_set_create(m, bio_create_cb);
        BIO_meth_set_destroy(m, bio_destroy_cb);
        return m;
    }();
    return method;
}

// Where each SSL keeps its engine, for the key log callback.
int engine_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

void key_log_cb(const SSL* ssl, const char* line) {
    if (auto* e = static_cast<tls_engine*>(SSL_get_ex_data(ssl, engine_index()))) e->key_logged(line);
}

// OpenSSL tells of the alerts it writes only through an info callback. One set on the SSL
// object replaces the context's for it, so a context's own callback is called from here.
void info_cb(const SSL* ssl, int where, int ret) {
    if ((where & SSL_CB_WRITE_ALERT) == SSL_CB_WRITE_ALERT && (ret >> 8) == SSL3_AL_FATAL)
        if (auto* e = static_cast<tls_engine*>(SSL_get_ex_data(ssl, engine_index())))
            e->fatal_alert_written(static_cast<std::uint8_t>(ret & 0xff));
    if (auto* ctx_cb = SSL_CTX_get_info_callback(SSL_get_SSL_CTX(ssl))) ctx_cb(ssl, where, ret);
}

// The traffic secrets reach an application only through the context's key log callback.
// corows sets it on a context that has none; a context that logs keys elsewhere (for a
// packet capture, say) keeps its callback, and its connections stay within OpenSSL.
bool install_key_log(SSL_CTX* ctx) {
    static std::mutex m;
    std::lock_guard lock(m);
    const auto current = SSL_CTX_get_keylog_callback(ctx);
    if (current == nullptr) SSL_CTX_set_keylog_callback(ctx, key_log_cb);
    return current == nullptr || current == key_log_cb;
}

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Records OpenSSL handles after the handshake before the connection gives it up: the HTTP
// upgrade's one or two. Past this many, tracking them costs more than it would save.
constexpr std::uint64_t max_tracked_records = 64;

std::span<const std::uint8_t> bytes(const std::vector<std::uint8_t>& v) noexcept { return {v.data(), v.size()}; }

// True if `content`, a handshake record's, is whole NewSessionTickets only: all the records
// may have carried when they leave OpenSSL. A KeyUpdate changed a key, and a CertificateRequest
// or a message that runs on into the next record is state OpenSSL would have to keep.
bool only_whole_tickets(std::span<const std::uint8_t> content) noexcept {
    while (!content.empty()) {
        if (content.size() < 4 || content[0] != 4) return false;
        const auto length = static_cast<std::size_t>(load_big_endian<3>(content.data() + 1));
        if (content.size() - 4 < length) return false;
        content = content.subspan(4 + length);
    }
    return true;
}

// The most content OpenSSL puts in a record of this connection: 16 KiB, or what a
// max_fragment_length extension (RFC 6066 §4) negotiated.
std::size_t negotiated_fragment(const SSL* ssl) noexcept {
    const SSL_SESSION* session = SSL_get_session(ssl);
    const unsigned code = session ? SSL_SESSION_get_max_fragment_length(session) : 0;
    return code >= TLSEXT_max_fragment_length_512 && code <= TLSEXT_max_fragment_length_4096 ? 256u << code
                                                                                            : tls13_records::max_plaintext;
}

} // namespace

tls_engine::tls_engine(ssl_ctx_st* ctx) {
    ssl_ = SSL_new(ctx);
    if (!ssl_) throw std::runtime_error("OpenSSL: SSL_new failed");
    BIO* bio = BIO_new(engine_bio_method());
    if (!bio) {
        SSL_free(ssl_);
        throw std::runtime_error("OpenSSL: BIO_new failed");
    }
    BIO_set_data(bio, this);
    SSL_set_bio(ssl_, bio, bio); // one reference, owned by ssl_
    const bool indexed = SSL_set_ex_data(ssl_, engine_index(), this) == 1;
    if (indexed) SSL_set_info_callback(ssl_, info_cb);
    detach_possible_ = install_key_log(ctx) && indexed;
}

tls_engine::detach_state::~detach_state() {
    OPENSSL_cleanse(client_secret.bytes.data(), client_secret.bytes.size());
    OPENSSL_cleanse(server_secret.bytes.data(), server_secret.bytes.size());
}

void tls_engine::release_buffers() noexcept {
    // Fails, harmlessly, while a buffer holds data: then the connection is not idle.
    if (ssl_) SSL_free_buffers(ssl_);
}

tls_engine::~tls_engine() {
    SSL_free(ssl_);
    OPENSSL_cleanse(plain_.data(), plain_.size());
}

void tls_engine::set_server(bool server, bool client_may_detach) noexcept {
    if (server) SSL_set_accept_state(ssl_);
    else SSL_set_connect_state(ssl_);
    client_ = !server;
    if (!server && !client_may_detach) {
        forgo_detach();
    } else if (detach_possible_ && !detach_) {
        try {
            detach_ = std::make_unique<detach_state>();
        } catch (...) {
            detach_possible_ = false;
        }
        // Read-ahead takes records from the BIO before OpenSSL opens them, so the records it
        // was given are not the records it read; our BIO serves memory, where it gains nothing.
        SSL_set_read_ahead(ssl_, 0);
    }
}

void tls_engine::key_logged(const char* line) noexcept {
    if (!detach_) return;
    const std::string_view l(line);
    const auto space = l.find(' ');
    const std::string_view label = l.substr(0, space);
    tls13_secret* to = label == "CLIENT_TRAFFIC_SECRET_0"   ? &detach_->client_secret
                       : label == "SERVER_TRAFFIC_SECRET_0" ? &detach_->server_secret
                                                            : nullptr;
    if (!to || space == std::string_view::npos) return;
    // "<label> <client random, 64 hex digits> <secret in hex>"
    const auto second = l.find(' ', space + 1);
    if (second == std::string_view::npos) return;
    const std::string_view hex = l.substr(second + 1);
    if (hex.size() % 2 != 0 || hex.size() / 2 > to->bytes.size()) return;
    for (std::size_t i = 0; i < hex.size() / 2; ++i) {
        const int hi = hex_value(hex[2 * i]);
        const int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return;
        to->bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    to->size = hex.size() / 2;
}

void tls_engine::record_tracker::feed(std::span<const std::uint8_t> data) {
    while (!data.empty()) {
        const std::size_t n = std::min(need, data.size());
        current.insert(current.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
        data = data.subspan(n);
        need -= n;
        if (need > 0) return;
        if (current.size() == 5) {
            need = tls13_records::record_size(current) - 5;
            if (need > 0) continue;
        }
        ++count;
        last.swap(current);
        current.clear();
        need = 5;
    }
}

bool tls_engine::detach_openssl() noexcept {
    if (records_) return true;
    if (!detach_possible_ || !detach_ || !detach_->handshake_done || broken_) return false;
    auto& d = *detach_;
    // OpenSSL must hold no byte of a record (what it has not read stays with the engine) and
    // nothing it still has to do: a KeyUpdate to send, a post-handshake message under way (a
    // CertificateRequest, a message cut at its record's end).
    if (!d.in.at_boundary() || !d.out.at_boundary() || SSL_has_pending(ssl_) || SSL_get_shutdown(ssl_) != 0 ||
        SSL_get_key_update_type(ssl_) != SSL_KEY_UPDATE_NONE || !SSL_is_init_finished(ssl_))
        return false;
    const auto give_up = [this] {
        detach_possible_ = false;
        detach_.reset();
        return false;
    };
    tls13_suite suite;
    switch (SSL_CIPHER_get_id(SSL_get_current_cipher(ssl_))) {
    case 0x03001301: suite = tls13_suite::aes_128_gcm_sha256; break;
    case 0x03001302: suite = tls13_suite::aes_256_gcm_sha384; break;
    case 0x03001303: suite = tls13_suite::chacha20_poly1305_sha256; break;
    default: return give_up();
    }
    const std::size_t secret_size = suite == tls13_suite::aes_256_gcm_sha384 ? 48 : 32;
    if (SSL_version(ssl_) != TLS1_3_VERSION || SSL_get_read_ahead(ssl_) || d.client_secret.size != secret_size ||
        d.server_secret.size != secret_size)
        return give_up();
    const tls13_secret& read_secret = client_ ? d.server_secret : d.client_secret;
    const tls13_secret& write_secret = client_ ? d.client_secret : d.server_secret;
    const std::uint64_t reads = d.in.count - d.in_at_done;
    const std::uint64_t writes = d.out.count - d.out_at_done;
    try {
        // The last record each way must open under the key and sequence number we derive: a
        // mistake in either (a KeyUpdate OpenSSL handled, say) keeps the connection in OpenSSL
        // rather than break it.
        std::vector<std::uint8_t> scratch(tls13_records::max_ciphertext);
        // What it opened (the upgrade, say) is nobody's business once the check is done.
        struct wipe {
            std::vector<std::uint8_t>& v;
            ~wipe() { OPENSSL_cleanse(v.data(), v.size()); }
        } wiped{scratch};
        if (writes > 0) {
            auto check = tls13_records::make(suite, write_secret, write_secret, writes - 1, 0);
            if (!check) return give_up();
            // Tickets are handshake records too; anything else among them stays with OpenSSL.
            auto r = check->open(bytes(d.out.last), scratch);
            // Padding (SSL_CTX_set_record_padding_callback, block padding) is not ours to copy.
            if (r.st != tls13_opened::status::record || r.consumed != r.plaintext + tls13_records::overhead ||
                (r.type == tls_content::handshake && !only_whole_tickets({scratch.data(), r.plaintext})))
                return give_up();
        }
        auto records = tls13_records::make(suite, read_secret, write_secret, reads > 0 ? reads - 1 : 0, writes);
        if (!records) return give_up();
        records->limit_fragment(negotiated_fragment(ssl_));
        if (reads > 0) {
            auto r = records->open(bytes(d.in.last), scratch);
            if (r.st != tls13_opened::status::record ||
                (r.type == tls_content::handshake && !only_whole_tickets({scratch.data(), r.plaintext})))
                return give_up();
        }
        records_ = std::move(records);
    } catch (...) {
        return give_up();
    }
    detach_.reset();
    SSL_free(ssl_);
    ssl_ = nullptr;
    return true;
}

tls_status tls_engine::result(int ret) noexcept {
    switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
        return tls_status::need_input;
    case SSL_ERROR_ZERO_RETURN:
        return tls_status::closed;
    default:
        broken_ = true; // OpenSSL sent its alert, if any, and takes no close_notify after it
        error_ = ERR_get_error();
        // A failure OpenSSL put no code on (it should not happen with this BIO) still fails.
        if (error_ == 0) error_ = ERR_PACK(ERR_LIB_SSL, 0, SSL_R_UNEXPECTED_RECORD);
        ERR_clear_error();
        return tls_status::failed;
    }
}

tls_status tls_engine::handshake() noexcept {
    if (records_) return tls_status::done;
    ERR_clear_error();
    if (detach_ && !detach_->handshake_done) detach_->out_at_done = detach_->out.count;
    int ret = SSL_do_handshake(ssl_);
    if (ret != 1) return result(ret);
    if (detach_ && !detach_->handshake_done) {
        detach_->handshake_done = true;
        detach_->in_at_done = detach_->in.count;
        // A server's last step may write tickets under the new keys; a client's ends with its
        // Finished, under the old.
        if (client_) detach_->out_at_done = detach_->out.count;
    }
    return tls_status::done;
}

tls_status tls_engine::read(std::span<std::uint8_t> out, std::size_t& n) noexcept {
    n = 0;
    if (records_) return read_records(out, n);
    ERR_clear_error();
    int ret = SSL_read_ex(ssl_, out.data(), out.size(), &n);
    return ret == 1 ? tls_status::done : result(ret);
}

tls_status tls_engine::write(std::span<const std::uint8_t> data) noexcept {
    if (records_) {
        if (sent_close_ || broken_) {
            error_ = ERR_PACK(ERR_LIB_SSL, 0, SSL_R_PROTOCOL_IS_SHUTDOWN);
            return tls_status::failed;
        }
        try {
            if (key_update_owed_) {
                const std::uint8_t key_update[5] = {24, 0, 0, 1, 0};
                if (!records_->seal(key_update, tls_content::handshake, out_) || !records_->update_write_key())
                    return fail(ERR_R_INTERNAL_ERROR, SSL_AD_INTERNAL_ERROR);
                key_update_owed_ = false;
            }
            if (!records_->seal(data, tls_content::application_data, out_))
                return fail(ERR_R_INTERNAL_ERROR, SSL_AD_INTERNAL_ERROR);
        } catch (...) {
            error_ = ERR_PACK(ERR_LIB_SSL, 0, ERR_R_MALLOC_FAILURE);
            return tls_status::failed;
        }
        return tls_status::done;
    }
    ERR_clear_error();
    const std::size_t total = data.size();
    const std::size_t before = out_.size();
    std::size_t written = 0;
    while (!data.empty()) {
        int ret = SSL_write_ex(ssl_, data.data(), data.size(), &written);
        if (ret != 1) return result(ret);
        data = data.subspan(written);
    }
    if (detach_ && detach_->handshake_done && total > 0) {
        // The records must be what tls13_records would have sealed, or the connection stays
        // in OpenSSL: a context's max_send_fragment, split_send_fragment or record padding,
        // which OpenSSL has no getter for, shows here (so does a KeyUpdate it sent).
        const std::size_t fragment = negotiated_fragment(ssl_);
        if (out_.size() - before != total + (total + fragment - 1) / fragment * tls13_records::overhead)
            forgo_detach();
    }
    return tls_status::done;
}

tls_status tls_engine::shutdown() noexcept {
    if (records_) {
        if (sent_close_) return tls_status::done;
        sent_close_ = true;
        const std::uint8_t close_notify[2] = {1, SSL_AD_CLOSE_NOTIFY};
        try {
            if (!records_->seal(close_notify, tls_content::alert, out_)) return fail(ERR_R_INTERNAL_ERROR, 0);
        } catch (...) {
            return fail(ERR_R_INTERNAL_ERROR, 0);
        }
        return tls_status::done;
    }
    ERR_clear_error();
    int ret = SSL_shutdown(ssl_);
    return ret >= 0 ? tls_status::done : result(ret);
}

bool tls_engine::may_close_notify() const noexcept {
    if (broken_) return false;
    if (records_) return !sent_close_;
    return SSL_is_init_finished(ssl_) && (SSL_get_shutdown(ssl_) & SSL_SENT_SHUTDOWN) == 0;
}

void tls_engine::settle() {
    if (!loan_.empty()) {
        // Kept behind what in_ still holds (in_ is read first, so it is empty whenever a new
        // loan was taken; the append covers a caller that lent early).
        in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_pos_));
        in_pos_ = 0;
        in_.insert(in_.end(), loan_.begin(), loan_.end());
    }
    loan_ = {};
}

std::vector<std::uint8_t> tls_engine::take_output() noexcept {
    std::vector<std::uint8_t> out;
    out.swap(out_);
    return out;
}

bool tls_engine::has_buffered_input() const noexcept {
    if (!ssl_) {
        // A partial record is not input read() can use: the caller must wait for the rest.
        const auto whole = [](std::span<const std::uint8_t> b) {
            const std::size_t n = tls13_records::record_size(b);
            return n != 0 && b.size() >= n;
        };
        return plain_pos_ < plain_.size() || broken_ || peer_closed_ ||
               whole({in_.data() + in_pos_, in_.size() - in_pos_}) || whole(loan_);
    }
    return SSL_pending(ssl_) > 0 || in_pos_ < in_.size() || !loan_.empty();
}

int tls_engine::bio_read(char* to, int size) noexcept {
    const int n = bio_read_raw(to, size);
    if (n > 0 && detach_) track(detach_->in, {reinterpret_cast<const std::uint8_t*>(to), static_cast<std::size_t>(n)});
    return n;
}

void tls_engine::track(record_tracker& t, std::span<const std::uint8_t> data) noexcept {
    try {
        t.feed(data);
    } catch (...) {
        detach_possible_ = false;
    }
    if (detach_->handshake_done && t.count > max_tracked_records) detach_possible_ = false;
    if (!detach_possible_) detach_.reset();
}

int tls_engine::bio_read_raw(char* to, int size) noexcept {
    if (size <= 0) return 0;
    auto want = static_cast<std::size_t>(size);
    if (in_pos_ < in_.size()) {
        std::size_t n = std::min(want, in_.size() - in_pos_);
        std::memcpy(to, in_.data() + in_pos_, n);
        in_pos_ += n;
        if (in_pos_ == in_.size()) {
            // Consumed: the leftover's memory goes back rather than stay with an idle connection.
            std::vector<std::uint8_t>().swap(in_);
            in_pos_ = 0;
        }
        return static_cast<int>(n);
    }
    if (loan_.empty()) return -1;
    std::size_t n = std::min(want, loan_.size());
    std::memcpy(to, loan_.data(), n);
    loan_ = loan_.subspan(n);
    return static_cast<int>(n);
}

int tls_engine::bio_write(const char* from, int size) {
    if (size <= 0) return 0;
    out_.insert(out_.end(), from, from + size);
    if (detach_) track(detach_->out, {reinterpret_cast<const std::uint8_t*>(from), static_cast<std::size_t>(size)});
    return size;
}

} // namespace corows::detail
