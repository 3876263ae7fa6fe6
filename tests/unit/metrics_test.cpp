// SPDX-License-Identifier: BSL-1.0
// corows::write_prometheus: the text exposition format, family by family, and the handshake
// histogram's buckets.
#include <corows/metrics.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

namespace {
bool has_line(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}
} // namespace

BOOST_AUTO_TEST_SUITE(metrics)

BOOST_AUTO_TEST_CASE(every_family_has_help_and_type_before_its_samples) {
    corows::server_metrics m;
    m.accepted = 12;
    m.refused[static_cast<std::size_t>(corows::refusal_reason::address_limit)] = 2;
    m.handshakes_in_progress = 1;
    m.connections.opened = 9;
    m.connections.closed_by[static_cast<std::size_t>(corows::ended_by::timeout)] = 4;
    m.connections.closed_by_code[corows::code_slot(1006)] = 4;
    m.connections.closed_by_code[corows::code_slot(4321)] = 0;
    m.connections.messages_received = 10;
    m.connections.messages_sent = 30;
    m.connections.frames_received = 31;
    m.connections.frames_sent = 32;
    m.connections.queued_output_bytes = 33;
    m.tls_handshakes = 34;
    m.tls_handshake_failures = 3;
    m.tls_alerts_sent[corows::tls_alert_slot(70)] = 2;
    m.tls_alerts_sent[corows::tls_alert_slot(99)] = 1;
    const std::string t = corows::to_prometheus(m);
    BOOST_TEST(t.rfind("# HELP corows_connections_accepted_total ", 0) == 0u);
    BOOST_TEST(has_line(t, "# TYPE corows_connections_accepted_total counter"));
    BOOST_TEST(has_line(t, "corows_connections_accepted_total 12"));
    BOOST_TEST(has_line(t, "# TYPE corows_connections_open gauge"));
    BOOST_TEST(has_line(t, "corows_connections_open 5"));
    BOOST_TEST(has_line(t, "corows_connections_opened_total 9"));
    BOOST_TEST(has_line(t, "corows_connections_refused_total{reason=\"address_limit\"} 2"));
    BOOST_TEST(has_line(t, "corows_connections_refused_total{reason=\"abandoned\"} 0"));
    BOOST_TEST(has_line(t, "corows_handshakes_in_progress 1"));
    BOOST_TEST(has_line(t, "corows_connections_closed_total{by=\"timeout\"} 4"));
    BOOST_TEST(has_line(t, "corows_connections_closed_total{by=\"slow_consumer\"} 0"));
    BOOST_TEST(has_line(t, "corows_close_codes_total{code=\"1006\"} 4"));
    BOOST_TEST(has_line(t, "corows_close_codes_total{code=\"1015\"} 0"));
    BOOST_TEST(has_line(t, "corows_close_codes_total{code=\"other\"} 0"));
    BOOST_TEST(has_line(t, "corows_messages_received_total 10"));
    BOOST_TEST(has_line(t, "corows_messages_sent_total 30"));
    BOOST_TEST(has_line(t, "# TYPE corows_frames_received_total counter"));
    BOOST_TEST(has_line(t, "corows_frames_received_total 31"));
    BOOST_TEST(has_line(t, "corows_frames_sent_total 32"));
    BOOST_TEST(has_line(t, "# TYPE corows_queued_output_bytes gauge"));
    BOOST_TEST(has_line(t, "corows_queued_output_bytes 33"));
    BOOST_TEST(has_line(t, "# TYPE corows_tls_handshakes_total counter"));
    BOOST_TEST(has_line(t, "corows_tls_handshakes_total 34"));
    BOOST_TEST(has_line(t, "corows_tls_handshake_failures_total 3"));
    BOOST_TEST(has_line(t, "# TYPE corows_tls_alerts_sent_total counter"));
    BOOST_TEST(has_line(t, "corows_tls_alerts_sent_total{alert=\"protocol_version\"} 2"));
    BOOST_TEST(has_line(t, "corows_tls_alerts_sent_total{alert=\"other\"} 1"));
    BOOST_TEST(has_line(t, "corows_tls_alerts_sent_total{alert=\"handshake_failure\"} 0"));
    BOOST_TEST(t.back() == '\n');
    // Each family's HELP comes right before its TYPE, and its samples after both.
    std::size_t families = 0, pos = 0;
    while ((pos = t.find("# HELP ", pos)) != std::string::npos) {
        const auto end = t.find('\n', pos);
        const std::string name = t.substr(pos + 7, t.find(' ', pos + 7) - pos - 7);
        BOOST_TEST(t.compare(end + 1, 7 + name.size(), "# TYPE " + name) == 0, name);
        BOOST_TEST(name.rfind("corows_", 0) == 0u, name);
        ++families;
        pos = end;
    }
    BOOST_TEST(families == 24u);
    // Every sample: 46 before the frames, the queue and TLS, the histogram's 11, and 30 more.
    std::size_t samples = 0;
    for (std::size_t at = 0; at < t.size(); at = t.find('\n', at) + 1)
        if (t[at] != '#') ++samples;
    BOOST_TEST(samples == 46u + 11u + 3u + 2u + corows::tls_alert_slots);
}

BOOST_AUTO_TEST_CASE(tls_alerts_count_by_their_rfc_name_or_as_other) {
    BOOST_TEST(std::string(corows::tls_alert_name(corows::tls_alert_slot(40))) == "handshake_failure");
    BOOST_TEST(std::string(corows::tls_alert_name(corows::tls_alert_slot(116))) == "certificate_required");
    BOOST_TEST(corows::tls_alert_slot(0) == corows::tls_alert_slots - 1); // close_notify is no failure's
    BOOST_TEST(std::string(corows::tls_alert_name(corows::tls_alert_slots - 1)) == "other");
    // Every name once, every code once.
    for (std::size_t i = 0; i < corows::tls_alert_labels.size(); ++i)
        for (std::size_t j = i + 1; j < corows::tls_alert_labels.size(); ++j) {
            BOOST_TEST(corows::tls_alert_labels[i].description != corows::tls_alert_labels[j].description);
            BOOST_TEST(std::string(corows::tls_alert_labels[i].name) != corows::tls_alert_labels[j].name);
        }
}

BOOST_AUTO_TEST_CASE(the_handshake_histogram_is_cumulative_with_sum_and_count) {
    using std::chrono::microseconds;
    corows::server_metrics m;
    auto& h = m.handshake_duration;
    for (auto d : {microseconds(500), microseconds(1000), microseconds(3000), microseconds(3'000'000)}) {
        h.buckets[corows::handshake_histogram::bucket_of(d)] += 1;
        h.sum += d;
    }
    BOOST_TEST(corows::handshake_histogram::bucket_of(microseconds(1000)) == 0u); // le is inclusive
    BOOST_TEST(h.count() == 4u);
    const std::string t = corows::to_prometheus(m);
    BOOST_TEST(has_line(t, "# TYPE corows_handshake_duration_seconds histogram"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_bucket{le=\"0.001\"} 2"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_bucket{le=\"0.0025\"} 2"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_bucket{le=\"0.005\"} 3"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_bucket{le=\"2.5\"} 3"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_bucket{le=\"+Inf\"} 4"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_sum 3.0045"));
    BOOST_TEST(has_line(t, "corows_handshake_duration_seconds_count 4"));
}

BOOST_AUTO_TEST_CASE(write_prometheus_appends) {
    std::string out = "# before\n";
    corows::write_prometheus(out, corows::server_metrics{});
    BOOST_TEST(out.rfind("# before\n# HELP ", 0) == 0u);
    BOOST_TEST(out == "# before\n" + corows::to_prometheus(corows::server_metrics{}));
}

BOOST_AUTO_TEST_CASE(a_hub_writes_its_own_families) {
    corows::hub_metrics h;
    h.topics = 2;
    h.subscriptions = 5;
    h.publishes = 7;
    h.deliveries = 30;
    h.slow_consumers[1] = 4;
    std::string t;
    corows::write_prometheus(t, h);
    BOOST_TEST(t.rfind("# HELP corows_hub_topics ", 0) == 0u);
    BOOST_TEST(has_line(t, "# TYPE corows_hub_topics gauge"));
    BOOST_TEST(has_line(t, "corows_hub_topics 2"));
    BOOST_TEST(has_line(t, "corows_hub_subscriptions 5"));
    BOOST_TEST(has_line(t, "# TYPE corows_hub_publishes_total counter"));
    BOOST_TEST(has_line(t, "corows_hub_publishes_total 7"));
    BOOST_TEST(has_line(t, "corows_hub_deliveries_total 30"));
    BOOST_TEST(has_line(t, "corows_hub_slow_consumers_total{policy=\"close\"} 0"));
    BOOST_TEST(has_line(t, "corows_hub_slow_consumers_total{policy=\"drop\"} 4"));
    BOOST_TEST(has_line(t, "corows_hub_slow_consumers_total{policy=\"drop_and_notify\"} 0"));
}

BOOST_AUTO_TEST_SUITE_END()
