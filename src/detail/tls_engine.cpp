#include <corows/detail/tls_engine.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

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
}

void tls_engine::release_buffers() noexcept {
    // Fails, harmlessly, while a buffer holds data: then the connection is not idle.
    SSL_free_buffers(ssl_);
}

tls_engine::~tls_engine() { SSL_free(ssl_); }

void tls_engine::set_server(bool server) noexcept {
    if (server) SSL_set_accept_state(ssl_);
    else SSL_set_connect_state(ssl_);
}

tls_status tls_engine::result(int ret) noexcept {
    switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
        return tls_status::need_input;
    case SSL_ERROR_ZERO_RETURN:
        return tls_status::closed;
    default:
        error_ = ERR_get_error();
        // A failure OpenSSL put no code on (it should not happen with this BIO) still fails.
        if (error_ == 0) error_ = ERR_PACK(ERR_LIB_SSL, 0, SSL_R_UNEXPECTED_RECORD);
        ERR_clear_error();
        return tls_status::failed;
    }
}

tls_status tls_engine::handshake() noexcept {
    ERR_clear_error();
    int ret = SSL_do_handshake(ssl_);
    return ret == 1 ? tls_status::done : result(ret);
}

tls_status tls_engine::read(std::span<std::uint8_t> out, std::size_t& n) noexcept {
    ERR_clear_error();
    n = 0;
    int ret = SSL_read_ex(ssl_, out.data(), out.size(), &n);
    return ret == 1 ? tls_status::done : result(ret);
}

tls_status tls_engine::write(std::span<const std::uint8_t> data) noexcept {
    ERR_clear_error();
    std::size_t written = 0;
    while (!data.empty()) {
        int ret = SSL_write_ex(ssl_, data.data(), data.size(), &written);
        if (ret != 1) return result(ret);
        data = data.subspan(written);
    }
    return tls_status::done;
}

tls_status tls_engine::shutdown() noexcept {
    ERR_clear_error();
    int ret = SSL_shutdown(ssl_);
    return ret >= 0 ? tls_status::done : result(ret);
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
    return SSL_pending(ssl_) > 0 || in_pos_ < in_.size() || !loan_.empty();
}

int tls_engine::bio_read(char* to, int size) noexcept {
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
    return size;
}

} // namespace corows::detail
