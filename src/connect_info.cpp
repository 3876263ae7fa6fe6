// SPDX-License-Identifier: BSL-1.0
// connect_info's special members, out of line so that copying the deprecated `previous` warns
// nowhere (see connect_info.hpp).
#include <corows/connect_info.hpp>

#include <utility>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace corows {

connect_info::connect_info() = default;
connect_info::connect_info(unsigned number, unsigned tries, std::chrono::milliseconds waiting,
                           close_info before)
    : connection(number), attempts(tries), waited(waiting), previous_close(std::move(before)),
      previous(previous_close) {}
connect_info::connect_info(const connect_info&) = default;
connect_info::connect_info(connect_info&&) noexcept = default;
connect_info& connect_info::operator=(const connect_info&) = default;
connect_info& connect_info::operator=(connect_info&&) noexcept = default;
connect_info::~connect_info() = default;

} // namespace corows

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
