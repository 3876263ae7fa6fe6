// SPDX-License-Identifier: BSL-1.0
// The TLS server and its websocket, compiled once here (see corows/detail/instances.hpp).
#include <corows/server.hpp>
#include <corows/tls_stream.hpp>

COROWS_DETAIL_WEBSOCKET_INSTANCES(, corows::tls_stream)
template class corows::basic_server<corows::tls_stream>;
