#include <corows/condition.hpp>
#include <corows/redis_error.hpp>

#include <string>

namespace corows {
namespace {

class redis_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "corows.redis"; }

    std::string message(int ev) const override {
        switch (static_cast<redis_error>(ev)) {
        case redis_error::server_error: return "Redis answered with an error";
        case redis_error::auth_failed: return "Redis refused the authentication";
        case redis_error::protocol_error: return "malformed, unexpected or oversized data from Redis";
        }
        return "unknown Redis error";
    }

    bool equivalent(int code, const std::error_condition& cond) const noexcept override {
        if (code >= 1 && code <= static_cast<int>(redis_error::protocol_error))
            return detail::is_condition(cond, condition::redis);
        return std::error_category::equivalent(code, cond);
    }
};

} // namespace

const std::error_category& redis_error_category() noexcept {
    static const redis_category instance;
    return instance;
}

std::error_code make_error_code(redis_error e) noexcept {
    return {static_cast<int>(e), redis_error_category()};
}

} // namespace corows
