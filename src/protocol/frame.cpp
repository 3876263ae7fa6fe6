// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/frame.hpp>

#include <algorithm>

namespace corows {
namespace detail {

// Checks each rule as soon as the byte it depends on is present, in the order the bytes come,
// so a peer that sends garbage is refused after its first byte or two rather than after a
// whole header's worth of waiting.
decoded_frame decode_frame_general(std::span<const std::uint8_t> buffer, std::size_t pos,
                                   const frame_rules& rules) noexcept {
    decoded_frame f;
    const auto fail = [&f](error e) {
        f.status = decode_status::failed;
        f.err = e;
        return f;
    };
    const std::size_t avail = pos < buffer.size() ? buffer.size() - pos : 0;
    f.status = decode_status::need_more;
    if (avail == 0) {
        f.missing = 2;
        return f;
    }
    const std::uint8_t* p = buffer.data() + pos;

    const unsigned b0 = p[0];
    const unsigned op = b0 & 0x0Fu;
    f.header.fin = (b0 & 0x80u) != 0;
    f.header.rsv1 = (b0 & 0x40u) != 0;
    f.header.rsv2 = (b0 & 0x20u) != 0;
    f.header.rsv3 = (b0 & 0x10u) != 0;
    f.header.op = static_cast<opcode>(op);
    if (f.header.rsv2 || f.header.rsv3 || (f.header.rsv1 && !rules.allow_rsv1))
        return fail(error::reserved_bits);
    if (((0x0707u >> op) & 1u) == 0) return fail(error::reserved_opcode);
    const bool control = is_control(f.header.op);
    if (control && !f.header.fin) return fail(error::fragmented_control);
    if (avail < 2) {
        f.missing = 1;
        return f;
    }

    const unsigned b1 = p[1];
    const unsigned len7 = b1 & 0x7Fu;
    f.header.masked = (b1 & 0x80u) != 0;
    if (rules.receiver == role::server && !f.header.masked) return fail(error::mask_required);
    if (rules.receiver == role::client && f.header.masked) return fail(error::unexpected_mask);
    if (control && len7 > 125) return fail(error::control_too_big);

    const std::size_t ext = len7 < 126 ? 0 : (len7 == 126 ? 2 : 8);
    const std::size_t header_size = 2 + ext + (f.header.masked ? 4 : 0);
    // The extended length is judged on its leading bytes when that already decides it: a set
    // top bit, six zero bytes of a 64-bit length, or a prefix that is over the limit whatever
    // follows.
    const std::size_t have = std::min(avail - 2, ext);
    std::uint64_t prefix = 0;
    for (std::size_t i = 0; i < have; ++i) prefix = (prefix << 8) | p[2 + i];
    if (ext == 8 && have >= 1 && (p[2] & 0x80u) != 0) return fail(error::bad_length);
    if (ext == 8 && have >= 6 && (prefix >> (8 * (have - 6))) == 0) return fail(error::bad_length);
    if (ext == 2 && have == 2 && prefix < 126) return fail(error::bad_length);
    std::uint64_t lower_bound = len7;
    if (ext != 0) lower_bound = have == 0 ? 0 : prefix << (8 * (ext - have));
    if (lower_bound > rules.max_frame_size) return fail(error::frame_too_big);
    if (avail < header_size) {
        f.missing = header_size - avail;
        return f;
    }

    f.header.payload_length = lower_bound;
    if (f.header.masked) std::memcpy(f.header.key.data(), p + header_size - 4, 4);
    f.payload_pos = pos + header_size;
    const std::uint64_t present = avail - header_size;
    if (f.header.payload_length <= present) {
        f.status = decode_status::complete;
        f.next_pos = f.payload_pos + static_cast<std::size_t>(f.header.payload_length);
    } else {
        f.status = decode_status::partial;
        f.missing = f.header.payload_length - present;
    }
    return f;
}

} // namespace detail

std::size_t encode_frame_header(const frame_header& h,
                                std::span<std::uint8_t, max_frame_header_size> out) noexcept {
    out[0] = static_cast<std::uint8_t>((h.fin ? 0x80u : 0u) | (h.rsv1 ? 0x40u : 0u) |
                                       (h.rsv2 ? 0x20u : 0u) | (h.rsv3 ? 0x10u : 0u) |
                                       (static_cast<unsigned>(h.op) & 0x0Fu));
    const unsigned mask_bit = h.masked ? 0x80u : 0u;
    const std::uint64_t len = h.payload_length;
    std::size_t n;
    if (len < 126) {
        out[1] = static_cast<std::uint8_t>(mask_bit | len);
        n = 2;
    } else if (len <= 0xFFFF) {
        out[1] = static_cast<std::uint8_t>(mask_bit | 126u);
        detail::store_big_endian<2>(out.data() + 2, len);
        n = 4;
    } else {
        out[1] = static_cast<std::uint8_t>(mask_bit | 127u);
        detail::store_big_endian<8>(out.data() + 2, len);
        n = 10;
    }
    if (h.masked) {
        std::memcpy(out.data() + n, h.key.data(), 4);
        n += 4;
    }
    return n;
}

} // namespace corows
