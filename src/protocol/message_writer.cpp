// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/protocol/mask.hpp>
#include <corows/protocol/message_writer.hpp>

#include <random>

namespace corows {

message_writer::message_writer(const writer_config& cfg) : frame_size_(cfg.frame_size), role_(cfg.local) {
    if (role_ == role::client) {
        // RFC 6455 §5.3 wants unpredictable keys. A per-connection xorshift128+ seeded from
        // the OS keeps that without a syscall or 5 KB of mt19937 state per connection.
        std::random_device rd;
        for (auto& s : rng_) s = (std::uint64_t{rd()} << 32) ^ rd();
        if ((rng_[0] | rng_[1]) == 0) rng_[0] = 0x9E3779B97F4A7C15ull;
    }
}

void message_writer::enable_deflate(const deflate_config& d) noexcept {
    deflate_cfg_ = d;
    deflate_enabled_ = true;
}

mask_key message_writer::next_key() noexcept {
    std::uint64_t s1 = rng_[0];
    const std::uint64_t s0 = rng_[1];
    rng_[0] = s0;
    s1 ^= s1 << 23;
    rng_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    std::uint64_t v = rng_[1] + s0;
    return {static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 32),
            static_cast<std::uint8_t>(v >> 40), static_cast<std::uint8_t>(v >> 48)};
}

std::size_t message_writer::frame_header_for(std::span<std::uint8_t, max_frame_header_size> out,
                                             opcode op, bool fin, bool rsv1, std::uint64_t length,
                                             mask_key& key) {
    frame_header h;
    h.op = op;
    h.fin = fin;
    h.rsv1 = rsv1;
    h.payload_length = length;
    h.masked = role_ == role::client;
    if (h.masked) h.key = next_key();
    key = h.key;
    return encode_frame_header(h, out);
}

void message_writer::append_frame(byte_buffer& out, opcode op, bool fin, bool rsv1,
                                  std::span<const std::uint8_t> payload) {
    auto dst = out.prepare(max_frame_header_size + payload.size());
    mask_key key;
    std::size_t n = frame_header_for(dst.first<max_frame_header_size>(), op, fin, rsv1, payload.size(), key);
    if (!payload.empty()) {
        std::memcpy(dst.data() + n, payload.data(), payload.size());
        if (role_ == role::client) apply_mask(dst.subspan(n, payload.size()), key);
    }
    out.commit(n + payload.size());
}

std::error_code message_writer::append_message(byte_buffer& out, message_kind kind,
                                               std::span<const std::uint8_t> payload,
                                               bool allow_compress) {
    bool rsv1 = would_compress(payload.size(), allow_compress);
    if (rsv1 && deflate_cfg_.send.no_context_takeover) {
        detail::shared_deflate_settings s;
        s.window_bits = deflate_cfg_.send.window_bits;
        s.level = deflate_cfg_.level;
        s.mem_level = deflate_cfg_.mem_level;
        // Fragmented messages stay with zlib (see detail::shared_deflate_settings).
        s.use_libdeflate = deflate_cfg_.use_libdeflate && frame_size_ == 0;
        s.final_block = deflate_cfg_.final_block;
        std::error_code ec;
        payload = detail::compress_shared(payload, s, ec);
        if (ec) return ec;
    } else if (rsv1) {
        if (!deflater_)
            deflater_.emplace(deflate_cfg_.send.window_bits, deflate_cfg_.send.no_context_takeover,
                              deflate_cfg_.level, deflate_cfg_.mem_level);
        std::error_code ec;
        payload = deflater_->compress(payload, ec);
        if (ec) return ec;
    }
    opcode op = data_opcode(kind);
    if (frame_size_ == 0 || payload.size() <= frame_size_) {
        append_frame(out, op, true, rsv1, payload);
        last_frames_ = 1;
        return {};
    }
    std::uint32_t frames = 1;
    while (payload.size() > frame_size_) {
        append_frame(out, op, false, rsv1, payload.first(frame_size_));
        payload = payload.subspan(frame_size_);
        op = opcode::continuation;
        rsv1 = false;
        ++frames;
    }
    append_frame(out, op, true, false, payload);
    last_frames_ = frames;
    return {};
}

void message_writer::append_control(byte_buffer& out, opcode op, std::span<const std::uint8_t> payload) {
    if (payload.size() > 125) payload = payload.first(125);
    append_frame(out, op, true, false, payload);
}

void message_writer::append_close(byte_buffer& out, std::uint16_t code, std::string_view reason) {
    std::uint8_t body[125];
    std::size_t n = 0;
    if (code != 0) {
        detail::store_big_endian<2>(body, code);
        reason = truncate_utf8(reason, max_close_reason);
        if (!reason.empty()) std::memcpy(body + 2, reason.data(), reason.size());
        n = 2 + reason.size();
    }
    append_frame(out, opcode::close, true, false, {body, n});
}

std::string_view truncate_utf8(std::string_view reason, std::size_t limit) noexcept {
    if (reason.size() <= limit) return reason;
    std::size_t n = limit;
    // Back up over continuation bytes so the cut lands on a sequence boundary.
    while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;
    return reason.substr(0, n);
}

} // namespace corows
