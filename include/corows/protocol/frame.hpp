// SPDX-License-Identifier: BSL-1.0
// The RFC 6455 §5 frame codec: decodes frames by position and encodes frame headers.
#pragma once

#include <corows/detail/byte_order.hpp>
#include <corows/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace corows {

/// Frame opcodes of RFC 6455 §5.2.
enum class opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

/// True for close, ping and pong.
constexpr bool is_control(opcode op) noexcept { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }

/// Which end of the connection this is; decides which frames must be masked.
enum class role : std::uint8_t { client, server };

/// The 4-byte masking key, in wire order.
using mask_key = std::array<std::uint8_t, 4>;

/// A decoded or to-be-encoded frame header.
struct frame_header {
    std::uint64_t payload_length = 0; ///< payload bytes (RFC 6455 §5.2: 7, 7+16 or 7+64 bits on the wire)
    mask_key key{}; ///< the masking key (meaningful when masked)
    opcode op = opcode::text; ///< the frame's opcode
    bool fin = true; ///< the final frame of its message
    bool rsv1 = false; ///< RSV1: the message is compressed (permessage-deflate, RFC 7692 §6)
    bool rsv2 = false; ///< RSV2: no extension here defines it
    bool rsv3 = false; ///< RSV3: no extension here defines it
    bool masked = false; ///< the payload is masked with key (every client frame, RFC 6455 §5.3)

    /// Field-by-field equality.
    friend bool operator==(const frame_header&, const frame_header&) = default;
};

/// What the receiver accepts; fixed per connection after the handshake.
struct frame_rules {
    role receiver = role::server;          ///< a server requires masked frames, a client forbids them
    bool allow_rsv1 = false;               ///< true once permessage-deflate is negotiated
    std::uint64_t max_frame_size = UINT64_MAX; ///< checked from the header alone
};

/// Outcome of decode_frame().
enum class decode_status : std::uint8_t {
    complete,  ///< header and whole payload are in the buffer
    partial,   ///< header is complete, `missing` payload bytes have not arrived yet
    need_more, ///< header incomplete: at least `missing` more bytes are needed
    failed,    ///< protocol violation; see `error`
};

/// Result of decode_frame(): positions are offsets into the buffer that was passed in.
struct decoded_frame {
    frame_header header; ///< the header (valid for complete and partial)
    std::size_t payload_pos = 0; ///< where the payload starts (valid for complete and partial)
    std::size_t next_pos = 0;    ///< where the next frame starts (valid for complete)
    std::uint64_t missing = 0;   ///< bytes still to arrive (partial and need_more)
    decode_status status = decode_status::need_more; ///< what the decoder could make of the bytes
    error err{};                 ///< the violation (failed only)
};

/// Largest header: 2 bytes, 8 of extended length, 4 of mask key.
inline constexpr std::size_t max_frame_header_size = 14;

namespace detail {

/// The complete decoder behind decode_frame(): same contract, also for incomplete headers
/// and violations, which it reports in header order from as few bytes as show them.
decoded_frame decode_frame_general(std::span<const std::uint8_t> buffer, std::size_t pos,
                                   const frame_rules& rules) noexcept;

/// For each first header byte, the bound the second one must stay under once its MASK bit
/// is flipped to 0 when it has the expected value: 128 for a data frame, 126 for a control
/// frame (FIN required, at most 125 bytes), 0 for reserved bits or opcodes. RSV1, when
/// allowed, is cleared before the lookup. One load and one compare check the whole of the
/// first two bytes.
inline constexpr std::array<std::uint8_t, 256> second_byte_bound = [] {
    std::array<std::uint8_t, 256> t{};
    for (unsigned b = 0; b < 256; ++b) {
        const unsigned op = b & 0x0Fu;
        const bool fin = (b & 0x80u) != 0;
        if ((b & 0x70u) != 0) continue;
        if (op <= 2) t[b] = 128;
        else if (op >= 8 && op <= 10 && fin) t[b] = 126;
    }
    return t;
}();

} // namespace detail

/// Decodes the frame starting at `buffer[pos]` under `rules`, without copying any byte.
/// Requires `pos <= buffer.size()`. For need_more, `missing` counts the header bytes still to
/// come as far as the bytes present tell; for partial, the payload bytes still to come.
// Inline so that a receive loop over many small frames costs a few dozen instructions per
// frame: a well-formed frame whose header is all present is decided here with one table
// lookup and a few compares, and everything else (short header, any violation) goes to the
// out-of-line general decoder, which alone decides which error to report. Forced inline
// because GCC declines otherwise. The result is built in one expression at the end: filling
// a local field by field and returning it made GCC copy it through the stack with narrow
// stores and wide loads, stalling store forwarding on every frame (3x slower).
[[gnu::always_inline]] inline decoded_frame decode_frame(std::span<const std::uint8_t> buffer,
                                                         std::size_t pos,
                                                         const frame_rules& rules) noexcept {
    const std::size_t size = buffer.size();
    if (pos >= size || size - pos < 2) [[unlikely]]
        return detail::decode_frame_general(buffer, pos, rules);
    const std::size_t avail = size - pos;
    const std::uint8_t* p = buffer.data() + pos;
    const unsigned b0 = p[0];
    const unsigned b1 = p[1];
    const unsigned len7 = b1 & 0x7Fu;
    const unsigned mask_bit = b1 & 0x80u;
    const unsigned want_mask_bit = rules.receiver == role::server ? 0x80u : 0u;
    const bool bad = (b1 ^ want_mask_bit) >=
                     detail::second_byte_bound[b0 & (rules.allow_rsv1 ? 0xBFu : 0xFFu)];
    std::size_t header_size = 2 + (mask_bit >> 5);
    std::uint64_t length = len7;
    if (len7 >= 126) [[unlikely]] {
        header_size += len7 == 126 ? 2 : 8;
        if (bad || avail < header_size)
            return detail::decode_frame_general(buffer, pos, rules);
        if (len7 == 126) {
            length = detail::load_big_endian<2>(p + 2);
            if (length < 126) return detail::decode_frame_general(buffer, pos, rules);
        } else {
            length = detail::load_big_endian<8>(p + 2);
            if (length < 0x10000 || (length >> 63) != 0)
                return detail::decode_frame_general(buffer, pos, rules);
        }
    }
    if (bad | (avail < header_size) | (length > rules.max_frame_size)) [[unlikely]]
        return detail::decode_frame_general(buffer, pos, rules);

    const bool masked = mask_bit != 0;
    mask_key key{};
    if (masked) std::memcpy(key.data(), p + header_size - 4, 4);
    const std::size_t payload_pos = pos + header_size;
    const std::uint64_t present = size - payload_pos;
    const bool complete = length <= present;
    return decoded_frame{
        frame_header{length, key, static_cast<opcode>(b0 & 0x0Fu), (b0 & 0x80u) != 0,
                     (b0 & 0x40u) != 0, false, false, masked},
        payload_pos,
        complete ? payload_pos + static_cast<std::size_t>(length) : 0,
        complete ? 0 : length - present,
        complete ? decode_status::complete : decode_status::partial,
        error{},
    };
}

/// A complete frame found by decode_frames(): where its payload lies (unmasked), how long it
/// is, and its first header byte. Two words, so that decode_frames() writes each with two
/// stores; trivial, so that an array of them costs nothing until decode_frames() fills it.
struct frame_ref {
    std::size_t payload_pos; ///< offset of the payload in the buffer
    /// The payload length in the low 56 bits (the payload is in memory, so it is shorter than
    /// 2^56 bytes), the first header byte in the high 8.
    std::uint64_t length_and_first_byte;

    /// The payload length.
    std::size_t payload_length() const noexcept {
        return static_cast<std::size_t>(length_and_first_byte & ((std::uint64_t{1} << 56) - 1));
    }
    /// FIN, RSV1-3 and the opcode, as on the wire.
    std::uint8_t first_byte() const noexcept { return static_cast<std::uint8_t>(length_and_first_byte >> 56); }
    /// The frame's opcode.
    opcode op() const noexcept { return static_cast<opcode>(first_byte() & 0x0Fu); }
    /// The FIN bit.
    bool fin() const noexcept { return (first_byte() & 0x80u) != 0; }
    /// The RSV1 bit (a compressed message's first frame, once permessage-deflate is on).
    bool rsv1() const noexcept { return (first_byte() & 0x40u) != 0; }
};

/// Decodes the complete frames from `buffer[pos]` on under `rules`, unmasks each payload in
/// place and describes it in `out`, in order, until `out` is full or a frame is incomplete or
/// breaks the rules; returns how many, with `pos` moved past them. decode_frame() at the new
/// `pos` tells what stopped it (or, for a frame of 2^56 bytes or more, that it is complete).
/// Requires `pos <= buffer.size()`. For many small frames in one packet this costs less per
/// frame than decode_frame() and apply_mask() one by one.
std::size_t decode_frames(std::span<std::uint8_t> buffer, std::size_t& pos, const frame_rules& rules,
                          std::span<frame_ref> out) noexcept;

namespace detail {
/// decode_frames() calling apply_mask() for each payload, as on a CPU without AVX2, whatever
/// this one has: tests cover both loops.
std::size_t decode_frames_portable(std::span<std::uint8_t> buffer, std::size_t& pos, const frame_rules& rules,
                                   std::span<frame_ref> out) noexcept;
} // namespace detail

/// Writes the header for `h` into `out` with the shortest length encoding and returns its
/// length (2 to 14 bytes). Requires `h.payload_length < 2^63`.
std::size_t encode_frame_header(const frame_header& h,
                                std::span<std::uint8_t, max_frame_header_size> out) noexcept;

} // namespace corows
