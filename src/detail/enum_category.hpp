// SPDX-License-Identifier: BSL-1.0
#pragma once
// corows' error categories differ only in their name, each code's message and the condition
// each code belongs to: one class template, given those, is all of them.
#include <corows/condition.hpp>

#include <string>
#include <system_error>

namespace corows::detail {

/// How a code that is no enumerator is described: `unknown` alone, or followed by its number.
enum class unknown_code { text, text_and_number };

/// A category named `name` whose codes are `Enum`'s values, described by `message_of` (nullptr
/// for a value that is no enumerator: `unknown` is said instead, as `shown` says).
template <class Enum>
class named_category : public std::error_category {
public:
    using message_fn = const char* (*)(Enum) noexcept;

    constexpr named_category(const char* name, message_fn message_of, const char* unknown,
                             unknown_code shown = unknown_code::text) noexcept
        : name_(name), message_of_(message_of), unknown_(unknown), shown_(shown) {}

    const char* name() const noexcept override { return name_; }

    std::string message(int ev) const override {
        // A value Enum cannot hold (257 for a byte-sized enum) would wrap to another's message.
        const auto e = static_cast<Enum>(ev);
        if (static_cast<int>(e) == ev)
            if (const char* m = message_of_(e)) return m;
        return shown_ == unknown_code::text ? std::string(unknown_) : unknown_ + std::to_string(ev);
    }

private:
    const char* name_;
    message_fn message_of_;
    const char* unknown_;
    unknown_code shown_;
};

/// An error category that also answers, through `condition_of` (condition{} for none), which
/// corows::condition each of its codes belongs to.
template <class Enum>
class enum_category final : public named_category<Enum> {
public:
    using condition_fn = condition (*)(Enum) noexcept;

    constexpr enum_category(const char* name, typename named_category<Enum>::message_fn message_of,
                            const char* unknown, condition_fn condition_of,
                            unknown_code shown = unknown_code::text) noexcept
        : named_category<Enum>(name, message_of, unknown, shown), condition_of_(condition_of) {}

    bool equivalent(int code, const std::error_condition& cond) const noexcept override {
        if (cond.category() == condition_category())
            return code != 0 && is_condition(cond, condition_of_(static_cast<Enum>(code)));
        return std::error_category::equivalent(code, cond);
    }

private:
    condition_fn condition_of_;
};

} // namespace corows::detail
