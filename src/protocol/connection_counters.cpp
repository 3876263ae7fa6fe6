// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/connection_counters.hpp>

namespace corows {

connection_metrics& connection_metrics::operator+=(const connection_metrics& o) noexcept {
    opened += o.opened;
    for (std::size_t i = 0; i < closed_by.size(); ++i) closed_by[i] += o.closed_by[i];
    for (std::size_t i = 0; i < closed_by_code.size(); ++i) closed_by_code[i] += o.closed_by_code[i];
    messages_received += o.messages_received;
    messages_sent += o.messages_sent;
    payload_bytes_received += o.payload_bytes_received;
    payload_bytes_sent += o.payload_bytes_sent;
    wire_bytes_received += o.wire_bytes_received;
    wire_bytes_sent += o.wire_bytes_sent;
    pings_received += o.pings_received;
    pongs_received += o.pongs_received;
    pings_sent += o.pings_sent;
    pongs_sent += o.pongs_sent;
    frames_received += o.frames_received;
    frames_sent += o.frames_sent;
    queued_output_bytes += o.queued_output_bytes;
    return *this;
}

connection_metrics connection_counters::snapshot() const noexcept {
    connection_metrics m;
    // Endings before openings: a connection that opens and ends between the two reads is
    // then counted open rather than making open() negative.
    for (std::size_t i = 0; i < closed_by.size(); ++i) m.closed_by[i] = closed_by[i].get();
    for (std::size_t i = 0; i < closed_by_code.size(); ++i) m.closed_by_code[i] = closed_by_code[i].get();
    m.opened = opened.get();
    m.messages_received = messages_received.get();
    m.messages_sent = messages_sent.get();
    m.payload_bytes_received = payload_bytes_received.get();
    m.payload_bytes_sent = payload_bytes_sent.get();
    m.wire_bytes_received = wire_bytes_received.get();
    m.wire_bytes_sent = wire_bytes_sent.get();
    m.pings_received = pings_received.get();
    m.pongs_received = pongs_received.get();
    m.pings_sent = pings_sent.get();
    m.pongs_sent = pongs_sent.get();
    m.frames_received = frames_received.get();
    m.frames_sent = frames_sent.get();
    m.queued_output_bytes = queued_output_bytes.get();
    return m;
}

void connection_counters::add_handshakes_to(handshake_histogram& h) const noexcept {
    for (std::size_t i = 0; i < handshake_buckets.size(); ++i) h.buckets[i] += handshake_buckets[i].get();
    h.sum += std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(handshake_nanoseconds.get()));
}

} // namespace corows
