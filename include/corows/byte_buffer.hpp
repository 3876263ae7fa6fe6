// SPDX-License-Identifier: BSL-1.0
// A growable contiguous byte buffer that never zero-fills and keeps its capacity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace corows {

/// Contiguous storage with a readable region [0, size()) and spare capacity after it.
/// Unlike std::vector<uint8_t>, growing does not value-initialise, so a decoder or inflater
/// can write straight into prepare()'s span and commit() what it wrote.
class byte_buffer {
public:
    byte_buffer() = default;
    /// A copy of `other`'s readable bytes (its own storage, sized to them).
    byte_buffer(const byte_buffer& other) { assign(other.data()); }
    /// Replaces the readable bytes with a copy of `other`'s.
    byte_buffer& operator=(const byte_buffer& other) {
        if (this != &other) { clear(); assign(other.data()); }
        return *this;
    }
    /// Takes `other`'s storage; `other` is left empty, with no storage.
    byte_buffer(byte_buffer&& other) noexcept
        : storage_(std::move(other.storage_)), size_(other.size_), capacity_(other.capacity_) {
        other.size_ = other.capacity_ = 0;
    }
    /// Takes `other`'s storage (freeing this one's); `other` is left empty, with no storage.
    byte_buffer& operator=(byte_buffer&& other) noexcept {
        storage_ = std::move(other.storage_);
        size_ = other.size_;
        capacity_ = other.capacity_;
        other.size_ = other.capacity_ = 0;
        return *this;
    }

    /// The readable bytes.
    std::span<std::uint8_t> data() noexcept { return {storage_.get(), size_}; }
    /// The readable bytes.
    std::span<const std::uint8_t> data() const noexcept { return {storage_.get(), size_}; }
    /// The readable bytes as characters.
    std::string_view view() const noexcept {
        return {reinterpret_cast<const char*>(storage_.get()), size_};
    }
    std::size_t size() const noexcept { return size_; } ///< Readable bytes.
    bool empty() const noexcept { return size_ == 0; } ///< True if there are no readable bytes.
    std::size_t capacity() const noexcept { return capacity_; } ///< Bytes the storage holds, readable or not.

    /// Returns at least `n` writable bytes after the readable region; invalidates earlier spans.
    std::span<std::uint8_t> prepare(std::size_t n) {
        if (capacity_ - size_ < n) grow(n);
        return {storage_.get() + size_, capacity_ - size_};
    }
    /// Moves `n` bytes of the last prepare() span into the readable region.
    void commit(std::size_t n) noexcept { size_ += n; }
    /// Appends a copy of `bytes`.
    void append(std::span<const std::uint8_t> bytes) {
        if (bytes.empty()) return;
        std::memcpy(prepare(bytes.size()).data(), bytes.data(), bytes.size());
        size_ += bytes.size();
    }
    /// Replaces the contents with a copy of `bytes`.
    void assign(std::span<const std::uint8_t> bytes) { size_ = 0; append(bytes); }
    /// Drops the first `n` readable bytes, moving the rest to the front.
    void consume(std::size_t n) noexcept {
        if (n >= size_) { size_ = 0; return; }
        std::memmove(storage_.get(), storage_.get() + n, size_ - n);
        size_ -= n;
    }
    /// Shortens the readable region to `n` bytes (n <= size()).
    void truncate(std::size_t n) noexcept { if (n < size_) size_ = n; }
    /// Empties the buffer and keeps its capacity.
    void clear() noexcept { size_ = 0; }
    /// Releases the storage if its capacity is over `limit`, so one large message does not
    /// pin memory for the rest of the connection.
    void shrink_to(std::size_t limit) {
        if (capacity_ <= limit) return;
        byte_buffer smaller;
        smaller.append(data());
        *this = std::move(smaller);
    }

private:
    void grow(std::size_t n) {
        std::size_t want = size_ + n;
        std::size_t cap = capacity_ < 256 ? 256 : capacity_;
        while (cap < want) cap *= 2;
        auto fresh = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
        if (size_) std::memcpy(fresh.get(), storage_.get(), size_);
        storage_ = std::move(fresh);
        capacity_ = cap;
    }

    std::unique_ptr<std::uint8_t[]> storage_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

/// Views the characters of `s` as bytes.
inline std::span<const std::uint8_t> as_bytes(std::string_view s) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

} // namespace corows
