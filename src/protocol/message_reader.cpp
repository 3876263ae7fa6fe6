// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/byte_order.hpp>
#include <corows/detail/shared_inflater.hpp>
#include <corows/protocol/mask.hpp>
#include <corows/protocol/message_reader.hpp>

#include <algorithm>
#include <cstdint>

namespace corows {
namespace {

read_result message_event() noexcept {
    read_result r;
    r.event = read_event::message;
    return r;
}

read_result progress_event(bool frame_ended = false) noexcept {
    read_result r;
    r.event = read_event::progress;
    r.frame_ended = frame_ended;
    return r;
}

read_result failure(std::error_code ec) noexcept {
    read_result r;
    r.event = read_event::failed;
    r.ec = ec;
    return r;
}

} // namespace

message_reader::message_reader(const reader_config& cfg) noexcept
    : max_message_size_(cfg.max_message_size) {
    rules_.receiver = cfg.local;
    // A frame can never be longer than the message it belongs to; compressed frames may be
    // a little longer than their inflated size (stored blocks), hence the slack. In 64 bits and
    // saturated (in size_t a limit near SIZE_MAX wrapped round to 64 MiB on 32-bit targets),
    // then capped at SIZE_MAX: no frame is longer than a size_t can count, compressed or not.
    const std::uint64_t limit = cfg.max_message_size;
    const std::uint64_t slack = limit / 64 + 1024;
    rules_.max_frame_size = std::min<std::uint64_t>(limit > UINT64_MAX - slack ? UINT64_MAX : limit + slack, SIZE_MAX);
}

void message_reader::enable_deflate(const deflate_direction& peer) noexcept {
    rules_.allow_rsv1 = true;
    inflate_window_bits_ = peer.window_bits;
    inflate_no_context_takeover_ = peer.no_context_takeover;
}

read_result message_reader::read(std::span<std::uint8_t> buffer, std::size_t& pos, message& out) {
    for (;;) {
        if (in_frame_) {
            auto avail = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, buffer.size() - pos));
            // Inflating costs more per byte than anything else here, and a peer chooses what
            // it costs: in steps, so the caller can yield between them.
            if (compressed_) avail = std::min(avail, inflate_step);
            if (avail == 0 && remaining_ > 0) return {};
            auto chunk = buffer.subspan(pos, avail);
            if (frame_.masked) {
                apply_mask(chunk, frame_.key, mask_offset_);
                mask_offset_ += avail;
            }
            pos += avail;
            remaining_ -= avail;
            if (auto ec = consume_payload(chunk, out)) return failure(ec);
            if (remaining_ > 0) return pos < buffer.size() ? progress_event() : read_result{};
            return end_of_frame(out);
        }

        decoded_frame f = decode_frame(buffer, pos, rules_);
        const frame_header& h = f.header;
        switch (f.status) {
        case decode_status::need_more: return {};
        case decode_status::failed: return failure(f.err);
        case decode_status::partial:
            // Control payloads are at most 125 bytes: wait for the whole frame.
            if (is_control(h.op)) return {};
            break;
        case decode_status::complete: {
            auto payload = buffer.subspan(f.payload_pos, static_cast<std::size_t>(h.payload_length));
            if (is_control(h.op)) {
                if (h.masked) apply_mask(payload, h.key);
                pos = f.next_pos;
                return control_event(h, payload);
            }
            // A whole unfragmented, uncompressed message: deliver it where it lies.
            if (h.fin && h.op != opcode::continuation && !h.rsv1 && !in_message_) {
                if (h.payload_length > max_message_size_) return failure(error::message_too_big);
                if (h.masked) apply_mask(payload, h.key);
                bool text = h.op == opcode::text;
                if (text && !is_valid_utf8(payload)) return failure(error::invalid_utf8);
                pos = f.next_pos;
                auto kind = text ? message_kind::text : message_kind::binary;
                detail::message_access::set_borrowed(out, kind, payload);
                return message_event();
            }
            break;
        }
        }
        if (auto ec = begin_data_frame(h, out)) return failure(ec);
        pos = f.payload_pos;
        if (remaining_ == 0) return end_of_frame(out);
    }
}

read_result message_reader::end_of_frame(message& out) {
    in_frame_ = false;
    // Each fragment returns to the caller: a peer's endless run of them must not keep one
    // read() call going.
    if (!frame_.fin) return progress_event(true);
    if (auto ec = finish_message(out)) return failure(ec);
    return message_event();
}

std::error_code message_reader::begin_data_frame(const frame_header& h, message& out) {
    if (h.op == opcode::continuation) {
        if (!in_message_) return error::bad_continuation;
        // RFC 7692 §6.1: only the first frame of a message carries RSV1.
        if (h.rsv1) return error::bad_compressed_frame;
    } else {
        if (in_message_) return error::expected_continuation;
        in_message_ = true;
        kind_ = h.op == opcode::text ? message_kind::text : message_kind::binary;
        compressed_ = h.rsv1;
        message_size_ = 0;
        detail::message_access::storage(out).clear();
        utf8_.reset();
    }
    message_size_ += h.payload_length;
    if (message_size_ > (compressed_ ? rules_.max_frame_size : max_message_size_))
        return error::message_too_big;
    frame_ = h;
    remaining_ = h.payload_length;
    mask_offset_ = 0;
    in_frame_ = true;
    return {};
}

std::error_code message_reader::consume_payload(std::span<std::uint8_t> chunk, message& out) {
    byte_buffer& storage = detail::message_access::storage(out);
    if (compressed_) {
        std::size_t before = storage.size();
        std::error_code ec;
        if (inflate_no_context_takeover_ && !inflater_ && remaining_ == 0 && frame_.fin) {
            // No earlier byte of this message was inflated and no later one will come: the
            // whole compressed message is in `chunk`, and the thread's shared inflater takes
            // it in one call. A message that spans reads gets its own stream below, until
            // finish_message() frees it.
            ec = detail::inflate_shared(chunk, inflate_window_bits_, storage, max_message_size_);
        } else {
            if (!inflater_) inflater_.emplace(inflate_window_bits_, inflate_no_context_takeover_);
            ec = inflater_->write(chunk, storage, max_message_size_);
        }
        if (ec) return ec;
        if (kind_ == message_kind::text && !utf8_.write(storage.data().subspan(before)))
            return error::invalid_utf8;
        return {};
    }
    if (kind_ == message_kind::text && !utf8_.write(chunk)) return error::invalid_utf8;
    storage.append(chunk);
    return {};
}

std::error_code message_reader::finish_message(message& out) {
    byte_buffer& storage = detail::message_access::storage(out);
    if (compressed_ && inflater_) {
        std::size_t before = storage.size();
        if (auto ec = inflater_->finish(storage, max_message_size_)) return ec;
        if (kind_ == message_kind::text && !utf8_.write(storage.data().subspan(before)))
            return error::invalid_utf8;
        // Without context takeover nothing carries over: keep no memory between messages.
        if (inflate_no_context_takeover_) inflater_.reset();
    }
    if (kind_ == message_kind::text && !utf8_.finish()) return error::invalid_utf8;
    in_message_ = false;
    detail::message_access::set_owned(out, kind_, compressed_);
    return {};
}

read_result message_reader::control_event(const frame_header& h, std::span<std::uint8_t> payload) {
    if (h.rsv1) return failure(error::bad_compressed_frame);
    read_result r;
    r.payload = payload;
    switch (h.op) {
    case opcode::ping: r.event = read_event::ping; return r;
    case opcode::pong: r.event = read_event::pong; return r;
    default: break;
    }
    r.event = read_event::close;
    if (payload.empty()) {
        r.code = static_cast<std::uint16_t>(close_code::no_status);
        return r;
    }
    if (payload.size() == 1) return failure(error::bad_close_payload);
    r.code = static_cast<std::uint16_t>(detail::load_big_endian<2>(payload.data()));
    if (!is_sendable_close_code(r.code)) return failure(error::bad_close_code);
    auto reason = payload.subspan(2);
    if (!is_valid_utf8(reason)) return failure(error::invalid_utf8);
    r.reason = {reinterpret_cast<const char*>(reason.data()), reason.size()};
    return r;
}

} // namespace corows
