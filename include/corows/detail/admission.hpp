// SPDX-License-Identifier: BSL-1.0
// Who a server lets in: counts of open connections, of connections per remote address and of
// opening handshakes, shared by the server's threads. No sockets here, so that the limits are
// unit-tested on their own; the server asks before serving an accepted socket.
#pragma once

#include <corows/detail/platform.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace corows::detail {

/// The limits of an admission (0: no limit).
struct admission_limits {
    std::size_t connections = 0;
    std::size_t per_address = 0;
    std::size_t handshakes = 0;
};

/// Descriptors kept back from the automatic connection limit: enough for the 503s, the
/// process's own files and a Redis link, a tenth of a large limit.
inline std::size_t descriptor_reserve(std::size_t limit) noexcept {
    return limit / 10 > 32 ? limit / 10 : 32;
}

/// The connection limit that leaves descriptor_reserve() of descriptor_limit() free (on
/// Windows, of its fixed 16384); no limit where the descriptor limit is unlimited or unreadable.
inline std::size_t connections_for_descriptor_limit() noexcept {
    const auto n = descriptor_limit();
    if (n == 0) return 0;
    const auto reserve = descriptor_reserve(n);
    return n > reserve ? n - reserve : 1;
}

/// Why a connection was not admitted.
enum class refusal { none, connections, per_address };

/// The counters; thread-safe. A connection is counted from admit() to release(), a handshake
/// from try_begin_handshake() (or begin_handshake()) to end_handshake(); a handshake shed to
/// make room hands its count to the newer one, uncounting nothing.
class admission {
public:
    /// Counts against `limits`.
    explicit admission(admission_limits limits) : limits_(limits) {}

    admission(const admission&) = delete;
    admission& operator=(const admission&) = delete;

    /// The limits counted against.
    const admission_limits& limits() const noexcept { return limits_; }

    /// Counts a connection from `address` (any stable spelling of the peer's address) unless
    /// a limit is reached; then counts nothing and says which.
    refusal admit(const std::string& address) {
        if (limits_.connections != 0 &&
            open_.fetch_add(1, std::memory_order_relaxed) >= limits_.connections) {
            open_.fetch_sub(1, std::memory_order_relaxed);
            return refusal::connections;
        }
        if (limits_.connections == 0) open_.fetch_add(1, std::memory_order_relaxed);
        if (limits_.per_address != 0) {
            std::lock_guard<std::mutex> lock(mutex_);
            auto& n = by_address_[address];
            if (n >= limits_.per_address) {
                if (n == 0) by_address_.erase(address);
                open_.fetch_sub(1, std::memory_order_relaxed);
                return refusal::per_address;
            }
            ++n;
        }
        return refusal::none;
    }

    /// Uncounts a connection admit() counted for `address`.
    void release(const std::string& address) {
        open_.fetch_sub(1, std::memory_order_relaxed);
        if (limits_.per_address == 0) return;
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = by_address_.find(address);
        if (it != by_address_.end() && --it->second == 0) by_address_.erase(it);
    }

    /// Counts a handshake in progress if a slot is free; false (nothing counted) when all
    /// are taken.
    bool try_begin_handshake() noexcept {
        auto n = handshaking_.load(std::memory_order_relaxed);
        do {
            if (limits_.handshakes != 0 && n >= limits_.handshakes) return false;
        } while (!handshaking_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
        return true;
    }
    /// Counts a handshake in progress even beyond the limit (its thread had none to shed:
    /// another thread gives one back).
    void begin_handshake() noexcept { handshaking_.fetch_add(1, std::memory_order_relaxed); }
    /// Uncounts one.
    void end_handshake() noexcept { handshaking_.fetch_sub(1, std::memory_order_relaxed); }

    /// Connections counted now.
    std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }
    /// Handshakes counted now.
    std::size_t handshaking() const noexcept { return handshaking_.load(std::memory_order_relaxed); }
    /// Distinct addresses counted now (per-address limit only).
    std::size_t addresses() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return by_address_.size();
    }

private:
    admission_limits limits_;
    std::atomic<std::size_t> open_{0};
    std::atomic<std::size_t> handshaking_{0};
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::size_t> by_address_;
};

} // namespace corows::detail
