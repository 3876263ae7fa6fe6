// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>
#include <corows/protocol/backoff.hpp>
#include <corows/protocol/url.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <system_error>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::close_info;
using corows::close_phase;
using corows::ended_by;

// An open connection's ending with `code`: the server's close frame (remote), or ours.
close_info closed_with(std::uint16_t code, bool remote = true, ended_by by = ended_by::peer) {
    close_info r;
    r.phase = close_phase::open;
    r.code = code;
    r.remote = remote;
    r.by = by;
    r.error = make_error_code(corows::error::closed);
    return r;
}

// A connect attempt that failed with `ec` (in the handshake, with `status`, if one is given).
close_info failed_with(std::error_code ec, unsigned status = 0) {
    close_info r;
    r.phase = status != 0 ? close_phase::handshake : close_phase::connecting;
    r.code = 1006;
    r.error = ec;
    r.status = status;
    return r;
}

corows::reconnect_options policy(std::chrono::milliseconds initial, double factor, std::chrono::milliseconds max) {
    corows::reconnect_options o;
    o.initial_delay = initial;
    o.factor = factor;
    o.max_delay = max;
    return o;
}

// 2026-12-02 04:00:00 UTC, a Wednesday.
const std::chrono::system_clock::time_point now =
    std::chrono::sys_days(std::chrono::year(2026) / 12 / 2) + std::chrono::hours(4);

} // namespace

BOOST_AUTO_TEST_SUITE(backoff)

BOOST_AUTO_TEST_CASE(each_close_code_reconnects_or_ends_the_loop) {
    for (std::uint16_t code : {1001, 1006, 1011, 1012, 1013, 1014})
        BOOST_TEST(corows::reconnect_by_default(closed_with(code)), code);
    for (std::uint16_t code : {1000, 1002, 1003, 1005, 1007, 1008, 1009, 1010, 3000, 4000, 4999})
        BOOST_TEST(!corows::reconnect_by_default(closed_with(code)), code);
    // The application's own close is judged by its code, as the server's echo of it.
    BOOST_TEST(!corows::reconnect_by_default(closed_with(1000, false, ended_by::local)));
    BOOST_TEST(corows::reconnect_by_default(closed_with(1001, false, ended_by::local)));
    // The application moved on from an open connection.
    close_info left_open;
    left_open.phase = close_phase::open;
    BOOST_TEST(corows::reconnect_by_default(left_open));
}

BOOST_AUTO_TEST_CASE(a_connection_this_side_ended_for_a_fault_counts_as_dropped) {
    // Our 1002 for the server's violation, our 1008 to a server that stopped reading, our
    // idle timeout: the server sent no close frame, so these reconnect as 1006 would.
    BOOST_TEST(corows::reconnect_by_default(closed_with(1002, false, ended_by::error)));
    BOOST_TEST(corows::reconnect_by_default(closed_with(1008, false, ended_by::slow_consumer)));
    BOOST_TEST(corows::reconnect_by_default(closed_with(1006, false, ended_by::timeout)));
    // A close timeout after the application's 1000: the server never answered.
    close_info unanswered = closed_with(1000, false, ended_by::timeout);
    unanswered.phase = close_phase::closing;
    BOOST_TEST(corows::reconnect_by_default(unanswered));
    // The server's own 1002 ends the loop.
    BOOST_TEST(!corows::reconnect_by_default(closed_with(1002, true, ended_by::error)));
}

BOOST_AUTO_TEST_CASE(connect_failures_reconnect_unless_trying_again_cannot_help) {
    const std::error_code refused = std::make_error_code(std::errc::connection_refused);
    BOOST_TEST(corows::reconnect_by_default(failed_with(refused)));
    BOOST_TEST(corows::reconnect_by_default(failed_with(corows::error::timeout)));
    BOOST_TEST(corows::reconnect_by_default(failed_with(corows::error::handshake_closed)));
    for (unsigned status : {429u, 500u, 502u, 503u, 504u, 599u})
        BOOST_TEST(corows::reconnect_by_default(failed_with(corows::error::bad_status, status)), status);
    for (unsigned status : {301u, 400u, 401u, 403u, 404u, 426u, 200u})
        BOOST_TEST(!corows::reconnect_by_default(failed_with(corows::error::bad_status, status)), status);
    BOOST_TEST(!corows::reconnect_by_default(failed_with(corows::url_error::bad_scheme)));
    BOOST_TEST(!corows::reconnect_by_default(failed_with(corows::url_error::bad_port)));
}

BOOST_AUTO_TEST_CASE(stop_never_reconnects_and_nothing_yet_does) {
    close_info stopped;
    stopped.by = ended_by::local;
    stopped.error = std::make_error_code(std::errc::operation_canceled);
    BOOST_TEST(stopped.stopped());
    BOOST_TEST(stopped.ended());
    BOOST_TEST(!corows::reconnect_by_default(stopped));
    // Stopped while a connection was open: its close stays, stopped() decides.
    close_info stopped_open = closed_with(1001, false, ended_by::local);
    stopped_open.error = stopped.error;
    BOOST_TEST(!corows::reconnect_by_default(stopped_open));
    BOOST_TEST(!close_info{}.ended());
    BOOST_TEST(corows::reconnect_by_default(close_info{}));
}

// The record of the last release converts from close_info, keeps its old decision, and a
// decision written for it still fits should_reconnect.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
BOOST_AUTO_TEST_CASE(the_deprecated_disconnect_reason_converts_and_decides_as_before) {
    using corows::disconnect_kind;
    using corows::disconnect_reason;
    BOOST_TEST((disconnect_reason{}.kind == disconnect_kind::none));
    BOOST_TEST((disconnect_reason(close_info{}).kind == disconnect_kind::none));

    close_info peer = closed_with(1012);
    peer.reason = "service restart";
    const disconnect_reason closed = peer;
    BOOST_TEST((closed.kind == disconnect_kind::closed));
    BOOST_TEST(closed.close_code == 1012);
    BOOST_TEST(closed.close_reason == "service restart");
    BOOST_TEST(closed.close.code == 1012);
    BOOST_TEST(closed.message == "the connection closed with 1012 (service restart)");
    // Ours for a fault: the server's code was none, as dropped.
    BOOST_TEST(disconnect_reason(closed_with(1002, false, ended_by::error)).close_code == 1006);

    close_info refused = failed_with(corows::error::bad_status, 503);
    refused.retry_after = std::chrono::seconds(2);
    refused.reason = "corows::connect: WebSocket upgrade with h:1 failed: 503";
    const disconnect_reason failed = refused;
    BOOST_TEST((failed.kind == disconnect_kind::connect_failed));
    BOOST_TEST(failed.status == 503u);
    BOOST_TEST((failed.retry_after == std::chrono::seconds(2)));
    BOOST_TEST(failed.message == refused.reason);

    close_info stop;
    stop.error = std::make_error_code(std::errc::operation_canceled);
    BOOST_TEST((disconnect_reason(stop).kind == disconnect_kind::stopped));

    // The old overload decides on the old fields.
    disconnect_reason old;
    old.kind = disconnect_kind::closed;
    old.close_code = 1012;
    BOOST_TEST(corows::reconnect_by_default(old));
    old.close_code = 1000;
    BOOST_TEST(!corows::reconnect_by_default(old));

    // A decision of the last release, as a lambda or a std::function, fits the new member.
    corows::reconnect_options ro;
    ro.should_reconnect = [](const disconnect_reason& r) { return r.kind == disconnect_kind::closed && r.close_code == 4000; };
    BOOST_TEST(ro.should_reconnect(closed_with(4000)));
    BOOST_TEST(!ro.should_reconnect(closed_with(4001)));
    std::function<bool(const disconnect_reason&)> f = [](const disconnect_reason& r) { return r.status == 503; };
    ro.should_reconnect = f;
    BOOST_TEST(ro.should_reconnect(refused));
}
#pragma GCC diagnostic pop

BOOST_AUTO_TEST_CASE(the_ceiling_grows_by_the_factor_up_to_the_cap) {
    corows::backoff b(policy(500ms, 2.0, 5'000ms), 1);
    const std::array<long, 7> expected{500, 1000, 2000, 4000, 5000, 5000, 5000};
    for (long e : expected) {
        BOOST_TEST(b.ceiling().count() == e);
        (void)b.next_delay();
    }
    BOOST_TEST(b.failures() == 7u);
    // Hundreds of failures neither overflow nor leave the cap.
    for (int i = 0; i < 2000; ++i) BOOST_TEST((b.next_delay() <= 5'000ms));
    BOOST_TEST(b.ceiling().count() == 5000);
}

BOOST_AUTO_TEST_CASE(a_golden_ratio_factor_and_a_factor_below_one) {
    corows::backoff golden(policy(1'000ms, 1.618, 60'000ms), 1);
    (void)golden.next_delay();
    BOOST_TEST(golden.ceiling().count() == 1618);
    (void)golden.next_delay();
    BOOST_TEST(golden.ceiling().count() == 2617); // 1000 * 1.618^2 = 2617.9, truncated
    corows::backoff flat(policy(1'000ms, 0.5, 60'000ms), 1);
    for (int i = 0; i < 5; ++i) (void)flat.next_delay();
    BOOST_TEST(flat.ceiling().count() == 1000);
}

BOOST_AUTO_TEST_CASE(full_jitter_covers_zero_to_the_ceiling_uniformly) {
    // 4000 draws from [0, 1000]: each tenth of the window gets about 400; without jitter (or
    // with "equal jitter") the low tenths would get none.
    std::array<int, 10> tenths{};
    long lo = 1'000'000, hi = -1;
    for (std::uint_fast32_t seed = 1; seed <= 4000; ++seed) {
        corows::backoff b(policy(1'000ms, 2.0, 60'000ms), seed * 7919u);
        const long d = b.next_delay().count();
        BOOST_REQUIRE(d >= 0);
        BOOST_REQUIRE(d <= 1000);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        ++tenths[std::min<long>(d / 100, 9)];
    }
    BOOST_TEST(lo < 20);
    BOOST_TEST(hi > 980);
    for (int n : tenths) {
        BOOST_TEST(n > 250);
        BOOST_TEST(n < 550);
    }
}

BOOST_AUTO_TEST_CASE(draws_stay_within_each_growing_ceiling) {
    corows::backoff b(policy(100ms, 3.0, 2'000ms), 42);
    for (int i = 0; i < 50; ++i) {
        const auto bound = b.ceiling();
        const auto d = b.next_delay();
        BOOST_TEST((d >= 0ms && d <= bound), d.count() << " > " << bound.count());
    }
}

BOOST_AUTO_TEST_CASE(a_long_connection_resets_the_count_a_short_one_does_not) {
    auto o = policy(100ms, 2.0, 10'000ms);
    o.reset_after = 5'000ms;
    corows::backoff b(o, 3);
    for (int i = 0; i < 4; ++i) (void)b.next_delay();
    BOOST_TEST(b.ceiling().count() == 1600);
    b.connection_lasted(4'999ms); // accepted, then cut at once: keep backing off
    BOOST_TEST(b.failures() == 4u);
    b.connection_lasted(5'000ms);
    BOOST_TEST(b.failures() == 0u);
    BOOST_TEST(b.ceiling().count() == 100);
}

BOOST_AUTO_TEST_CASE(zero_delays_never_wait) {
    corows::backoff b(policy(0ms, 2.0, 0ms), 9);
    for (int i = 0; i < 10; ++i) BOOST_TEST(b.next_delay().count() == 0);
    BOOST_TEST(b.next_delay(0s).count() == 0);
}

BOOST_AUTO_TEST_CASE(retry_after_replaces_the_backoff_within_its_limit) {
    auto o = policy(50ms, 2.0, 60'000ms);
    o.max_retry_after = 30'000ms;
    corows::backoff b(o, 5);
    for (int i = 0; i < 20; ++i) {
        const auto d = b.next_delay(2s);
        BOOST_TEST((d >= 2'000ms && d <= 2'050ms), d.count());
    }
    BOOST_TEST(b.failures() == 20u); // a refusal is a failure: the backoff goes on growing
    const auto parked = b.next_delay(std::chrono::seconds(365LL * 24 * 3600));
    BOOST_TEST((parked >= 30'000ms && parked <= 30'050ms), parked.count());
    const auto huge = b.next_delay(std::chrono::seconds::max());
    BOOST_TEST((huge >= 30'000ms && huge <= 30'050ms), huge.count());
    const auto negative = b.next_delay(-5s);
    BOOST_TEST((negative >= 0ms && negative <= 50ms), negative.count());
}

BOOST_AUTO_TEST_CASE(retry_after_delta_seconds) {
    BOOST_TEST(corows::parse_retry_after("2", now).value().count() == 2);
    BOOST_TEST(corows::parse_retry_after("0", now).value().count() == 0);
    BOOST_TEST(corows::parse_retry_after(" 120\t", now).value().count() == 120);
    BOOST_TEST(corows::parse_retry_after("007", now).value().count() == 7);
    // Huge values saturate (about a century) instead of overflowing.
    const auto huge = corows::parse_retry_after("99999999999999999999999999999999", now);
    BOOST_REQUIRE(huge.has_value());
    BOOST_TEST(huge->count() == 100LL * 366 * 24 * 3600);
    BOOST_TEST(corows::parse_retry_after("3153600000", now).value().count() == 3153600000LL);
    BOOST_TEST(corows::parse_retry_after("3162240001", now).value().count() == 100LL * 366 * 24 * 3600);
}

BOOST_AUTO_TEST_CASE(retry_after_garbage_is_refused) {
    for (const char* v : {"", "   ", "-5", "+5", "1.5", "5s", "5 6", "soon", "0x10", "2\r\n",
                          "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT",
                          "Sun Nov  6 08:49:37 1994", "Sun, 6 Nov 1994 08:49:37 GMT",
                          "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                          "Sun, 31 Feb 2027 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                          "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 19a4 08:49:37 GMT"})
        BOOST_TEST(!corows::parse_retry_after(v, now).has_value(), '"' << v << '"');
}

BOOST_AUTO_TEST_CASE(retry_after_http_date) {
    // 90 s after `now`; the day name is not checked against the date (RFC 9110 lets a
    // recipient ignore it), only its form.
    BOOST_TEST(corows::parse_retry_after("Wed, 02 Dec 2026 04:01:30 GMT", now).value().count() == 90);
    BOOST_TEST(corows::parse_retry_after("Thu, 03 Dec 2026 04:00:00 GMT", now).value().count() == 86400);
    // A date in the past: no wait.
    BOOST_TEST(corows::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now).value().count() == 0);
    BOOST_TEST(corows::parse_retry_after("Wed, 02 Dec 2026 04:00:00 GMT", now).value().count() == 0);
    // Far future: saturated like a huge delta.
    BOOST_TEST(corows::parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now).value().count() ==
               100LL * 366 * 24 * 3600);
}

BOOST_AUTO_TEST_SUITE_END()
