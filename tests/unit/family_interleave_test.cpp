// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/family_interleave.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace {

using corows::detail::interleave_families;
using list = std::vector<std::string>;

// Addresses spelled as text: one with a ':' is IPv6.
list order(list in) {
    return interleave_families(std::move(in), [](const std::string& a) { return a.find(':') != std::string::npos; });
}

} // namespace

BOOST_AUTO_TEST_SUITE(family_interleave)

BOOST_AUTO_TEST_CASE(families_alternate_from_the_resolvers_first) {
    BOOST_TEST(order({"::1", "fd00::2", "127.0.0.1", "10.0.0.1"}) == list({"::1", "127.0.0.1", "fd00::2", "10.0.0.1"}),
               boost::test_tools::per_element());
    // The resolver preferred IPv4 (RFC 6724's table says so for some pairs): IPv4 leads.
    BOOST_TEST(order({"10.0.0.1", "10.0.0.2", "::1", "::2"}) == list({"10.0.0.1", "::1", "10.0.0.2", "::2"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_family_keeps_its_order_and_the_longer_one_ends_the_list) {
    BOOST_TEST(order({"::1", "::2", "::3", "::4", "1.1.1.1"}) == list({"::1", "1.1.1.1", "::2", "::3", "::4"}),
               boost::test_tools::per_element());
    BOOST_TEST(order({"::1", "1.1.1.1", "2.2.2.2", "3.3.3.3"}) == list({"::1", "1.1.1.1", "2.2.2.2", "3.3.3.3"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(one_family_or_none_is_unchanged) {
    BOOST_TEST(order({"3.3.3.3", "1.1.1.1", "2.2.2.2"}) == list({"3.3.3.3", "1.1.1.1", "2.2.2.2"}),
               boost::test_tools::per_element());
    BOOST_TEST(order({}).empty());
    BOOST_TEST(order({"::1"}) == list({"::1"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
