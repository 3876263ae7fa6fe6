// SPDX-License-Identifier: BSL-1.0
// Base64 is a bijection between byte strings and canonical texts: decoding anything and
// re-encoding must give the text back, and encoding then decoding must give the bytes back.
#include <corows/detail/base64.hpp>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <span>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (const auto decoded = corows::detail::base64_decode(text)) {
        if (corows::detail::base64_encode(*decoded) != text) {
            std::abort();
        }
    }

    const std::string encoded = corows::detail::base64_encode(std::span(data, size));
    const auto back = corows::detail::base64_decode(encoded);
    if (!back || back->size() != size || !std::equal(back->begin(), back->end(), data)) {
        std::abort();
    }
    return 0;
}
