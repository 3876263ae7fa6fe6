// The RFC 6455 §5 frame codec: decodes frames by position and encodes frame headers.
#pragma once

#include <corows/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
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
    std::uint64_t payload_length = 0;
    mask_key key{};
    opcode op = opcode::text;
    bool fin = true;
    bool rsv1 = false;
    bool rsv2 = false;
    bool rsv3 = false;
    bool masked = false;
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
    frame_header header;
    std::size_t payload_pos = 0; ///< where the payload starts (valid for complete and partial)
    std::size_t next_pos = 0;    ///< where the next frame starts (valid for complete)
    std::uint64_t missing = 0;   ///< bytes still to arrive (partial and need_more)
    decode_status status = decode_status::need_more;
    error err{};                 ///< the violation (failed only)
};

/// Largest header: 2 bytes, 8 of extended length, 4 of mask key.
inline constexpr std::size_t max_frame_header_size = 14;

/// Decodes the frame starting at `buffer[pos]` under `rules`, without copying any byte.
decoded_frame decode_frame(std::span<const std::uint8_t> buffer, std::size_t pos,
                           const frame_rules& rules) noexcept;

/// Writes the header for `h` into `out` and returns its length (2 to 14 bytes).
std::size_t encode_frame_header(const frame_header& h,
                                std::span<std::uint8_t, max_frame_header_size> out) noexcept;

} // namespace corows
