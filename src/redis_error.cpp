// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/redis_error.hpp>

#include "detail/enum_category.hpp"

#include <string>

namespace corows {
namespace {

const char* message_of(redis_error e) noexcept {
    switch (e) {
    case redis_error::server_error: return "Redis answered with an error";
    case redis_error::auth_failed: return "Redis refused the authentication";
    case redis_error::protocol_error: return "malformed, unexpected or oversized data from Redis";
    }
    return nullptr;
}

// Every code of this category is a failure of the backplane.
condition condition_of(redis_error) noexcept { return condition::redis; }

} // namespace

const std::error_category& redis_error_category() noexcept {
    static const detail::enum_category<redis_error> instance("corows.redis", message_of, "unknown Redis error",
                                                             condition_of);
    return instance;
}

std::error_code make_error_code(redis_error e) noexcept {
    return {static_cast<int>(e), redis_error_category()};
}

} // namespace corows
