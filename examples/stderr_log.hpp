// SPDX-License-Identifier: BSL-1.0
// The examples' --log-level: corows' log records as lines on stderr.
#pragma once

#include <corows/log.hpp>

#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace examples {

/// log_options writing "LEVEL CATEGORY [#ID] [PEER] MESSAGE" lines to stderr from `level`
/// ("debug", "info", "warning", "error"; "off": none). Throws std::invalid_argument otherwise.
inline corows::log_options stderr_log(std::string_view level) {
    corows::log_options o;
    if (level == "off") return o;
    if (level == "debug") o.level = corows::log_level::debug;
    else if (level == "info") o.level = corows::log_level::info;
    else if (level == "warning") o.level = corows::log_level::warning;
    else if (level == "error") o.level = corows::log_level::error;
    else throw std::invalid_argument("--log-level: debug, info, warning, error or off");
    o.sink = [](const corows::log_record& r) {
        std::string line = std::string(to_string(r.level)) + " " + to_string(r.category);
        if (r.connection) line += " #" + std::to_string(r.connection);
        if (!r.peer.empty()) line += " " + std::string(r.peer);
        line += " " + std::string(r.message);
        if (r.suppressed) line += " (" + std::to_string(r.suppressed) + " like it not logged)";
        line += "\n";
        std::cerr << line << std::flush; // one write per line: threads do not interleave within one
    };
    return o;
}

} // namespace examples
