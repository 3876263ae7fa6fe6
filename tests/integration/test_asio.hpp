// SPDX-License-Identifier: BSL-1.0
// The Asio the integration tests run on: the one corows was built for (standalone Asio, or
// Boost.Asio with -Dasio=boost). The tests name it `asio::`, which here is corows::asio
// (the same namespace as ::asio in a standalone build), and its error type corows::error_code.
#pragma once

#include <corows/asio.hpp>

#if defined(COROWS_USE_BOOST_ASIO)
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#if defined(COROWS_HAS_TLS)
#include <boost/asio/ssl.hpp>
#endif
#else
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/experimental/deferred.hpp>
#if defined(COROWS_HAS_TLS)
#include <asio/ssl.hpp>
#endif
#endif

namespace {
namespace asio = corows::asio;
// Where as_tuple and deferred live: Asio 1.24 made them standard, 1.22 has them as experimental.
#if defined(COROWS_USE_BOOST_ASIO) || __has_include(<asio/as_tuple.hpp>)
namespace tokens = corows::asio;
#else
namespace tokens = corows::asio::experimental;
#endif
} // namespace
