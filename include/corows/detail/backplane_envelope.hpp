// SPDX-License-Identifier: BSL-1.0
// The envelope a backplane message travels in between processes: who sent it and its kind,
// so that a process can skip its own publishes (its hub delivered them already) and a text
// message stays text. No I/O and no Redis here: any backplane can use it.
//
//   byte 0       version, 1
//   byte 1       kind: 0 text, 1 binary
//   bytes 2-17   the sending backplane's node id (16 random bytes, one per instance)
//   bytes 18-    the payload, as published
#pragma once

#include <corows/message.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>

namespace corows::detail {

/// Names one backplane instance among all that share a channel.
using node_id = std::array<std::uint8_t, 16>;

/// Bytes before the payload.
inline constexpr std::size_t envelope_header_size = 2 + sizeof(node_id);
/// The format version this code writes and reads.
inline constexpr std::uint8_t envelope_version = 1;

/// A decoded envelope; `payload` points into the bytes it was decoded from.
struct envelope {
    node_id origin{};
    message_kind kind = message_kind::binary;
    std::span<const std::uint8_t> payload;
};

/// A fresh id from std::random_device: two processes (or two instances in one) never share one in practice.
inline node_id random_node_id() {
    std::random_device rd;
    node_id id{};
    for (std::size_t i = 0; i < id.size(); i += 4) {
        auto v = rd();
        for (std::size_t j = 0; j < 4; ++j) id[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
    }
    return id;
}

/// The header for (`origin`, `kind`) followed by `payload`, as one string (a Redis argument).
inline std::string encode_envelope(const node_id& origin, message_kind kind, std::span<const std::uint8_t> payload) {
    std::string out;
    out.resize(envelope_header_size + payload.size());
    out[0] = static_cast<char>(envelope_version);
    out[1] = static_cast<char>(kind == message_kind::text ? 0 : 1);
    std::copy(origin.begin(), origin.end(), out.begin() + 2);
    std::copy(payload.begin(), payload.end(), out.begin() + envelope_header_size);
    return out;
}

/// The envelope in `bytes`, or nullopt if they are too short or of an unknown version or kind.
inline std::optional<envelope> decode_envelope(std::span<const std::uint8_t> bytes) noexcept {
    if (bytes.size() < envelope_header_size || bytes[0] != envelope_version || bytes[1] > 1) return std::nullopt;
    envelope e;
    e.kind = bytes[1] == 0 ? message_kind::text : message_kind::binary;
    std::copy_n(bytes.begin() + 2, e.origin.size(), e.origin.begin());
    e.payload = bytes.subspan(envelope_header_size);
    return e;
}

} // namespace corows::detail
