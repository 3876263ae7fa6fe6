// SPDX-License-Identifier: BSL-1.0
// detail::log_limiter: a burst passes, then the rate, and the first record after a drought
// says how many were dropped; categories do not share a budget.
#include <corows/detail/log_limiter.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>

namespace {
using corows::log_category;
using limiter = corows::detail::log_limiter;
using std::chrono::milliseconds;
const limiter::clock::time_point t0 = limiter::clock::time_point{} + std::chrono::hours(1);

// How many of `n` records of `c` at `now` pass.
int passing(limiter& l, log_category c, int n, limiter::clock::time_point now, std::uint64_t& last_suppressed) {
    int passed = 0;
    for (int i = 0; i < n; ++i) {
        std::uint64_t s = 0;
        if (l.admit(c, now, s)) {
            ++passed;
            last_suppressed = s;
        }
    }
    return passed;
}
} // namespace

BOOST_AUTO_TEST_SUITE(log_limiter)

BOOST_AUTO_TEST_CASE(a_burst_passes_then_the_rate_and_the_dropped_are_told) {
    limiter l(10, 5);
    std::uint64_t s = 99;
    BOOST_TEST(passing(l, log_category::refusal, 1000, t0, s) == 5);
    BOOST_TEST(s == 0u);
    // 250 ms later: two tokens (one per 100 ms); the first says 995 were dropped.
    std::uint64_t first = 0;
    BOOST_TEST(l.admit(log_category::refusal, t0 + milliseconds(250), first));
    BOOST_TEST(first == 995u);
    BOOST_TEST(passing(l, log_category::refusal, 10, t0 + milliseconds(250), s) == 1);
    BOOST_TEST(s == 0u);
    // The 50 ms left over count towards the next token: at 300 ms one more passes.
    BOOST_TEST(passing(l, log_category::refusal, 10, t0 + milliseconds(300), s) == 1);
    BOOST_TEST(s == 9u); // the nine of the 250 ms batch
}

BOOST_AUTO_TEST_CASE(a_long_quiet_refills_only_up_to_the_burst) {
    limiter l(100, 3);
    std::uint64_t s = 0;
    BOOST_TEST(passing(l, log_category::protocol, 3, t0, s) == 3);
    BOOST_TEST(passing(l, log_category::protocol, 100, t0 + std::chrono::hours(5), s) == 3);
}

BOOST_AUTO_TEST_CASE(categories_have_their_own_budgets) {
    limiter l(1, 2);
    std::uint64_t s = 0;
    BOOST_TEST(passing(l, log_category::refusal, 50, t0, s) == 2);
    BOOST_TEST(passing(l, log_category::connection, 50, t0, s) == 2);
    BOOST_TEST(passing(l, log_category::backplane, 1, t0, s) == 1);
}

BOOST_AUTO_TEST_CASE(no_rate_means_the_burst_only) {
    limiter l(0, 4);
    std::uint64_t s = 0;
    BOOST_TEST(passing(l, log_category::protocol, 10, t0, s) == 4);
    BOOST_TEST(passing(l, log_category::protocol, 10, t0 + std::chrono::hours(1), s) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
