// SPDX-License-Identifier: BSL-1.0
// The per-thread pools of idle connection buffers: a connection's receive and send buffers
// go back here while it waits, so an idle connection holds none.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/detail/platform.hpp>

#include <array>
#include <cstddef>
#include <utility>

namespace corows::detail {

/// Receive or send buffers not in use, kept per thread. A connection waiting for data gives
/// its receive buffer back (when it has nothing left to decode), and its writer gives its send
/// buffers back when the queue has drained; each takes one again when it has bytes to hold.
/// So an idle connection holds no buffer, even after traffic, and a busy thread cycles
/// through the same few without allocating. Receive and send buffers have pools of their
/// own: their sizes differ, and a buffer of the other kind would have to grow again.
class buffer_pool {
public:
    /// The calling thread's pool of receive buffers.
    static buffer_pool& reads() noexcept { return per_thread<buffer_pool, struct receive_buffers>(); }
    /// The calling thread's pool of send buffers.
    static buffer_pool& writes() noexcept { return per_thread<buffer_pool, struct send_buffers>(); }
    /// Takes `b`'s storage (b must hold no data); keeps it for reuse unless the pool is full
    /// or it grew for a large message.
    void give(byte_buffer& b) noexcept {
        if (b.capacity() == 0) return;
        b.clear();
        if (count_ < max_buffers && poolable(b.capacity())) free_[count_++] = std::move(b);
        else b = byte_buffer{};
    }
    /// Whether a buffer of `capacity` bytes is small enough to pool.
    static constexpr bool poolable(std::size_t capacity) noexcept { return capacity <= max_capacity; }
    /// Gives `b` (empty, without storage) a pooled buffer if there is one.
    void take(byte_buffer& b) noexcept {
        if (count_ > 0 && b.capacity() == 0) b = std::move(free_[--count_]);
    }

private:
    // Up to the largest transport read (see connection::receive_space()), so that a stream of
    // large messages does not reallocate its buffers per read; anything larger is freed.
    static constexpr std::size_t max_buffers = 8;
    static constexpr std::size_t max_capacity = 256 * 1024;
    std::array<byte_buffer, max_buffers> free_;
    std::size_t count_ = 0;
};

} // namespace corows::detail
