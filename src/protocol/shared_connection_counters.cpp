// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/shared_connection_counters.hpp>

namespace corows {

connection_metrics shared_connection_counters::snapshot() const {
    std::lock_guard lock(m_);
    connection_metrics m = retired_;
    for (const auto& [key, part] : live_) m += part->snapshot();
    return m;
}

handshake_histogram shared_connection_counters::handshakes() const {
    std::lock_guard lock(m_);
    handshake_histogram h = retired_handshakes_;
    for (const auto& [key, part] : live_) part->add_handshakes_to(h);
    return h;
}

connection_counters& shared_connection_counters::enlist() {
    auto part = std::make_unique<connection_counters>(this);
    connection_counters& p = *part;
    std::lock_guard lock(m_);
    live_.emplace(&p, std::move(part));
    return p;
}

void shared_connection_counters::retire(connection_counters& part) noexcept {
    std::unique_ptr<connection_counters> gone; // freed outside the lock
    std::lock_guard lock(m_);
    auto it = live_.find(&part);
    if (it == live_.end()) return;
    // The part's writer is done with it: what it counted last happened before this call.
    retired_ += part.snapshot();
    part.add_handshakes_to(retired_handshakes_);
    gone = std::move(it->second);
    live_.erase(it);
}

std::size_t shared_connection_counters::parts() const {
    std::lock_guard lock(m_);
    return live_.size();
}

} // namespace corows
