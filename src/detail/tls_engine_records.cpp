// SPDX-License-Identifier: BSL-1.0
// The engine's records once OpenSSL has let go (detach_openssl()): reading and checking
// what the peer sends through tls13_records, and the alerts and KeyUpdates that come with it.
// Writing stays beside OpenSSL's path in tls_engine.cpp, one branch each.
#include <corows/detail/byte_order.hpp>
#include <corows/detail/platform.hpp>
#include <corows/detail/tls_engine.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace corows::detail {

namespace {

// More records in a row without application data than this is a peer wasting our CPU
// (OpenSSL draws the same line).
constexpr unsigned max_records_without_data = 32;

} // namespace

tls_status tls_engine::fail(int reason, std::uint8_t alert) noexcept {
    broken_ = true;
    error_ = ERR_PACK(ERR_LIB_SSL, 0, reason);
    if (alert != 0 && !sent_close_) {
        // RFC 8446 §6: tell the peer why, as OpenSSL would; the caller sends it if it can.
        const std::uint8_t fatal[2] = {2, alert};
        sent_close_ = true;
        alert_sent_ = alert;
        try {
            records_->seal(fatal, tls_content::alert, out_);
        } catch (...) {
        }
    }
    return tls_status::failed;
}

std::span<const std::uint8_t> tls_engine::pending_input() noexcept {
    if (in_pos_ < in_.size()) {
        if (!loan_.empty()) {
            // A record split across socket reads: join it in the engine's buffer.
            try {
                in_.insert(in_.end(), loan_.begin(), loan_.end());
                loan_ = {};
            } catch (...) {
            }
        }
        return {in_.data() + in_pos_, in_.size() - in_pos_};
    }
    return loan_;
}

void tls_engine::consume_input(std::size_t n) noexcept {
    if (in_pos_ < in_.size()) {
        in_pos_ += n;
        if (in_pos_ == in_.size()) {
            std::vector<std::uint8_t>().swap(in_);
            in_pos_ = 0;
        }
        return;
    }
    loan_ = loan_.subspan(n);
}

tls_status tls_engine::read_records(std::span<std::uint8_t> out, std::size_t& n) noexcept {
    if (plain_pos_ < plain_.size()) {
        n = std::min(out.size(), plain_.size() - plain_pos_);
        std::memcpy(out.data(), plain_.data() + plain_pos_, n);
        plain_pos_ += n;
        if (plain_pos_ == plain_.size()) {
            OPENSSL_cleanse(plain_.data(), plain_.size());
            std::vector<std::uint8_t>().swap(plain_);
            plain_pos_ = 0;
        }
        return tls_status::done;
    }
    if (broken_) return tls_status::failed;
    if (peer_closed_) return tls_status::closed;
    auto& scratch = per_thread<std::array<std::uint8_t, tls13_records::max_plaintext + 1>, struct record_scratch>();
    for (;;) {
        const std::span<const std::uint8_t> in = pending_input();
        const std::size_t bound = tls13_records::plaintext_bound(in);
        const bool direct = out.size() >= bound;
        const std::span<std::uint8_t> to = direct ? out : std::span<std::uint8_t>(scratch);
        const tls13_opened r = records_->open(in, to);
        if (r.st == tls13_opened::status::need_more) {
            // The start of a record: kept, since the next loan replaces this one.
            if (!loan_.empty()) {
                try {
                    in_.insert(in_.end(), loan_.begin(), loan_.end());
                } catch (...) {
                    return fail(ERR_R_INTERNAL_ERROR, SSL_AD_INTERNAL_ERROR);
                }
                loan_ = {};
            }
            return tls_status::need_input;
        }
        if (r.st == tls13_opened::status::failed) return fail(r.reason, r.alert);
        consume_input(r.consumed);
        // RFC 8446 §5.1: nothing comes between the records of one handshake message.
        if (hs_head_size_ > 0 && r.type != tls_content::handshake)
            return fail(SSL_R_UNEXPECTED_RECORD, SSL_AD_UNEXPECTED_MESSAGE);
        const std::span<const std::uint8_t> content(to.data(), r.plaintext);
        if (r.type == tls_content::application_data && r.plaintext > 0) {
            records_without_data_ = 0;
            n = std::min(out.size(), r.plaintext);
            if (!direct) {
                std::memcpy(out.data(), scratch.data(), n);
                try {
                    plain_.assign(scratch.begin() + static_cast<std::ptrdiff_t>(n),
                                  scratch.begin() + static_cast<std::ptrdiff_t>(r.plaintext));
                } catch (...) {
                    OPENSSL_cleanse(scratch.data(), r.plaintext);
                    return fail(ERR_R_INTERNAL_ERROR, SSL_AD_INTERNAL_ERROR);
                }
                // The thread's scratch outlives the connection: no plaintext stays in it.
                OPENSSL_cleanse(scratch.data(), r.plaintext);
                plain_pos_ = 0;
            }
            return tls_status::done;
        }
        if (++records_without_data_ > max_records_without_data)
            return fail(r.type == tls_content::handshake ? SSL_R_TOO_MANY_KEY_UPDATES : SSL_R_RECORD_TOO_SMALL,
                        SSL_AD_UNEXPECTED_MESSAGE);
        if (r.type == tls_content::alert) {
            if (content.size() != 2) return fail(SSL_R_BAD_LENGTH, SSL_AD_DECODE_ERROR);
            if (content[1] == SSL_AD_CLOSE_NOTIFY) {
                peer_closed_ = true;
                return tls_status::closed;
            }
            // RFC 8446 §6: every alert but these two ends the connection, whatever its level.
            if (content[1] == SSL_AD_USER_CANCELLED) continue;
            broken_ = true;
            error_ = ERR_PACK(ERR_LIB_SSL, 0, SSL_AD_REASON_OFFSET + content[1]);
            return tls_status::failed;
        }
        if (r.type == tls_content::handshake) {
            if (auto st = handshake_record(content); st != tls_status::done) return st;
        }
    }
}

tls_status tls_engine::handshake_record(std::span<const std::uint8_t> content) noexcept {
    // After the handshake a client may send only KeyUpdate (RFC 8446 §4.6.3); a server also
    // NewSessionTicket (§4.6.1), which a client outside OpenSSL cannot use and skips. Messages
    // may share a record and run on into the next (§5.1), headers too; a KeyUpdate ends its
    // record, since the records after it are under the next key.
    if (content.empty()) return fail(SSL_R_BAD_HANDSHAKE_LENGTH, SSL_AD_DECODE_ERROR);
    while (!content.empty()) {
        if (hs_head_size_ < hs_head_.size()) {
            const std::size_t n = std::min(hs_head_.size() - hs_head_size_, content.size());
            std::memcpy(hs_head_.data() + hs_head_size_, content.data(), n);
            hs_head_size_ = static_cast<std::uint8_t>(hs_head_size_ + n);
            content = content.subspan(n);
            if (hs_head_size_ < hs_head_.size()) break; // the rest of the header comes next record
            hs_left_ = static_cast<std::uint32_t>(load_big_endian<3>(hs_head_.data() + 1));
            if (hs_head_[0] == 24) {
                if (hs_left_ != 1) return fail(SSL_R_BAD_KEY_UPDATE, SSL_AD_DECODE_ERROR);
            } else if (hs_head_[0] != 4 || !client_) {
                return fail(SSL_R_UNEXPECTED_MESSAGE, SSL_AD_UNEXPECTED_MESSAGE);
            }
            if (hs_left_ == 0) hs_head_size_ = 0;
            continue;
        }
        if (hs_head_[0] == 4) {
            const std::size_t n = std::min<std::size_t>(hs_left_, content.size());
            hs_left_ -= static_cast<std::uint32_t>(n);
            content = content.subspan(n);
            if (hs_left_ == 0) hs_head_size_ = 0;
            continue;
        }
        // The KeyUpdate's one byte of body.
        const std::uint8_t request = content[0];
        hs_head_size_ = 0;
        hs_left_ = 0;
        if (content.size() != 1) return fail(SSL_R_NOT_ON_RECORD_BOUNDARY, SSL_AD_UNEXPECTED_MESSAGE);
        if (request > 1) return fail(SSL_R_BAD_KEY_UPDATE, SSL_AD_ILLEGAL_PARAMETER);
        if (!records_->update_read_key()) return fail(ERR_R_INTERNAL_ERROR, SSL_AD_INTERNAL_ERROR);
        // Answered once, before our next record, however many requests came meanwhile.
        if (request == 1) key_update_owed_ = true;
        break;
    }
    return tls_status::done;
}

} // namespace corows::detail
