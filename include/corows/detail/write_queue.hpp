// SPDX-License-Identifier: BSL-1.0
// The output queue's former name (it is corows::output_queue now, in corows/protocol/output_queue.hpp).
#pragma once

#include <corows/protocol/output_queue.hpp>

namespace corows::detail {

// Kept for one release, not deprecated: take_output() returned it, so a custom driver may
// name it, but existing tests name it too and build with -Werror.
using write_queue = corows::output_queue;

} // namespace corows::detail
