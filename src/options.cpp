// SPDX-License-Identifier: BSL-1.0
// options' special members, out of line so that copying the deprecated client-only fields
// warns nowhere (see options.hpp).
#include <corows/options.hpp>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace corows {

options::options() = default;
options::options(const options&) = default;
options::options(options&&) noexcept = default;
options& options::operator=(const options&) = default;
options& options::operator=(options&&) noexcept = default;
options::~options() = default;

} // namespace corows

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
