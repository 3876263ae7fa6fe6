// SPDX-License-Identifier: BSL-1.0
// The client's websocket (connect()'s result), compiled once here (see corows/detail/instances.hpp).
#include <corows/connect.hpp>

COROWS_DETAIL_WEBSOCKET_INSTANCES(, corows::client_stream)
