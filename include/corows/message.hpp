// SPDX-License-Identifier: BSL-1.0
// A received WebSocket message: its kind and payload, owned or borrowed.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace corows {

/// The two kinds of data message.
enum class message_kind : std::uint8_t { text, binary };

namespace detail {
struct message_access;
} // namespace detail

/// A complete message. Its payload lives either in the message's own storage (reused across
/// reads) or, for an unfragmented uncompressed message, in the connection's receive buffer
/// ("borrowed": no copy; valid until the next read on that connection — call own() to keep it).
class message {
public:
    message() = default;
    /// Copies always own their bytes, so a copy outlives the connection's next read.
    message(const message& other) { *this = other; }
    /// Replaces this message with a copy of `other` that owns its bytes.
    message& operator=(const message& other) {
        if (this != &other) {
            storage_.assign(other.data());
            view_ = storage_.data();
            kind_ = other.kind_;
            compressed_ = other.compressed_;
            borrowed_ = false;
        }
        return *this;
    }
    /// Takes `other`'s bytes (or its view of the connection's buffer); `other` is left empty.
    message(message&& other) noexcept { *this = std::move(other); }
    /// Takes `other`'s bytes (or its view of the connection's buffer); `other` is left empty.
    message& operator=(message&& other) noexcept {
        if (this != &other) {
            bool owned = !other.borrowed_;
            storage_ = std::move(other.storage_);
            view_ = owned ? storage_.data().first(other.view_.size()) : other.view_;
            kind_ = other.kind_;
            compressed_ = other.compressed_;
            borrowed_ = other.borrowed_;
            other.view_ = {};
        }
        return *this;
    }

    /// Text or binary.
    message_kind kind() const noexcept { return kind_; }
    /// True for a text message (its payload is valid UTF-8).
    bool is_text() const noexcept { return kind_ == message_kind::text; }
    /// True if the message arrived compressed with permessage-deflate.
    bool compressed() const noexcept { return compressed_; }
    /// The payload.
    std::span<const std::uint8_t> data() const noexcept { return view_; }
    /// The payload as characters.
    std::string_view text() const noexcept {
        return {reinterpret_cast<const char*>(view_.data()), view_.size()};
    }
    /// A copy of the payload as a string.
    std::string str() const { return std::string(text()); }
    /// Payload size in bytes.
    std::size_t size() const noexcept { return view_.size(); }
    /// True if data() points into the connection's receive buffer.
    bool borrowed() const noexcept { return borrowed_; }
    /// Copies a borrowed payload into the message's own storage; no-op if already owned.
    void own() {
        if (!borrowed_) return;
        storage_.assign(view_);
        view_ = storage_.data();
        borrowed_ = false;
    }

private:
    friend struct detail::message_access;

    /// The storage the reader assembles into.
    byte_buffer& storage() noexcept { return storage_; }
    /// Sets the message to `kind` with the payload assembled in storage().
    void set_owned(message_kind kind, bool compressed) noexcept {
        kind_ = kind;
        compressed_ = compressed;
        borrowed_ = false;
        view_ = storage_.data();
    }
    /// Sets the message to `kind` with a payload that lives elsewhere.
    void set_borrowed(message_kind kind, std::span<const std::uint8_t> payload) noexcept {
        kind_ = kind;
        compressed_ = false;
        borrowed_ = true;
        view_ = payload;
    }

    byte_buffer storage_;
    std::span<const std::uint8_t> view_;
    message_kind kind_ = message_kind::text;
    bool compressed_ = false;
    bool borrowed_ = false;
};

namespace detail {

/// The protocol core's way to fill a message (message_reader); users only read messages.
struct message_access {
    /// The storage the reader assembles `m`'s payload into.
    static byte_buffer& storage(message& m) noexcept { return m.storage(); }
    /// Sets `m` to `kind` with the payload assembled in storage(m).
    static void set_owned(message& m, message_kind kind, bool compressed) noexcept {
        m.set_owned(kind, compressed);
    }
    /// Sets `m` to `kind` with a payload that lives elsewhere (the receive buffer).
    static void set_borrowed(message& m, message_kind kind,
                             std::span<const std::uint8_t> payload) noexcept {
        m.set_borrowed(kind, payload);
    }
    /// Empties `m` (its payload is no longer needed) and frees its storage if that grew past
    /// `keep` bytes: one large message must not pin memory while a connection idles.
    static void release(message& m, std::size_t keep) noexcept {
        m.storage_.clear();
        if (m.storage_.capacity() > keep) m.storage_ = byte_buffer{};
        m.view_ = {};
        m.borrowed_ = false;
    }
};

} // namespace detail

} // namespace corows
