// SPDX-License-Identifier: BSL-1.0
#define BOOST_TEST_MODULE corows
// The header-only variant compiles Boost.Test in, where the system's library does not fit
// (tests/meson.build).
#ifdef COROWS_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>
#else
#include <boost/test/unit_test.hpp>
#endif
