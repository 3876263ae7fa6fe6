// SPDX-License-Identifier: BSL-1.0
// The plain-TCP server and websocket, compiled once here (see corows/detail/instances.hpp).
#include <corows/server.hpp>

COROWS_DETAIL_WEBSOCKET_INSTANCES(, asio::ip::tcp::socket)
template class corows::basic_server<corows::asio::ip::tcp::socket>;
