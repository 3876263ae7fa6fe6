// SPDX-License-Identifier: BSL-1.0
// The Redis backplane's failures (corows/redis_backplane.hpp), in a category of their own so
// that the Asio-free core's corows::error knows nothing of Redis.
#pragma once

#include <system_error>

namespace corows {

/// Why the Redis backplane failed, in the `corows.redis` category; each matches
/// condition::redis.
enum class redis_error {
    server_error = 1, ///< Redis answered a command with an error (was error::backplane_error)
    auth_failed,      ///< Redis refused the credentials, or wants some and got none
    protocol_error,   ///< Redis sent malformed, unexpected or oversized data
};

/// The category of redis_error values; name() is "corows.redis".
const std::error_category& redis_error_category() noexcept;

/// Wraps `e` in an std::error_code of the redis category.
std::error_code make_error_code(redis_error e) noexcept;

} // namespace corows

/// @cond COROWS_STD_SPECIALISATIONS
template <>
struct std::is_error_code_enum<corows::redis_error> : std::true_type {};
/// @endcond
