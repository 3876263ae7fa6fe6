// SPDX-License-Identifier: BSL-1.0
// Rewrites a complete raw DEFLATE stream (last block BFINAL=1, as libdeflate writes it) into
// the form RFC 7692 §7.2.1 describes: no final block, ending where the receiver's appended
// 00 00 FF FF completes an empty stored block.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstddef>

namespace corows::detail {

/// Clears the BFINAL bit of the last block of the raw DEFLATE stream in `data` (which must
/// inflate to exactly `inflated_size` bytes) and appends a zero byte when fewer than three
/// padding bits follow its end-of-block code, so that 00 00 FF FF appended by the peer reads
/// as an empty stored block. When the first block is the last (libdeflate's output for a
/// message of a few KiB), the last byte's top bits, else its header (final_padding_candidates())
/// tell the padding, or where neither can, one trial inflate with libdeflate; otherwise zlib's
/// Z_BLOCK finds the boundaries, and false means `data` is not such a stream.
bool to_flush_form(byte_buffer& data, std::size_t inflated_size);

} // namespace corows::detail
