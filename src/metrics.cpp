// SPDX-License-Identifier: BSL-1.0
#include <corows/metrics.hpp>

#include <charconv>
#include <string_view>

namespace corows {
namespace {

void append_number(std::string& out, std::uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void append_number(std::string& out, double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// `# HELP` and `# TYPE` of one family.
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

template <class V>
void sample(std::string& out, std::string_view name, V value, std::string_view label = {},
            std::string_view label_value = {}) {
    out.append(name);
    if (!label.empty()) out.append("{").append(label).append("=\"").append(label_value).append("\"}");
    out.push_back(' ');
    append_number(out, value);
    out.push_back('\n');
}

template <class V>
void single(std::string& out, std::string_view name, std::string_view type, std::string_view help, V value) {
    family(out, name, type, help);
    sample(out, name, value);
}

// The counters of messages, bytes and control frames: one family each.
struct traffic_family {
    const char* name;
    const char* help;
    std::uint64_t connection_metrics::*value;
};
constexpr traffic_family traffic_families[] = {
    {"corows_messages_received_total", "Data messages received.", &connection_metrics::messages_received},
    {"corows_messages_sent_total", "Data messages sent (hub deliveries included).", &connection_metrics::messages_sent},
    {"corows_payload_received_bytes_total", "Payload bytes of the messages received.",
     &connection_metrics::payload_bytes_received},
    {"corows_payload_sent_bytes_total", "Payload bytes of the messages sent, before compression.",
     &connection_metrics::payload_bytes_sent},
    {"corows_wire_received_bytes_total", "WebSocket frame bytes read, compressed.",
     &connection_metrics::wire_bytes_received},
    {"corows_wire_sent_bytes_total", "WebSocket frame bytes queued for the transport, compressed.",
     &connection_metrics::wire_bytes_sent},
    {"corows_pings_received_total", "Pings received.", &connection_metrics::pings_received},
    {"corows_pongs_received_total", "Pongs received.", &connection_metrics::pongs_received},
    {"corows_pings_sent_total", "Pings sent (keepalive included).", &connection_metrics::pings_sent},
    {"corows_pongs_sent_total", "Pongs sent.", &connection_metrics::pongs_sent},
    {"corows_frames_received_total", "WebSocket frames received whole, data (each fragment) and control.",
     &connection_metrics::frames_received},
    {"corows_frames_sent_total", "WebSocket frames sent, data (each fragment) and control.",
     &connection_metrics::frames_sent},
};

void write_connections(std::string& out, const connection_metrics& c) {
    single(out, "corows_connections_open", "gauge", "WebSocket connections open now.", c.open());
    single(out, "corows_connections_opened_total", "counter", "WebSocket connections opened (handshake done).",
           c.opened);
    family(out, "corows_connections_closed_total", "counter",
           "WebSocket connections ended, by who or what ended them.");
    for (std::size_t i = 0; i < ended_by_count; ++i)
        sample(out, "corows_connections_closed_total", c.closed_by[i], "by", to_string(static_cast<ended_by>(i)));
    family(out, "corows_close_codes_total", "counter",
           "WebSocket connections ended, by the close code that decided it (1006: no close frame).");
    for (std::size_t i = 0; i < counted_codes; ++i) {
        std::string code = i + 1 < counted_codes ? std::to_string(first_counted_code + i) : "other";
        sample(out, "corows_close_codes_total", c.closed_by_code[i], "code", code);
    }
    for (const auto& f : traffic_families)
        single(out, f.name, "counter", f.help, c.*f.value);
    single(out, "corows_queued_output_bytes", "gauge", "Bytes the WebSocket connections have queued to write now.",
           c.queued_output_bytes);
}

} // namespace

void write_prometheus(std::string& out, const server_metrics& m) {
    single(out, "corows_connections_accepted_total", "counter", "Sockets accepted, before any limit.", m.accepted);
    family(out, "corows_connections_refused_total", "counter",
           "Connections turned away before their WebSocket opened, by reason.");
    for (std::size_t i = 0; i < refusal_reason_count; ++i)
        sample(out, "corows_connections_refused_total", m.refused[i], "reason",
               to_string(static_cast<refusal_reason>(i)));
    single(out, "corows_handshakes_in_progress", "gauge", "Connections in their opening handshake now.",
           m.handshakes_in_progress);

    constexpr std::string_view h = "corows_handshake_duration_seconds";
    family(out, h, "histogram", "Opening handshakes, from accept to the open WebSocket.");
    std::uint64_t cumulative = 0;
    const auto& hd = m.handshake_duration;
    for (std::size_t i = 0; i < hd.buckets.size(); ++i) {
        cumulative += hd.buckets[i];
        std::string le;
        if (i < hd.bounds.size()) append_number(le, hd.bounds[i]);
        else le = "+Inf";
        sample(out, "corows_handshake_duration_seconds_bucket", cumulative, "le", le);
    }
    sample(out, "corows_handshake_duration_seconds_sum", std::chrono::duration<double>(hd.sum).count());
    sample(out, "corows_handshake_duration_seconds_count", cumulative);

    single(out, "corows_tls_handshakes_total", "counter", "TLS handshakes completed.", m.tls_handshakes);
    single(out, "corows_tls_handshake_failures_total", "counter",
           "TLS handshakes that failed, timed out or were cut by a stop.", m.tls_handshake_failures);
    family(out, "corows_tls_alerts_sent_total", "counter",
           "Fatal TLS alerts sent by failed handshakes, by description.");
    for (std::size_t i = 0; i < tls_alert_slots; ++i)
        sample(out, "corows_tls_alerts_sent_total", m.tls_alerts_sent[i], "alert", tls_alert_name(i));

    write_connections(out, m.connections);
}

void write_prometheus(std::string& out, const hub_metrics& m) {
    single(out, "corows_hub_topics", "gauge", "Hub topics with a subscriber in this process.", m.topics);
    single(out, "corows_hub_subscriptions", "gauge", "Hub subscriptions in this process.", m.subscriptions);
    single(out, "corows_hub_publishes_total", "counter", "Messages published to the hub in this process.",
           m.publishes);
    single(out, "corows_hub_deliveries_total", "counter", "Messages the hub queued to subscribers in this process.",
           m.deliveries);
    family(out, "corows_hub_slow_consumers_total", "counter",
           "Subscribers whose queue was full when a message came, by the topic's policy.");
    constexpr const char* policies[] = {"close", "drop", "drop_and_notify"};
    for (std::size_t i = 0; i < slow_consumer_policies; ++i)
        sample(out, "corows_hub_slow_consumers_total", m.slow_consumers[i], "policy", policies[i]);
}

void write_prometheus(std::string& out, const backplane_metrics& m) {
    single(out, "corows_backplane_connected", "gauge",
           "1 while both connections to Redis are up and every subscription is confirmed.",
           std::uint64_t{m.connected ? 1u : 0u});
    single(out, "corows_backplane_queued_bytes", "gauge", "Publishes held for Redis, in bytes.", m.queued_bytes);
    single(out, "corows_backplane_published_total", "counter", "Publishes queued for Redis.", m.published);
    single(out, "corows_backplane_received_total", "counter", "Other processes' messages handed to the hub.",
           m.received);
    single(out, "corows_backplane_dropped_total", "counter",
           "Publishes dropped: the queue was full, or the payload too large.", m.dropped);
    single(out, "corows_backplane_malformed_total", "counter", "Messages from Redis dropped as malformed.",
           m.malformed);
    single(out, "corows_backplane_connection_failures_total", "counter",
           "Connections to Redis lost, or connection attempts failed.", m.connection_failures);
    single(out, "corows_backplane_gaps_total", "counter",
           "Times the subscriptions came back after a loss, when other processes' messages may have been missed.",
           m.gaps);
    single(out, "corows_backplane_gap_seconds_total", "counter", "How long those gaps may have lasted, added up.",
           std::chrono::duration<double>(m.gap_time).count());
}

std::string to_prometheus(const server_metrics& m) {
    std::string out;
    write_prometheus(out, m);
    return out;
}

} // namespace corows
