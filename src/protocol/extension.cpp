// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/ascii.hpp>
#include <corows/error.hpp>
#include <corows/protocol/extension.hpp>

#include <cstddef>

namespace corows {
namespace {

using detail::is_tchar;
using detail::is_token;

// A cursor over the header value.
class scanner {
public:
    explicit scanner(std::string_view s) noexcept : s_(s) {}

    bool at_end() const noexcept { return pos_ == s_.size(); }
    char peek() const noexcept { return s_[pos_]; }
    void skip_ows() noexcept {
        while (pos_ < s_.size() && detail::is_ows(s_[pos_])) ++pos_;
    }
    bool consume(char c) noexcept {
        if (pos_ < s_.size() && s_[pos_] == c) { ++pos_; return true; }
        return false;
    }
    // Returns an empty view if no token starts here.
    std::string_view token() noexcept {
        std::size_t start = pos_;
        while (pos_ < s_.size() && is_tchar(s_[pos_])) ++pos_;
        return s_.substr(start, pos_ - start);
    }
    // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE, unescaped into `out`.
    bool quoted_string(std::string& out) {
        if (!consume('"')) return false;
        out.clear();
        while (pos_ < s_.size()) {
            auto c = static_cast<unsigned char>(s_[pos_++]);
            if (c == '"') return true;
            if (c == '\\') {
                if (pos_ == s_.size()) return false;
                c = static_cast<unsigned char>(s_[pos_++]);
                if (!(c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f))) return false;
            } else if (!(c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c != 0x7f))) {
                // qdtext excludes CTLs, DEL, '"' and '\'; obs-text (0x80-0xFF) is allowed.
                return false;
            }
            out.push_back(static_cast<char>(c));
        }
        return false;
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;
};

bool parse_param(scanner& sc, extension_param& p) {
    auto name = sc.token();
    if (name.empty()) return false;
    p.name.assign(name);
    p.value.reset();
    sc.skip_ows();
    if (!sc.consume('=')) return true;
    sc.skip_ows();
    if (sc.at_end()) return false;
    if (sc.peek() == '"') {
        std::string v;
        if (!sc.quoted_string(v) || !is_token(v)) return false;
        p.value = std::move(v);
        return true;
    }
    auto value = sc.token();
    if (value.empty()) return false;
    p.value.emplace(value);
    return true;
}

} // namespace

std::error_code parse_extensions(std::string_view header, std::vector<extension>& out) {
    scanner sc(header);
    bool any = false;
    for (;;) {
        sc.skip_ows();
        if (sc.at_end()) break;
        if (sc.consume(',')) continue; // empty list element
        auto name = sc.token();
        if (name.empty()) return error::bad_extension;
        extension ext;
        ext.name.assign(name);
        sc.skip_ows();
        while (sc.consume(';')) {
            sc.skip_ows();
            extension_param p;
            if (!parse_param(sc, p)) return error::bad_extension;
            ext.params.push_back(std::move(p));
            sc.skip_ows();
        }
        out.push_back(std::move(ext));
        any = true;
        if (sc.at_end()) break;
        if (!sc.consume(',')) return error::bad_extension;
    }
    if (!any) return error::bad_extension;
    return {};
}

std::string format_extension(const extension& ext) {
    std::string s = ext.name;
    for (const auto& p : ext.params) {
        s += "; ";
        s += p.name;
        if (p.value) {
            s += '=';
            s += *p.value;
        }
    }
    return s;
}

std::string format_extensions(std::span<const extension> exts) {
    std::string s;
    for (const auto& e : exts) {
        if (!s.empty()) s += ", ";
        s += format_extension(e);
    }
    return s;
}

} // namespace corows
