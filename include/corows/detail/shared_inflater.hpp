// SPDX-License-Identifier: BSL-1.0
// The per-thread inflater of permessage-deflate messages received without context takeover
// whose compressed bytes are all at hand in one call: nothing survives such a message, so
// one inflater per thread (per window size) serves every connection on that thread.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

namespace corows::detail {

/// Inflates the whole compressed payload of one message sent without context takeover
/// under a window of 2^window_bits (8..15), appending to `out`, with this thread's shared
/// inflater; it is clean again for the next message whatever happens. Errors and the
/// `limit` on out.size() as inflate_stream::write() and finish() together.
std::error_code inflate_shared(std::span<const std::uint8_t> payload, int window_bits,
                               byte_buffer& out, std::size_t limit);

} // namespace corows::detail
