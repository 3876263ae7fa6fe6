// SPDX-License-Identifier: BSL-1.0
// corows::connection_counters and connection_metrics: snapshots, sums and what they derive.
#include <corows/protocol/connection_counters.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

BOOST_AUTO_TEST_SUITE(connection_counters)

BOOST_AUTO_TEST_CASE(a_snapshot_has_every_count) {
    corows::connection_counters k;
    k.opened.add(5);
    k.closed_by[static_cast<std::size_t>(corows::ended_by::peer)].add(2);
    k.closed_by[static_cast<std::size_t>(corows::ended_by::slow_consumer)].add();
    k.closed_by_code[corows::code_slot(1008)].add();
    k.messages_received.add(7);
    k.messages_sent.add(8);
    k.payload_bytes_received.add(9);
    k.payload_bytes_sent.add(10);
    k.wire_bytes_received.add(11);
    k.wire_bytes_sent.add(12);
    k.pings_received.add(13);
    k.pongs_received.add(14);
    k.pings_sent.add(15);
    k.pongs_sent.add(16);
    k.frames_received.add(17);
    k.frames_sent.add(18);
    k.queued_output_bytes.add(100);
    k.queued_output_bytes.subtract(81);
    const auto m = k.snapshot();
    BOOST_TEST(m.opened == 5u);
    BOOST_TEST(m.closed() == 3u);
    BOOST_TEST(m.open() == 2u);
    BOOST_TEST(m.closed_by_code[8] == 1u);
    BOOST_TEST(m.messages_received == 7u);
    BOOST_TEST(m.messages_sent == 8u);
    BOOST_TEST(m.payload_bytes_received == 9u);
    BOOST_TEST(m.payload_bytes_sent == 10u);
    BOOST_TEST(m.wire_bytes_received == 11u);
    BOOST_TEST(m.wire_bytes_sent == 12u);
    BOOST_TEST(m.pings_received == 13u);
    BOOST_TEST(m.pongs_received == 14u);
    BOOST_TEST(m.pings_sent == 15u);
    BOOST_TEST(m.pongs_sent == 16u);
    BOOST_TEST(m.frames_received == 17u);
    BOOST_TEST(m.frames_sent == 18u);
    BOOST_TEST(m.queued_output_bytes == 19u);
}

BOOST_AUTO_TEST_CASE(a_gauge_summed_over_threads_is_exact_when_one_went_below_zero) {
    // Per thread a gauge is what that thread added less what it subtracted, modulo 2^64: a
    // thread that only subtracted wraps, and the sum comes out right all the same.
    corows::connection_counters a, b;
    a.queued_output_bytes.add(1000);
    b.queued_output_bytes.subtract(300);
    corows::connection_metrics m = a.snapshot();
    m += b.snapshot();
    BOOST_TEST(m.queued_output_bytes == 700u);
}

BOOST_AUTO_TEST_CASE(handshake_durations_land_in_their_buckets) {
    using std::chrono::microseconds;
    corows::connection_counters k;
    k.handshake_took(microseconds(500));
    k.handshake_took(microseconds(1000));
    k.handshake_took(microseconds(3000));
    k.handshake_took(std::chrono::seconds(3));
    corows::handshake_histogram h;
    k.add_handshakes_to(h);
    BOOST_TEST(h.count() == 4u);
    BOOST_TEST(h.buckets[0] == 2u); // le is inclusive
    BOOST_TEST(h.buckets[2] == 1u);
    BOOST_TEST(h.buckets[8] == 1u);
    BOOST_TEST(h.sum.count() == 3'004'500'000);
}

BOOST_AUTO_TEST_CASE(sums_add_every_field_and_open_never_goes_below_zero) {
    corows::connection_metrics a, b;
    a.opened = 1;
    a.closed_by[0] = 1;
    a.closed_by_code[16] = 4;
    a.wire_bytes_sent = 100;
    b.opened = 2;
    b.closed_by[4] = 1;
    b.closed_by_code[16] = 1;
    b.wire_bytes_sent = 50;
    b.pongs_sent = 3;
    a.frames_received = 4;
    b.frames_received = 5;
    b.frames_sent = 6;
    a.queued_output_bytes = 7;
    b.queued_output_bytes = 8;
    a += b;
    BOOST_TEST(a.opened == 3u);
    BOOST_TEST(a.closed() == 2u);
    BOOST_TEST(a.closed_by_code[16] == 5u);
    BOOST_TEST(a.wire_bytes_sent == 150u);
    BOOST_TEST(a.pongs_sent == 3u);
    BOOST_TEST(a.frames_received == 9u);
    BOOST_TEST(a.frames_sent == 6u);
    BOOST_TEST(a.queued_output_bytes == 15u);
    corows::connection_metrics torn; // an ending read without its opening
    torn.closed_by[1] = 1;
    BOOST_TEST(torn.open() == 0u);
}

BOOST_AUTO_TEST_CASE(a_reader_on_another_thread_sees_counts_grow_to_the_total) {
    // One writer, one reader at once: the reader's values only grow, and end at the total
    // (ThreadSanitizer checks that this is no data race).
    corows::connection_counters k;
    constexpr std::uint64_t n = 200000;
    std::thread writer([&] {
        for (std::uint64_t i = 0; i < n; ++i) k.messages_sent.add();
    });
    std::uint64_t last = 0;
    bool monotonic = true;
    for (std::uint64_t seen = 0; seen < n;) {
        seen = k.snapshot().messages_sent;
        monotonic = monotonic && seen >= last;
        last = seen;
    }
    writer.join();
    BOOST_TEST(monotonic);
    BOOST_TEST(k.snapshot().messages_sent == n);
}

BOOST_AUTO_TEST_SUITE_END()
