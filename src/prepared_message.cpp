// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/shared_compressor.hpp>
#include <corows/prepared_message.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/message_writer.hpp>

#include <array>

namespace corows {

namespace {

// Appends one unmasked final frame of `payload` to `out`; returns the header's length.
std::size_t append_server_frame(byte_buffer& out, opcode op, bool rsv1, std::span<const std::uint8_t> payload) {
    frame_header h;
    h.op = op;
    h.fin = true;
    h.rsv1 = rsv1;
    h.payload_length = payload.size();
    std::array<std::uint8_t, max_frame_header_size> head;
    std::size_t n = encode_frame_header(h, head);
    out.append({head.data(), n});
    out.append(payload);
    return n;
}

} // namespace

prepared_message::prepared_message(std::span<const std::uint8_t> payload, message_kind kind, int level,
                                   int mem_level)
    : kind_(kind), level_(level), mem_level_(mem_level) {
    header_ = append_server_frame(frame_, data_opcode(kind), false, payload);
}

std::span<const std::uint8_t> prepared_message::deflated_frame(int window_bits) const {
    window_bits = clamp_window_bits(window_bits);
    deflated& d = deflated_[slot(window_bits)];
    std::call_once(d.once, [&] {
        detail::shared_deflate_settings settings;
        settings.window_bits = window_bits;
        settings.level = level_;
        settings.mem_level = mem_level_;
        std::error_code ec;
        auto compressed = detail::compress_shared(payload(), settings, ec);
        if (!ec) d.header = append_server_frame(d.frame, data_opcode(kind_), true, compressed);
    });
    return d.frame.data();
}

} // namespace corows
