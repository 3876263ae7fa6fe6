// SPDX-License-Identifier: BSL-1.0
// The send side of a connection, sans I/O: messages in, encoded frames appended to a buffer.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace corows {

/// Settings for the send side of one connection.
struct writer_config {
    role local = role::server;     ///< clients mask every frame
    std::size_t frame_size = 0;    ///< fragment messages into frames of this payload size; 0: never
};

/// Largest close frame payload: the 2-byte code and 123 bytes of reason.
inline constexpr std::size_t max_close_reason = 123;

/// The opcode of a data message's first frame.
constexpr opcode data_opcode(message_kind kind) noexcept {
    return kind == message_kind::text ? opcode::text : opcode::binary;
}

/// Encodes frames: headers, client masking with fresh keys, compression and fragmentation.
class message_writer {
public:
    /// A writer for `cfg`; compression stays off until enable_deflate().
    explicit message_writer(const writer_config& cfg);

    /// Compresses messages from now on, as `d.send` and the settings in `d` say. With context
    /// takeover the writer's own deflater is created at the first compressed message;
    /// without, every message comes from the thread's shared compressor
    /// (detail::compress_shared()) and the writer holds no deflate state.
    void enable_deflate(const deflate_config& d) noexcept;

    /// The configuration given to enable_deflate() (meaningful once it was called).
    const deflate_config& deflate_settings() const noexcept { return deflate_cfg_; }

    /// True if a message of `size` bytes would be compressed when `allow` is set.
    bool would_compress(std::size_t size, bool allow) const noexcept {
        return allow && deflate_enabled_ && size >= deflate_cfg_.threshold;
    }

    /// Appends every frame of a data message to `out`; compresses when would_compress().
    std::error_code append_message(byte_buffer& out, message_kind kind,
                                   std::span<const std::uint8_t> payload, bool allow_compress);
    /// Frames the last successful append_message() wrote: 1, or more when it fragmented.
    std::size_t last_message_frames() const noexcept { return last_frames_; }

    /// Appends one control frame (payload of at most 125 bytes) to `out`.
    void append_control(byte_buffer& out, opcode op, std::span<const std::uint8_t> payload);

    /// Appends a close frame with `code` (0: no code) and `reason` cut to 123 bytes.
    void append_close(byte_buffer& out, std::uint16_t code, std::string_view reason);

    /// Appends one frame of `payload` to `out`.
    void append_frame(byte_buffer& out, opcode op, bool fin, bool rsv1,
                      std::span<const std::uint8_t> payload);

    /// Writes the header of a frame whose payload the caller sends from its own memory;
    /// returns the header length and, for clients, the key the payload must be masked with.
    std::size_t frame_header_for(std::span<std::uint8_t, max_frame_header_size> out, opcode op,
                                 bool fin, bool rsv1, std::uint64_t length, mask_key& key);

    /// Frame payload size used for fragmentation (0: none).
    std::size_t frame_size() const noexcept { return frame_size_; }

    /// True once a compressed message allocated the writer's own deflater.
    bool deflater_allocated() const noexcept { return deflater_.has_value(); }

    /// The local role.
    role local() const noexcept { return role_; }

private:
    mask_key next_key() noexcept;

    std::optional<deflate_stream> deflater_;
    deflate_config deflate_cfg_;
    std::uint64_t rng_[2] = {0, 0};
    std::size_t frame_size_;
    role role_;
    bool deflate_enabled_ = false;
    std::uint32_t last_frames_ = 1; // in what was padding: a message of 2^32 frames wraps
};

/// Returns the longest prefix of `reason` of at most `limit` bytes that does not split a
/// UTF-8 sequence.
std::string_view truncate_utf8(std::string_view reason, std::size_t limit) noexcept;

} // namespace corows
