// SPDX-License-Identifier: BSL-1.0
// libdeflate behind an RAII handle (built only with COROWS_HAS_LIBDEFLATE): one whole message
// in, raw DEFLATE out. Private to the library: the macro is not part of the public interface.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstdint>
#include <memory>
#include <span>

struct libdeflate_compressor;

namespace corows::detail {

/// A libdeflate compressor for one level; it keeps no state between messages.
class libdeflate_deflater {
public:
    /// Allocates a compressor for `level` (clamped to 0..12); throws std::bad_alloc if it cannot.
    explicit libdeflate_deflater(int level);

    /// Replaces `out` with `in` compressed whole as raw DEFLATE; its last block has BFINAL
    /// set and it ends on a byte boundary. False if libdeflate fails (it does not for a
    /// buffer of compress_bound() bytes).
    bool compress(std::span<const std::uint8_t> in, byte_buffer& out);

private:
    struct release {
        void operator()(::libdeflate_compressor* c) const noexcept;
    };
    std::unique_ptr<::libdeflate_compressor, release> handle_;
};

} // namespace corows::detail
