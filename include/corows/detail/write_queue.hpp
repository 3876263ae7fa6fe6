// Frames waiting for the transport: encoded bytes, and prepared frames queued by reference.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/prepared_message.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace corows::detail {

/// Frames in the order they go out: bytes encoded into `bytes`, and prepared frames (a
/// broadcast shares one copy among all its connections) at their positions among them.
///
/// size() is what the queue holds in memory, not what it will put on the wire: a shared
/// frame also keeps its queue entry and its prepared_message alive, and an empty broadcast
/// costs far more than its 2 bytes of frame. Back-pressure and slow-consumer limits compare
/// against this charge, so they bound memory.
struct write_queue {
    /// A prepared frame that goes out after the first `at` bytes of `bytes`.
    struct shared_frame {
        std::size_t at;
        std::span<const std::uint8_t> frame;
        std::shared_ptr<const prepared_message> keep;
    };

    byte_buffer bytes;
    std::vector<shared_frame> shared;
    std::size_t shared_charge = 0;

    /// True when nothing is queued.
    bool empty() const noexcept { return bytes.empty() && shared.empty(); }
    /// The memory the queued frames hold (see the class comment).
    std::size_t size() const noexcept { return bytes.size() + shared_charge; }
    /// Drops every frame; keeps the storage.
    void clear() noexcept {
        bytes.clear();
        shared.clear();
        shared_charge = 0;
    }
    /// Queues `frame` (owned by `keep`) after everything queued so far.
    void add_shared(std::span<const std::uint8_t> frame, std::shared_ptr<const prepared_message> keep) {
        shared_charge += frame.size() + sizeof(shared_frame) + keep->footprint();
        shared.push_back({bytes.size(), frame, std::move(keep)});
    }
};

} // namespace corows::detail
