// SPDX-License-Identifier: BSL-1.0
// corows/asio.hpp: the one header that names the Asio corows runs on. Inside namespace corows,
// `asio` is standalone Asio, or Boost.Asio when COROWS_USE_BOOST_ASIO is defined (the
// -Dasio=boost build option defines it for the library's consumers); `error_code` and
// `system_error` are that Asio's, so completion tokens such as redirect_error and use_future
// see the error type they expect.
#pragma once

#include <corows/config.hpp>

#if defined(COROWS_USE_BOOST_ASIO)

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#if defined(COROWS_HAS_TLS)
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#endif
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

namespace corows {
/// @cond COROWS_ASIO_ALIAS (Asio is not part of this reference)
namespace asio = ::boost::asio;
/// @endcond
/// The error type of Asio's completions and of corows' own.
using error_code = ::boost::system::error_code;
/// What corows' awaitable operations throw.
using system_error = ::boost::system::system_error;
} // namespace corows

/// A template parameter that is a completion token for `sig` (a concept where Asio has them).
#define COROWS_TOKEN_FOR(sig) BOOST_ASIO_COMPLETION_TOKEN_FOR(sig)

#else

#if __has_include(<asio/as_tuple.hpp>)
#include <asio/as_tuple.hpp>
#else
#include <asio/experimental/as_tuple.hpp>
#endif
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_allocator.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/buffer.hpp>
#include <asio/co_spawn.hpp>
#include <asio/compose.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/socket_base.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#if defined(COROWS_HAS_TLS)
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/ssl/verify_context.hpp>
#endif

#include <system_error>

namespace corows {
/// @cond COROWS_ASIO_ALIAS (Asio is not part of this reference)
namespace asio = ::asio;
/// @endcond
/// The error type of Asio's completions and of corows' own.
using error_code = std::error_code;
/// What corows' awaitable operations throw.
using system_error = std::system_error;
} // namespace corows

/// A template parameter that is a completion token for `sig` (a concept where Asio has them).
#define COROWS_TOKEN_FOR(sig) ASIO_COMPLETION_TOKEN_FOR(sig)

#endif

namespace corows::detail {
/// as_tuple(token)'s type: standard since Asio 1.24, experimental in 1.22.
#if defined(COROWS_USE_BOOST_ASIO) || __has_include(<asio/as_tuple.hpp>)
template <class Token>
using as_tuple_t = asio::as_tuple_t<Token>;
#else
template <class Token>
using as_tuple_t = asio::experimental::as_tuple_t<Token>;
#endif
} // namespace corows::detail
