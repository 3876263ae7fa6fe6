// SPDX-License-Identifier: BSL-1.0
// detail::per_thread (corows/detail/platform.hpp): one object per thread and call site,
// destroyed intact when its thread exits, even with many threads exiting at once (what
// MinGW-w64's own thread_local destructors get wrong: they run on freed, reused memory).
#include <corows/detail/platform.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

std::atomic<int> intact_destructions{0};
std::atomic<int> damaged_destructions{0};

// A cache that checks, as it is destroyed, that its memory still holds what it wrote.
struct guarded_cache {
    static constexpr std::uint64_t mark = 0x5a17c0de5a17c0deu;
    std::array<std::uint64_t, 8> words;
    std::vector<int> heap_part = std::vector<int>(64, 7);
    guarded_cache() { words.fill(mark); }
    ~guarded_cache() {
        bool intact = heap_part.size() == 64 && heap_part[63] == 7;
        for (auto w : words) intact = intact && w == mark;
        (intact ? intact_destructions : damaged_destructions)++;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(platform)

BOOST_AUTO_TEST_CASE(per_thread_is_one_object_per_thread_and_tag) {
    auto& a = corows::detail::per_thread<std::vector<int>, struct first_site>();
    auto& b = corows::detail::per_thread<std::vector<int>, struct second_site>();
    auto& again = corows::detail::per_thread<std::vector<int>, struct first_site>();
    BOOST_TEST(&a == &again);
    BOOST_TEST(&a != &b);
    const std::vector<int>* other = nullptr;
    std::thread([&] { other = &corows::detail::per_thread<std::vector<int>, struct first_site>(); }).join();
    BOOST_TEST(other != &a);
}

BOOST_AUTO_TEST_CASE(objects_of_threads_exiting_at_once_are_destroyed_once_and_intact) {
    intact_destructions = 0;
    damaged_destructions = 0;
    constexpr int rounds = 20;
    constexpr int threads_per_round = 8;
    for (int r = 0; r < rounds; ++r) {
        std::vector<std::thread> threads;
        for (int i = 0; i < threads_per_round; ++i)
            threads.emplace_back([] {
                auto& c = corows::detail::per_thread<guarded_cache, struct guarded_site>();
                c.heap_part.resize(64);
                // A second cache on the same thread, so that several are destroyed per exit.
                corows::detail::per_thread<std::vector<int>, struct guarded_companion>().assign(100, 1);
            });
        for (auto& t : threads) t.join();
    }
    BOOST_TEST(intact_destructions.load() == rounds * threads_per_round);
    BOOST_TEST(damaged_destructions.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
