// SPDX-License-Identifier: BSL-1.0
#ifdef COROWS_HAS_LIBDEFLATE

#include "libdeflate_inflater.hpp"

#include <corows/detail/platform.hpp>

#include <libdeflate.h>

#include <new>

namespace corows::detail {

void libdeflate_inflater::release::operator()(::libdeflate_decompressor* d) const noexcept {
    libdeflate_free_decompressor(d);
}

libdeflate_inflater::libdeflate_inflater() : handle_(libdeflate_alloc_decompressor()) {
    if (!handle_) throw std::bad_alloc();
}

whole_inflate libdeflate_inflater::inflate(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                           std::size_t& used, std::size_t& made) noexcept {
    used = made = 0;
    switch (libdeflate_deflate_decompress_ex(handle_.get(), in.data(), in.size(), out.data(), out.size(),
                                             &used, &made)) {
    case LIBDEFLATE_SUCCESS:
        return whole_inflate::done;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
        return whole_inflate::no_room;
    default:
        return whole_inflate::bad;
    }
}

libdeflate_inflater& libdeflate_inflater::for_this_thread() {
    return per_thread<libdeflate_inflater, struct checking_inflater>();
}

} // namespace corows::detail

#endif
