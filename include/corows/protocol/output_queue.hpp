// SPDX-License-Identifier: BSL-1.0
// corows::output_queue: what a connection has for its transport to write (connection::take_output()):
// encoded bytes, and prepared frames queued by reference.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/prepared_message.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace corows {

/// Frames in the order they go out: bytes encoded into `bytes`, and prepared frames (a
/// broadcast shares one copy among all its connections) at their positions among them. A
/// driver writes the pieces for_each_piece() gives, in order, then calls
/// connection::output_written().
///
/// size() is what the queue holds in memory, not what it will put on the wire: a shared
/// frame also keeps its queue entry and its prepared_message alive (see charge()).
/// Back-pressure and slow-consumer limits compare against this, so they bound memory.
///
/// The list of shared frames exists from the queue's first one on: a connection that never
/// gets a broadcast carries a pointer for it, not a vector and a count.
struct output_queue {
    /// A prepared frame that goes out after the first `at` bytes of `bytes`.
    struct shared_frame {
        std::size_t at; ///< bytes of `bytes` that go out before it
        std::span<const std::uint8_t> frame; ///< the frame, in the prepared message's memory
        std::shared_ptr<const prepared_message> keep; ///< keeps that memory alive until the frame is written
    };

    /// The encoded frames, with the shared ones to be spliced in at their `at` positions.
    byte_buffer bytes;

    /// The shared frames, in queue order.
    std::span<const shared_frame> shared_frames() const noexcept {
        return shared_ ? std::span<const shared_frame>(shared_->frames) : std::span<const shared_frame>();
    }
    /// True when shared frames are queued among the bytes.
    bool has_shared() const noexcept { return !shared_frames().empty(); }
    /// Where in `bytes` the last shared frame goes; has_shared() must be true.
    std::size_t last_shared_at() const noexcept { return shared_frames().back().at; }
    /// True when nothing is queued.
    bool empty() const noexcept { return bytes.empty() && !has_shared(); }
    /// The memory the queued frames hold (see the class comment).
    std::size_t size() const noexcept { return bytes.size() + (shared_ ? shared_->charge : 0); }
    /// Drops every frame; keeps the storage.
    void clear() noexcept {
        bytes.clear();
        if (shared_) {
            shared_->frames.clear();
            shared_->charge = 0;
        }
    }
    /// What a shared frame costs the queue: its entry, and what the reference keeps alive,
    /// the frame and the prepared message around it. The larger of those two is charged, not
    /// both: the object dominates a small message (an empty broadcast costs some 450 bytes,
    /// not 2), the frame a large one, and a frame shared by many queues is not really held
    /// by any one of them twice.
    static std::size_t charge(std::span<const std::uint8_t> frame, const prepared_message&) noexcept {
        return sizeof(shared_frame) + std::max(frame.size(), prepared_message::footprint());
    }
    /// Calls `f(span)` for each piece of the queue in the order it goes out: runs of encoded
    /// bytes and shared frames.
    template <class F>
    void for_each_piece(F&& f) const {
        auto b = bytes.data();
        std::size_t pos = 0;
        for (const auto& s : shared_frames()) {
            if (s.at > pos) f(b.subspan(pos, s.at - pos));
            f(s.frame);
            pos = s.at;
        }
        if (pos < b.size()) f(b.subspan(pos));
    }
    /// Queues `frame` (owned by `keep`) after everything queued so far.
    void add_shared(std::span<const std::uint8_t> frame, std::shared_ptr<const prepared_message> keep) {
        if (!shared_) shared_ = std::make_unique<shared_part>();
        shared_->charge += charge(frame, *keep);
        shared_->frames.push_back({bytes.size(), frame, std::move(keep)});
    }

private:
    struct shared_part {
        std::vector<shared_frame> frames;
        std::size_t charge = 0;
    };
    std::unique_ptr<shared_part> shared_;
};

} // namespace corows
