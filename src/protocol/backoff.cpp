// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/ascii.hpp>
#include <corows/error.hpp>
#include <corows/protocol/backoff.hpp>
#include <corows/protocol/url.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace corows {

namespace {

// The most a delta-seconds value counts for: about a century, far past any max_retry_after,
// and far from overflowing a conversion to milliseconds.
constexpr std::int64_t max_delta_seconds = std::int64_t{100} * 366 * 24 * 3600;

// The close codes after which trying again can help.
bool code_calls_for_reconnect(std::uint16_t code) noexcept {
    switch (code) {
    case 0:    // the application moved on from an open connection
    case 1001: // going away: a server shutting down
    case 1006: // dropped without a close frame
    case 1011: // the server failed
    case 1012: // service restart
    case 1013: // try again later
    case 1014: // bad gateway: the proxy's upstream failed
        return true;
    default:
        return false;
    }
}

// The code a decision reads: the server's, or 1006 where this side ended the connection for
// a fault (a timeout, a slow consumer, the server's violation), which got no close frame from
// the server and is as good as dropped.
std::uint16_t server_code(const close_info& c) noexcept {
    if (c.code == 0 || c.remote || c.by == ended_by::local) return c.code;
    return static_cast<std::uint16_t>(close_code::abnormal);
}

} // namespace

bool reconnect_by_default(const close_info& c) noexcept {
    if (c.stopped()) return false;
    if (!c.ended()) return true;
    if (c.never_opened()) {
        if (c.error.category() == url_error_category()) return false;
        // 429 and 5xx say "later"; any other answer (401, 403, 404, a redirect) would be
        // given again.
        if (c.status != 0) return c.status == 429 || (c.status >= 500 && c.status <= 599);
        return true;
    }
    return code_calls_for_reconnect(server_code(c));
}

// The deprecated record, kept for one release.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

disconnect_reason::disconnect_reason() : kind(disconnect_kind::none) {}
disconnect_reason::disconnect_reason(const disconnect_reason&) = default;
disconnect_reason::disconnect_reason(disconnect_reason&&) noexcept = default;
disconnect_reason& disconnect_reason::operator=(const disconnect_reason&) = default;
disconnect_reason& disconnect_reason::operator=(disconnect_reason&&) noexcept = default;
disconnect_reason::~disconnect_reason() = default;

disconnect_reason::disconnect_reason(const close_info& c) : kind(disconnect_kind::none) {
    if (c.stopped()) {
        kind = disconnect_kind::stopped;
        message = "stopped";
        return;
    }
    if (c.never_opened()) {
        kind = disconnect_kind::connect_failed;
        error = c.error;
        status = c.status;
        retry_after = c.retry_after;
        message = c.reason.empty() ? c.describe() : c.reason;
        return;
    }
    if (!c.ended() && c.phase != close_phase::open && c.phase != close_phase::closing) return; // nothing yet
    kind = disconnect_kind::closed;
    close = c;
    close_code = server_code(c);
    if (c.remote) close_reason = c.reason;
    message = close_code == 0 ? std::string("the application left the connection open")
                              : "the connection closed with " + std::to_string(close_code);
    if (!close_reason.empty()) message += " (" + close_reason + ")";
}

bool reconnect_by_default(const disconnect_reason& r) noexcept {
    switch (r.kind) {
    case disconnect_kind::none: return true;
    case disconnect_kind::stopped: return false;
    case disconnect_kind::connect_failed:
        if (r.error.category() == url_error_category()) return false;
        if (r.status != 0) return r.status == 429 || (r.status >= 500 && r.status <= 599);
        return true;
    case disconnect_kind::closed: return code_calls_for_reconnect(r.close_code);
    }
    return false;
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

backoff::backoff(const reconnect_options& o, std::uint_fast32_t seed)
    : initial_(std::max(o.initial_delay, std::chrono::milliseconds(0))),
      factor_(o.factor >= 1.0 ? o.factor : 1.0), // also NaN
      max_(std::max(o.max_delay, std::chrono::milliseconds(0))),
      reset_after_(o.reset_after),
      max_retry_after_(std::max(o.max_retry_after, std::chrono::milliseconds(0))),
      rng_(static_cast<std::minstd_rand::result_type>(seed)) {}

std::chrono::milliseconds backoff::ceiling() const noexcept {
    // In double: factor^failures overflows any integer long before the cap stops mattering,
    // and infinity compares as it should.
    const double bound = static_cast<double>(initial_.count()) * std::pow(factor_, static_cast<double>(failures_));
    const double cap = static_cast<double>(max_.count());
    if (!(bound < cap)) return max_;
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(bound));
}

std::chrono::milliseconds backoff::draw(std::chrono::milliseconds bound) {
    if (bound.count() <= 0) return std::chrono::milliseconds(0);
    std::uniform_int_distribution<std::chrono::milliseconds::rep> d(0, bound.count());
    return std::chrono::milliseconds(d(rng_));
}

std::chrono::milliseconds backoff::next_delay() {
    auto wait = draw(ceiling());
    if (failures_ < 1000) ++failures_; // the cap was reached long before; no wrap-around
    return wait;
}

std::chrono::milliseconds backoff::next_delay(std::chrono::seconds retry_after) {
    // Clamped in seconds first: a caller's seconds::max() must not overflow the conversion.
    const auto asked = std::clamp<std::chrono::seconds::rep>(retry_after.count(), 0, max_delta_seconds);
    auto wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(asked), max_retry_after_) +
                draw(std::min(initial_, max_));
    if (failures_ < 1000) ++failures_;
    return wait;
}

void backoff::connection_lasted(std::chrono::milliseconds d) noexcept {
    if (d >= reset_after_) failures_ = 0;
}

namespace {

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && detail::is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && detail::is_ows(s.back())) s.remove_suffix(1);
    return s;
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// `n` digits at `s[at]`, or -1.
int digits(std::string_view s, std::size_t at, std::size_t n) noexcept {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (i >= s.size() || !is_digit(s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

// IMF-fixdate (RFC 9110 §5.6.7), exactly: "Sun, 06 Nov 1994 08:49:37 GMT".
std::optional<std::chrono::sys_seconds> parse_imf_fixdate(std::string_view s) noexcept {
    static constexpr std::array<std::string_view, 7> days{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    static constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
        s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT")
        return std::nullopt;
    if (std::find(days.begin(), days.end(), s.substr(0, 3)) == days.end()) return std::nullopt;
    auto month = std::find(months.begin(), months.end(), s.substr(8, 3));
    if (month == months.end()) return std::nullopt;
    const int day = digits(s, 5, 2), year = digits(s, 12, 4);
    const int hour = digits(s, 17, 2), minute = digits(s, 20, 2), second = digits(s, 23, 2);
    if (day < 0 || year < 0 || hour < 0 || minute < 0 || second < 0) return std::nullopt;
    // 60: a leap second.
    if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
    const std::chrono::year_month_day date{std::chrono::year(year),
                                           std::chrono::month(static_cast<unsigned>(month - months.begin() + 1)),
                                           std::chrono::day(static_cast<unsigned>(day))};
    if (!date.ok()) return std::nullopt;
    return std::chrono::sys_days(date) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
           std::chrono::seconds(second);
}

} // namespace

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now) noexcept {
    value = trim(value);
    if (value.empty()) return std::nullopt;
    if (is_digit(value.front())) {
        std::int64_t v = 0;
        for (char c : value) {
            if (!is_digit(c)) return std::nullopt;
            // Saturates instead of overflowing: "99999999999999999999" is just "very long".
            if (v < max_delta_seconds) v = v * 10 + (c - '0');
        }
        return std::chrono::seconds(std::min(v, max_delta_seconds));
    }
    auto when = parse_imf_fixdate(value);
    if (!when) return std::nullopt;
    const auto now_s = std::chrono::time_point_cast<std::chrono::seconds>(now);
    if (*when <= now_s) return std::chrono::seconds(0);
    return std::min(*when - now_s, std::chrono::seconds(max_delta_seconds));
}

} // namespace corows
