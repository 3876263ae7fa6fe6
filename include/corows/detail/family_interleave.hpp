// SPDX-License-Identifier: BSL-1.0
// The order in which Happy Eyeballs (RFC 8305 §4) tries the addresses a name resolved to:
// address families alternate, so that a family that is broken on this network (IPv6 routed
// nowhere, say) costs one connection attempt delay and not one per address. No I/O: a
// function over a list, tested on its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace corows::detail {

/// `in` reordered as RFC 8305 §4 says: the family of the first address (the resolver's
/// preference, IPv6 first under RFC 6724's default policy) first, then the other family's
/// first address, alternating; each family keeps the resolver's order, and the longer one's
/// remainder comes last. `is_v6(x)` tells an element's family.
template <class T, class IsV6>
std::vector<T> interleave_families(std::vector<T> in, IsV6 is_v6) {
    if (in.empty()) return in;
    const bool first_is_v6 = is_v6(in.front());
    std::vector<T> first, second;
    for (auto& x : in) (is_v6(x) == first_is_v6 ? first : second).push_back(std::move(x));
    std::vector<T> out;
    out.reserve(first.size() + second.size());
    for (std::size_t i = 0; i < std::max(first.size(), second.size()); ++i) {
        if (i < first.size()) out.push_back(std::move(first[i]));
        if (i < second.size()) out.push_back(std::move(second[i]));
    }
    return out;
}

} // namespace corows::detail
