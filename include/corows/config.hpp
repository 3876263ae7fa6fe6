// SPDX-License-Identifier: BSL-1.0
// corows/config.hpp: which Asio corows runs on, and what it needs from it, settled before any
// Asio header is read. corows/asio.hpp includes this first, so a consumer needs no compiler
// flags beyond -std=c++20, the include path and, for Boost.Asio, COROWS_USE_BOOST_ASIO.
#pragma once

#if defined(COROWS_USE_BOOST_ASIO)

#include <boost/version.hpp>

// 1.81 (Debian 12's newest) is the oldest Boost corows is built and tested with; its Asio
// (1.26) enables co_await under clang and g++ by itself, and its error_code converts to and
// from std::error_code, which corows' protocol core speaks.
#if BOOST_VERSION < 108100
#error "corows with COROWS_USE_BOOST_ASIO needs Boost 1.81 or newer (boost/version.hpp reports an older one)"
#endif

#include <boost/asio/detail/config.hpp>

#if !defined(BOOST_ASIO_HAS_CO_AWAIT) || !defined(BOOST_ASIO_HAS_STD_COROUTINE)
#error "corows needs Boost.Asio's C++20 coroutine support: compile with -std=c++20 (or newer) and a compiler with <coroutine>"
#endif

#else

// Asio 1.22 enables co_await under clang only when <experimental/coroutine> exists (libc++
// before 17), so clang with libstdc++ would lose asio::awaitable although the compiler and
// library support C++20 coroutines; Asio reads these only when they are not yet defined.
#if defined(__clang__) && !defined(ASIO_HAS_CO_AWAIT) && !defined(ASIO_DISABLE_CO_AWAIT) && \
    defined(__cpp_impl_coroutine) && __has_include(<coroutine>)
#if defined(ASIO_DETAIL_CONFIG_HPP)
// Asio has already decided, without co_await; defining the macro now would leave its
// headers half-configured.
#error "corows: Asio was included before corows without co_await support; include corows headers first, or compile with -DASIO_HAS_CO_AWAIT=1"
#endif
#define ASIO_HAS_CO_AWAIT 1
#if !defined(ASIO_HAS_STD_COROUTINE) && !defined(ASIO_DISABLE_STD_COROUTINE)
#define ASIO_HAS_STD_COROUTINE 1
#endif
#endif

#include <asio/version.hpp>

// 1.22 (Debian 12's) is the oldest Asio corows is built and tested with.
#if !defined(ASIO_VERSION) || ASIO_VERSION < 102200
#error "corows needs standalone Asio 1.22 or newer (asio/version.hpp reports an older one)"
#endif

#include <asio/detail/config.hpp>

#if !defined(ASIO_HAS_CO_AWAIT) || !defined(ASIO_HAS_STD_COROUTINE)
#error "corows needs Asio's C++20 coroutine support: compile with -std=c++20 (or newer) and a compiler with <coroutine>"
#endif

#endif
