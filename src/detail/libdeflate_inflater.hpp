// SPDX-License-Identifier: BSL-1.0
// libdeflate's decompressor behind an RAII handle (built only with COROWS_HAS_LIBDEFLATE): a
// whole raw DEFLATE stream in, all its output at once. Private to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

struct libdeflate_decompressor;

namespace corows::detail {

/// What libdeflate_inflater::inflate() found.
enum class whole_inflate : std::uint8_t {
    done,    ///< the stream ended with a BFINAL block; see `used` and `made`
    no_room, ///< the output did not fit in the space given
    bad,     ///< not a valid DEFLATE stream, or one without a BFINAL block in `in`
};

/// A libdeflate decompressor; it keeps no state between calls. Unlike zlib it needs the whole
/// stream and room for the whole output up front, and it lets some malformed code-length
/// headers pass that zlib rejects: it checks our own compressor's output, never a peer's.
class libdeflate_inflater {
public:
    /// Allocates a decompressor; throws std::bad_alloc if it cannot.
    libdeflate_inflater();

    /// Inflates `in` up to the end of its first BFINAL block into `out`; on `done`, `used` is
    /// the input bytes that took (rounded up to a byte) and `made` the output bytes written.
    whole_inflate inflate(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                          std::size_t& used, std::size_t& made) noexcept;

    /// This thread's decompressor, created on first use.
    static libdeflate_inflater& for_this_thread();

private:
    struct release {
        void operator()(::libdeflate_decompressor* d) const noexcept;
    };
    std::unique_ptr<::libdeflate_decompressor, release> handle_;
};

} // namespace corows::detail
