// SPDX-License-Identifier: BSL-1.0
// The proxy core against arbitrary input: the first byte picks the part, the rest is what a
// proxy (or the environment) could send. A reader never consumes more than it was given nor
// anything once finished, a SOCKS5 handshake stops at each message it must send, and a parsed proxy URL
// always has a host and a port.
#include <corows/protocol/proxy.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

// Chunk sizes come from the input too, so that every split of a reply is tried.
std::size_t chunk_of(std::span<const std::uint8_t>& in) {
    if (in.empty()) return 0;
    const std::size_t n = in[0] % 16 + 1;
    in = in.subspan(1);
    return std::min(n, in.size());
}

void fuzz_connect_reply(std::span<const std::uint8_t> in) {
    corows::http_limits limits;
    limits.max_head_size = 1024;
    corows::http_connect_reader r(limits, !in.empty() && in[0] % 2 == 1);
    while (!in.empty()) {
        const std::size_t n = chunk_of(in);
        const bool finished = r.status() != corows::proxy_status::need_more;
        const auto res = r.feed(in.first(n));
        check(res.consumed <= n);
        if (finished) check(res.consumed == 0);
        check((res.status == corows::proxy_status::failed) == static_cast<bool>(res.error));
        if (res.status == corows::proxy_status::failed) check(!r.detail().empty());
        in = in.subspan(n);
    }
}

void fuzz_socks_replies(std::span<const std::uint8_t> in) {
    std::error_code ec;
    const auto proxy = corows::parse_proxy_url(!in.empty() && in[0] % 2 ? "socks5://u:p@x" : "socks5h://x", ec);
    check(!ec);
    corows::socks5_handshake h(proxy, corows::socks5_connect_by_name("example.com", 443));
    while (!in.empty() && h.status() == corows::proxy_status::need_more) {
        h.output_sent();
        const std::size_t need = h.need();
        check(need > 0 && need <= 262);
        const std::size_t n = chunk_of(in);
        const auto res = h.feed(in.first(n));
        // One feed may cross from a reply's head into its address (need() grows), never past
        // what it was given.
        check(res.consumed <= n);
        if (res.consumed < n) check(res.status != corows::proxy_status::need_more || !h.output().empty());
        in = in.subspan(n);
    }
    if (h.status() != corows::proxy_status::need_more) check(h.need() == 0);
    if (h.status() == corows::proxy_status::failed) check(static_cast<bool>(h.error()) && !h.detail().empty());
}

void fuzz_url(std::string_view text) {
    std::error_code ec;
    const auto p = corows::parse_proxy_url(text, ec);
    if (!ec) {
        check(!p.host.empty() && p.port != 0);
        check(!p.authority().empty());
        if (p.kind != corows::proxy_kind::http && p.has_credentials) check(p.user.size() <= 255);
    }
    const std::string shown = corows::redact_proxy_url(text);
    check(shown.size() <= text.size() + 3);
}

void fuzz_no_proxy(std::string_view text) {
    const auto nl = text.find('\n');
    const std::string_view list = text.substr(0, nl);
    const std::string_view host = nl == std::string_view::npos ? std::string_view("example.com") : text.substr(nl + 1);
    corows::no_proxy_matches(list, host);
    // "*" alone always matches.
    check(corows::no_proxy_matches("*", host));
    std::error_code ec;
    const auto target = corows::parse_url("wss://" + std::string(host) + "/", ec);
    if (ec) return;
    const auto choice = corows::proxy_from_environment(target, [&](const std::string& name) -> std::optional<std::string> {
        if (name == "no_proxy") return std::string(list);
        if (name == "https_proxy") return std::string("http://proxy:3128");
        return std::nullopt;
    });
    check(choice.url.empty() == corows::no_proxy_matches(list, target.host));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::span<const std::uint8_t> rest(data + 1, size - 1);
    const std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
    switch (data[0] % 4) {
    case 0: fuzz_connect_reply(rest); break;
    case 1: fuzz_socks_replies(rest); break;
    case 2: fuzz_url(text); break;
    default: fuzz_no_proxy(text); break;
    }
    return 0;
}
