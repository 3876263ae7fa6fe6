// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/detail/platform.hpp>

#include "detail/enum_category.hpp"

#include <cstring>
#include <string>

namespace corows {
namespace {

bool named(const std::error_category& cat, const char* name) noexcept {
    return std::strcmp(cat.name(), name) == 0;
}

// `code` is `e`, as a portable code or as the OS's socket calls report it (Windows' system
// category maps no Winsock code to std::errc).
bool lost(const std::error_code& code, std::errc e) noexcept {
    return code == e || code == detail::socket_error(e);
}

const char* message_of(condition c) noexcept {
    switch (c) {
    case condition::closed: return "the connection was closed";
    case condition::connection_lost: return "the connection was lost";
    case condition::timeout: return "timed out";
    case condition::protocol_error: return "the peer broke the WebSocket protocol";
    case condition::too_big: return "over a size limit";
    case condition::handshake_failed: return "the opening handshake failed";
    case condition::handshake_refused: return "the opening handshake was refused";
    case condition::tls: return "TLS failed";
    case condition::bad_url: return "invalid URL";
    case condition::proxy: return "the proxy failed";
    case condition::redis: return "the Redis backplane failed";
    }
    return nullptr;
}

class condition_category_impl final : public detail::named_category<condition> {
public:
    condition_category_impl() noexcept
        : detail::named_category<condition>("corows.condition", message_of, "unknown corows condition") {}

    // Codes of categories that know nothing of corows: the corows categories answer for
    // their own codes in their equivalent(int, condition). Asio's categories are matched by
    // name, because the core includes no Asio (and the names are the same in Boost.Asio).
    bool equivalent(const std::error_code& code, int cond) const noexcept override {
        switch (static_cast<condition>(cond)) {
        case condition::connection_lost:
            if (named(code.category(), "asio.misc")) return code.value() == 2; // asio::error::eof
            return lost(code, std::errc::connection_reset) || lost(code, std::errc::broken_pipe) ||
                   lost(code, std::errc::connection_aborted) || lost(code, std::errc::not_connected);
        case condition::timeout: return lost(code, std::errc::timed_out);
        case condition::tls:
            return named(code.category(), "asio.ssl") || named(code.category(), "asio.ssl.stream");
        default: return false;
        }
    }
};

} // namespace

const std::error_category& condition_category() noexcept {
    static const condition_category_impl instance;
    return instance;
}

std::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

namespace detail {
bool is_condition(const std::error_condition& cond, condition c) noexcept {
    return c != condition{} && cond.category() == condition_category() && cond.value() == static_cast<int>(c);
}
} // namespace detail

} // namespace corows
