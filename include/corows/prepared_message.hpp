// SPDX-License-Identifier: BSL-1.0
// A message framed once and sent to many connections (a broadcast), sans I/O.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/message.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

namespace corows {

/// One message, framed once as a server frame (unmasked, unfragmented) and, on demand,
/// compressed once per window size for connections that agreed to permessage-deflate
/// without context takeover on the server's side. Connections queue these bytes by reference
/// (see websocket::send), so a broadcast to N connections costs one framing, at most one
/// compression per window size, and no copy per connection.
///
/// Immutable once built; deflated_frame() may be called from several threads at once.
class prepared_message {
public:
    /// Frames `payload` (text must be UTF-8) as one `kind` message; compression, when asked
    /// for, uses zlib `level` and `mem_level` (or libdeflate at that level when built in).
    prepared_message(std::span<const std::uint8_t> payload, message_kind kind,
                     int level = default_deflate_level, int mem_level = default_deflate_mem_level);

    /// A shared prepared message (the form websocket::send takes).
    static std::shared_ptr<const prepared_message> make(std::span<const std::uint8_t> payload, message_kind kind) {
        return std::make_shared<const prepared_message>(payload, kind);
    }

    prepared_message(const prepared_message&) = delete;
    prepared_message& operator=(const prepared_message&) = delete;

    /// Text or binary.
    message_kind kind() const noexcept { return kind_; }
    /// The payload as given.
    std::span<const std::uint8_t> payload() const noexcept { return frame_.data().subspan(header_); }
    /// The whole uncompressed frame: header and payload.
    std::span<const std::uint8_t> frame() const noexcept { return frame_.data(); }
    /// The frame with the payload compressed (RSV1 set) for a peer that inflates our messages
    /// without context takeover with a window of `window_bits` (8..15); built on the first call
    /// for that size. Empty if compression failed (send frame() instead).
    std::span<const std::uint8_t> deflated_frame(int window_bits) const;
    /// Memory the message holds besides the frame a queue sends: the object and the
    /// bookkeeping of its two allocations. A write queue charges this, with the frame, for
    /// each reference it keeps (see output_queue): an empty message costs a queue
    /// some 400 bytes, not the 2 of its frame.
    static constexpr std::size_t footprint() noexcept { return sizeof(prepared_message) + 2 * 16; }
    /// The compressed payload of deflated_frame(window_bits), without the frame header (what a
    /// client masks into a frame of its own); empty if compression failed.
    std::span<const std::uint8_t> deflated_payload(int window_bits) const {
        auto f = deflated_frame(window_bits);
        return f.empty() ? f : f.subspan(deflated_[slot(window_bits)].header);
    }

private:
    struct deflated {
        std::once_flag once;
        byte_buffer frame;
        std::size_t header = 0;
    };
    static std::size_t slot(int window_bits) noexcept {
        return static_cast<std::size_t>(clamp_window_bits(window_bits) - 8);
    }

    byte_buffer frame_;
    std::size_t header_ = 0;
    message_kind kind_;
    int level_;
    int mem_level_;
    mutable std::array<deflated, 8> deflated_; // by window bits 8..15
};

} // namespace corows
