// SPDX-License-Identifier: BSL-1.0
// corows::shared_connection_counters: connections on several threads count into one at once,
// and what a connection counted stays in the total after it is gone.
#include <corows/protocol/connection.hpp>
#include <corows/protocol/shared_connection_counters.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

using clock_type = corows::connection::clock;

// Opens a server connection counting into `shared`, queues `n` 3-byte messages, writes them,
// queues one more and is destroyed with it unwritten. False if a send failed (no Boost.Test
// assertion off the test's thread).
bool run_connection(corows::shared_connection_counters& shared, std::size_t n) {
    corows::connection c(std::make_shared<const corows::options>());
    c.count_into(shared);
    c.open(corows::role::server, "", std::nullopt, clock_type::now());
    const std::uint8_t payload[3] = {1, 2, 3};
    for (std::size_t i = 0; i < n; ++i) {
        if (c.send_message(corows::message_kind::binary, payload, false)) return false;
        c.take_output();
        c.output_written();
    }
    return !c.send_message(corows::message_kind::binary, payload, false);
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_connection_counters)

BOOST_AUTO_TEST_CASE(connections_on_several_threads_count_into_one) {
    corows::shared_connection_counters shared;
    constexpr std::size_t threads = 4, n = 20000;
    std::vector<std::thread> runners;
    std::atomic<std::size_t> failed{0};
    for (std::size_t t = 0; t < threads; ++t)
        runners.emplace_back([&] {
            if (!run_connection(shared, n)) failed.fetch_add(1);
        });
    // A reader meanwhile: the messages sent never go back.
    std::uint64_t last = 0;
    bool monotonic = true;
    for (int i = 0; i < 1000; ++i) {
        const auto seen = shared.snapshot().messages_sent;
        monotonic = monotonic && seen >= last;
        last = seen;
    }
    for (auto& r : runners) r.join();
    BOOST_TEST(monotonic);
    BOOST_TEST(failed.load() == 0u);
    const auto m = shared.snapshot();
    BOOST_TEST(m.opened == threads);
    BOOST_TEST(m.messages_sent == threads * (n + 1));
    BOOST_TEST(m.frames_sent == threads * (n + 1));
    BOOST_TEST(m.payload_bytes_sent == 3 * threads * (n + 1));
    BOOST_TEST(m.queued_output_bytes == 0u); // the last message of each left with its connection
    BOOST_TEST(shared.parts() == 0u);
}

BOOST_AUTO_TEST_CASE(a_live_connection_counts_in_a_snapshot_and_its_part_goes_with_it) {
    corows::shared_connection_counters shared;
    {
        corows::connection c(std::make_shared<const corows::options>());
        c.count_into(shared);
        BOOST_TEST(shared.parts() == 1u);
        c.count_handshake_from(clock_type::time_point{} + std::chrono::hours(1));
        c.open(corows::role::server, "", std::nullopt, clock_type::time_point{} + std::chrono::hours(1) + std::chrono::milliseconds(20));
        const std::uint8_t payload[2] = {'h', 'i'};
        BOOST_REQUIRE(!c.send_message(corows::message_kind::text, payload, false));
        const auto m = shared.snapshot();
        BOOST_TEST(m.opened == 1u);
        BOOST_TEST(m.open() == 1u);
        BOOST_TEST(m.queued_output_bytes == 4u);
        // Counting elsewhere hands the part back, with its counts.
        corows::connection_counters mine;
        c.count_into(&mine);
        BOOST_TEST(shared.parts() == 0u);
        BOOST_TEST(shared.snapshot().queued_output_bytes == 0u);
        BOOST_TEST(shared.snapshot().messages_sent == 1u);
        BOOST_TEST(mine.snapshot().queued_output_bytes == 4u);
        c.count_into(nullptr);
    }
    BOOST_TEST(shared.parts() == 0u);
    BOOST_TEST(shared.snapshot().opened == 1u);
    const auto h = shared.handshakes();
    BOOST_TEST(h.count() == 1u);
    BOOST_TEST(h.buckets[4] == 1u); // 20 ms: over 10 ms, up to 25 ms
    BOOST_TEST(h.sum.count() == std::chrono::nanoseconds(std::chrono::milliseconds(20)).count());
}

BOOST_AUTO_TEST_SUITE_END()
