// SPDX-License-Identifier: BSL-1.0
// Feeds arbitrary bytes to the request and response parsers, whole, split in two and byte by
// byte, and checks they agree; reads the target's query parameters; then drives whatever
// parsed through the handshake both ways and checks the round trips; and decodes the same
// bytes as a chunked body whole and byte by byte.
#include <corows/protocol/handshake.hpp>
#include <corows/protocol/query.hpp>

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool same_fields(const corows::http_fields& a, const corows::http_fields& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a.all()[i].name != b.all()[i].name || a.all()[i].value != b.all()[i].value)
            return false;
    return true;
}

bool same(const corows::http_request& a, const corows::http_request& b) {
    return a.method == b.method && a.target == b.target && a.version == b.version &&
           same_fields(a.fields, b.fields);
}

bool same(const corows::http_response& a, const corows::http_response& b) {
    return a.status == b.status && a.reason == b.reason && a.version == b.version &&
           same_fields(a.fields, b.fields);
}

// Small limits so that the fuzzer reaches them with small inputs.
constexpr corows::http_limits limits{1024, 16};
constexpr corows::http_limits roomy{1 << 20, 1 << 16};

template <class Parser>
corows::http_feed_result feed_split(Parser& p, std::string_view in, std::size_t split) {
    auto r = p.feed(in.substr(0, split));
    if (r.status == corows::http_parse_status::need_more) {
        const auto consumed = r.consumed;
        r = p.feed(in.substr(split));
        r.consumed += consumed;
    }
    return r;
}

template <class Parser>
corows::http_feed_result feed_bytes(Parser& p, std::string_view in) {
    corows::http_feed_result r;
    std::size_t consumed = 0;
    for (std::size_t i = 0; i < in.size() && r.status == corows::http_parse_status::need_more; ++i) {
        r = p.feed(in.substr(i, 1));
        check(r.consumed <= 1);
        consumed += r.consumed;
    }
    r.consumed = consumed;
    return r;
}

// Whole, split and byte-by-byte feeding must agree on everything; returns the whole parser.
template <class Parser>
void parse_three_ways(Parser& whole, std::string_view in, std::size_t split) {
    const auto a = whole.feed(in);
    check(a.consumed <= in.size());
    Parser halves(limits);
    const auto b = feed_split(halves, in, split);
    Parser bytes(limits);
    const auto c = feed_bytes(bytes, in);
    check(a.status == b.status && a.status == c.status);
    check(a.error == b.error && a.error == c.error);
    if (a.status == corows::http_parse_status::complete) {
        check(a.consumed == b.consumed && a.consumed == c.consumed);
        check(same(whole.get(), halves.get()) && same(whole.get(), bytes.get()));
    }
    if (a.status == corows::http_parse_status::need_more) check(a.consumed == in.size());
}

// Serialising a parsed message and parsing it again gives the same message.
template <class Parser, class Message>
void check_reparse(const Message& m) {
    const auto text = m.to_string();
    Parser again(roomy);
    const auto r = again.feed(text);
    check(r.status == corows::http_parse_status::complete && r.consumed == text.size());
    check(same(again.get(), m));
}

void server_side(std::string_view in, std::size_t split) {
    corows::http_request_parser p(limits);
    parse_three_ways(p, in, split);
    if (p.status() == corows::http_parse_status::failed) {
        const auto status = corows::http_status_for(p.error());
        check(status == 400 || status == 431);
        return;
    }
    if (p.status() != corows::http_parse_status::complete) return;
    const auto& req = p.get();
    check_reparse<corows::http_request_parser>(req);
    (void)req.path();
    // The query's parameters: each parse_query() lists (the first few: the check is
    // quadratic) is found by name, first and all.
    const auto params = corows::parse_query(req.query());
    for (std::size_t i = 0; i < params.size() && i < 16; ++i) {
        const auto& q = params[i];
        const auto first = req.query_param(q.name);
        check(first.has_value());
        std::size_t same_name = 0;
        for (const auto& o : params) same_name += o.name == q.name;
        check(req.query_params(q.name).size() == same_name);
    }
    // Decoding never grows a text, and strict decoding agrees with lenient where it succeeds.
    check(corows::percent_decode(req.query(), true).size() <= req.query().size());
    if (auto strict = corows::percent_decode_strict(req.query())) check(*strict == corows::percent_decode(req.query()));

    corows::upgrade_request up;
    if (const auto ec = corows::validate_upgrade_request(req, up)) {
        const auto status = corows::http_status_for(ec);
        check(status == 400 || status == 405 || status == 426 || status == 505);
        const auto refusal = corows::build_refusal_response(ec);
        corows::http_response_parser rp(roomy);
        const auto r = rp.feed(refusal);
        check(r.status == corows::http_parse_status::complete);
        check(rp.get().status == status);
        return;
    }
    check(corows::is_upgrade(req));

    // Accept with the client's first subprotocol; the client side must then agree.
    corows::accept_options options;
    if (!up.subprotocols.empty()) options.subprotocol = up.subprotocols.front();
    const auto response = corows::build_accept_response(up, options);
    corows::http_response_parser rp(roomy);
    check(rp.feed(response).status == corows::http_parse_status::complete);
    corows::upgrade_offer offer;
    offer.host = up.host;
    offer.key = up.key;
    offer.subprotocols = up.subprotocols;
    corows::upgrade_response done;
    check(!corows::validate_upgrade_response(rp.get(), offer, done));
    check(done.subprotocol == options.subprotocol);
}

// The bytes after a head, read as a chunked body whole and byte by byte: both ways must agree
// on the outcome, the bytes consumed and the data, and the data must stay within the limit.
void chunked_body(std::string_view in) {
    constexpr std::size_t max_body = 256;
    const auto bytes = [](std::string_view s) {
        return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    };
    corows::http_chunked_decoder whole(max_body, 64);
    std::string a;
    const auto r = whole.feed(bytes(in), a);
    check(r.consumed <= in.size() && a.size() <= max_body);
    corows::http_chunked_decoder one(max_body, 64);
    std::string b;
    std::size_t consumed = 0;
    corows::http_feed_result last;
    for (std::size_t i = 0; i < in.size() && one.status() == corows::http_parse_status::need_more; ++i) {
        last = one.feed(bytes(in.substr(i, 1)), b);
        consumed += last.consumed;
    }
    check(one.status() == whole.status() && a == b);
    if (r.status == corows::http_parse_status::failed) check(last.error == r.error);
    else check(consumed == r.consumed);
    if (r.status == corows::http_parse_status::need_more) check(r.consumed == in.size());
}

void client_side(std::string_view in, std::size_t split) {
    corows::http_response_parser p(limits);
    parse_three_ways(p, in, split);
    if (p.status() != corows::http_parse_status::complete) return;
    check_reparse<corows::http_response_parser>(p.get());
    static const std::vector<std::string> protocols = {"chat", "superchat"};
    corows::upgrade_offer offer;
    offer.host = "server.example.com";
    offer.key = "dGhlIHNhbXBsZSBub25jZQ==";
    offer.subprotocols = protocols;
    corows::upgrade_response out;
    if (!corows::validate_upgrade_response(p.get(), offer, out)) {
        check(p.get().status == 101);
        check(out.subprotocol.empty() || out.subprotocol == "chat" || out.subprotocol == "superchat");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return 0; // heads are capped at 1 KiB here; longer inputs add nothing
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const std::size_t split = size == 0 ? 0 : (data[0] * 257u + data[size - 1]) % (size + 1);
    server_side(in, split);
    client_side(in, split);
    chunked_body(in);
    return 0;
}
