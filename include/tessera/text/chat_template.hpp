// tessera::text::chat_template: renders a conversation through a model's chat template
// (the Jinja source a GGUF carries in tokenizer.chat_template, as shipped in the
// model's tokenizer_config.json). It interprets the subset of Jinja that chat
// templates use:
//
//   {{ expr }}  {% if %}/{% elif %}/{% else %}/{% endif %}  {% for x in xs [if c] %}
//   ... {% else %} ... {% endfor %}  {% set x = e %}  {% set ns.attr = e %}  {# #}
//   whitespace control {%- -%} {{- -}} {#- -#} {%+ +%}, and the environment
//   transformers uses (trim_blocks, lstrip_blocks, no trailing newline);
//   literals 'str' "str" 12 true/True false/False none/None [lists] {dicts};
//   a if c else b, or, and, not, == != < > <= >=, in, not in, + - * // %, ~, unary -;
//   is [not] defined/undefined/none/string/number/integer/boolean/mapping/sequence/
//   iterable/true/false/even/odd/eq/equalto; x.attr, x['key'], x[i], x[a:b:c];
//   filters trim length count upper lower title capitalize string default d first
//   last list join replace reverse safe int items tojson (strings/ints/bools/none/
//   lists/dicts); string methods strip lstrip rstrip upper lower title capitalize
//   startswith endswith split replace; dict methods items keys values get;
//   functions raise_exception(msg), range(...), namespace(k=v, ...);
//   loop.index loop.index0 loop.revindex loop.revindex0 loop.first loop.last loop.length
//   loop.previtem loop.nextitem.
//
// Anything else (macros, floats, '/', break, other filters ...) is refused with
// tessera::error naming the construct and its place in the template (offset, line,
// column). Templates are data from a file: parsing depth, the evaluation steps, the
// size of lists and the output are bounded, so no template crashes or hangs.
//
//   std::vector<chat_message> msgs{{"system", "Be brief."}, {"user", "Hi"}};
//   std::string prompt = apply_chat_template(builtin_chat_template("chatml"), msgs, {});
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

struct chat_message {
    std::string role;
    std::string content;
};

struct chat_options {
    std::string bos_token;             // the template's bos_token variable (text, e.g. "<s>")
    std::string eos_token;             // the template's eos_token variable
    bool add_generation_prompt = true; // end with the assistant header, ready to generate
    // Bounds for templates from untrusted files (each refusal is a tessera::error).
    std::size_t max_output_bytes = std::size_t{16} << 20;  // errc::out_of_memory beyond
    std::uint64_t max_steps = 10'000'000;                     // expressions evaluated
};

namespace detail::jinja {

// Where an offset is, for messages: "offset 12 (line 1, column 13)".
inline std::string where(std::string_view src, std::size_t at) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < src.size(); ++i) {
        if (src[i] == '\n') ++line, col = 1;
        else ++col;
    }
    return "offset " + std::to_string(at) + " (line " + std::to_string(line) + ", column " + std::to_string(col) + ")";
}

// ---------------------------------------------------------------- values

struct value;
using list_ptr = std::shared_ptr<std::vector<value>>;
using dict_ptr = std::shared_ptr<std::vector<std::pair<std::string, value>>>;

// A Jinja value. Lists and dicts are shared (namespace() objects are mutated through
// their handle, as in Jinja); depth bounds how far containers nest, so printing and
// comparing recurse a bounded number of times.
struct value {
    enum class kind : std::uint8_t { undefined, none, boolean, integer, string, list, dict };
    kind k = kind::undefined;
    bool b = false;
    bool is_namespace = false;  // dict made by namespace(): attributes may be set
    std::int64_t i = 0;
    std::uint32_t depth = 0;  // containers: 1 + deepest element
    std::string s;
    list_ptr l;
    dict_ptr d;

    static value none() { value v; v.k = kind::none; return v; }
    static value boolean(bool x) { value v; v.k = kind::boolean; v.b = x; return v; }
    static value integer(std::int64_t x) { value v; v.k = kind::integer; v.i = x; return v; }
    static value string(std::string x) { value v; v.k = kind::string; v.s = std::move(x); return v; }
    static value list(std::vector<value> xs) {
        value v;
        v.k = kind::list;
        for (const value& x : xs) v.depth = std::max(v.depth, x.depth);
        ++v.depth;
        v.l = std::make_shared<std::vector<value>>(std::move(xs));
        return v;
    }
    static value dict(std::vector<std::pair<std::string, value>> xs) {
        value v;
        v.k = kind::dict;
        for (const auto& x : xs) v.depth = std::max(v.depth, x.second.depth);
        ++v.depth;
        v.d = std::make_shared<std::vector<std::pair<std::string, value>>>(std::move(xs));
        return v;
    }

    bool defined() const noexcept { return k != kind::undefined; }
    const value* find(std::string_view key) const {
        if (k != kind::dict) return nullptr;
        for (const auto& [name, v] : *d)
            if (name == key) return &v;
        return nullptr;
    }
};

inline std::string_view kind_name(value::kind k) {
    switch (k) {
        case value::kind::undefined: return "undefined";
        case value::kind::none: return "none";
        case value::kind::boolean: return "boolean";
        case value::kind::integer: return "integer";
        case value::kind::string: return "string";
        case value::kind::list: return "list";
        case value::kind::dict: return "dict";
    }
    return "value";
}

// "a string", "an integer": for messages.
inline std::string a_kind(value::kind k) {
    const std::string_view n = kind_name(k);
    return (n[0] == 'i' || n[0] == 'u' ? "an " : "a ") + std::string(n);
}

// Python truthiness.
inline bool truthy(const value& v) {
    switch (v.k) {
        case value::kind::undefined:
        case value::kind::none: return false;
        case value::kind::boolean: return v.b;
        case value::kind::integer: return v.i != 0;
        case value::kind::string: return !v.s.empty();
        case value::kind::list: return !v.l->empty();
        case value::kind::dict: return !v.d->empty();
    }
    return false;
}

// Containers share their elements, so a value built from a few copies of a big list,
// nested a few times, is small in memory but huge when walked. Every walk is therefore
// bounded: printing by the output size, comparing and searching by the step budget.
[[noreturn]] inline void too_big(std::string_view what) {
    fail(errc::out_of_memory, "chat template: " + std::string(what));
}

// Python str() (what {{ }} prints), and repr() inside containers; stops with
// errc::out_of_memory once out is longer than limit.
inline void append_repr(std::string& out, const value& v, bool quote_strings, std::size_t limit) {
    if (out.size() > limit) too_big("a printed value exceeds max_output_bytes");
    switch (v.k) {
        case value::kind::undefined: break;
        case value::kind::none: out += "None"; break;
        case value::kind::boolean: out += v.b ? "True" : "False"; break;
        case value::kind::integer: out += std::to_string(v.i); break;
        case value::kind::string:
            if (!quote_strings) {
                out += v.s;
            } else {
                const char q = v.s.find('\'') != std::string::npos && v.s.find('"') == std::string::npos ? '"' : '\'';
                out += q;
                for (char c : v.s) {
                    if (c == q || c == '\\') out += '\\';
                    if (c == '\n') out += "\\n";
                    else out += c;
                }
                out += q;
            }
            break;
        case value::kind::list:
            out += '[';
            for (std::size_t n = 0; n < v.l->size(); ++n) {
                if (n) out += ", ";
                append_repr(out, (*v.l)[n], true, limit);
            }
            out += ']';
            break;
        case value::kind::dict:
            out += '{';
            for (std::size_t n = 0; n < v.d->size(); ++n) {
                if (n) out += ", ";
                append_repr(out, value::string((*v.d)[n].first), true, limit);
                out += ": ";
                append_repr(out, (*v.d)[n].second, true, limit);
            }
            out += '}';
            break;
    }
}

inline std::string to_str(const value& v, std::size_t limit) {
    std::string s;
    append_repr(s, v, false, limit);
    return s;
}

// JSON text of a value (the tojson filter; keys in insertion order, ", " and ": "
// separators as Python's json.dumps writes them).
inline void append_json(std::string& out, const value& v, std::size_t limit) {
    if (out.size() > limit) too_big("a printed value exceeds max_output_bytes");
    switch (v.k) {
        case value::kind::undefined:
        case value::kind::none: out += "null"; break;
        case value::kind::boolean: out += v.b ? "true" : "false"; break;
        case value::kind::integer: out += std::to_string(v.i); break;
        case value::kind::string:
            out += '"';
            for (unsigned char c : v.s) {
                static constexpr char hex[] = "0123456789abcdef";
                switch (c) {
                    case '"': out += "\\\""; break;
                    case '\\': out += "\\\\"; break;
                    case '\n': out += "\\n"; break;
                    case '\r': out += "\\r"; break;
                    case '\t': out += "\\t"; break;
                    default:
                        if (c < 0x20) {
                            out += "\\u00";
                            out += hex[c >> 4];
                            out += hex[c & 15];
                        } else {
                            out += static_cast<char>(c);
                        }
                }
            }
            out += '"';
            break;
        case value::kind::list:
            out += '[';
            for (std::size_t n = 0; n < v.l->size(); ++n) {
                if (n) out += ", ";
                append_json(out, (*v.l)[n], limit);
            }
            out += ']';
            break;
        case value::kind::dict:
            out += '{';
            for (std::size_t n = 0; n < v.d->size(); ++n) {
                if (n) out += ", ";
                append_json(out, value::string((*v.d)[n].first), limit);
                out += ": ";
                append_json(out, (*v.d)[n].second, limit);
            }
            out += '}';
            break;
    }
}

// Python ==: numbers (booleans count as 0/1) by value, strings by bytes, containers
// element by element; other mixes are unequal.
// `budget` counts the values visited; running out is errc::out_of_memory.
inline bool equal(const value& a, const value& b, std::uint64_t& budget) {
    if (budget == 0) too_big("comparing values exceeds max_steps");
    --budget;
    using K = value::kind;
    auto numeric = [](const value& v) { return v.k == K::integer || v.k == K::boolean; };
    if (numeric(a) && numeric(b)) return (a.k == K::integer ? a.i : a.b) == (b.k == K::integer ? b.i : b.b);
    if (a.k != b.k) return false;
    switch (a.k) {
        case K::undefined:
        case K::none: return true;
        case K::string: return a.s == b.s;
        case K::list:
            if (a.l->size() != b.l->size()) return false;
            for (std::size_t n = 0; n < a.l->size(); ++n)
                if (!equal((*a.l)[n], (*b.l)[n], budget)) return false;
            return true;
        case K::dict:
            if (a.d->size() != b.d->size()) return false;
            for (const auto& [key, v] : *a.d) {
                const value* o = b.find(key);
                if (!o || !equal(v, *o, budget)) return false;
            }
            return true;
        default: return false;
    }
}

// Namespaces are the one mutable value; keeping them out of each other rules out
// reference cycles (which would print forever and leak).
inline bool holds_namespace(const value& v, std::uint64_t& budget) {
    if (budget == 0) too_big("searching a value exceeds max_steps");
    --budget;
    if (v.is_namespace) return true;
    if (v.k == value::kind::list)
        for (const value& x : *v.l)
            if (holds_namespace(x, budget)) return true;
    if (v.k == value::kind::dict)
        for (const auto& kv : *v.d)
            if (holds_namespace(kv.second, budget)) return true;
    return false;
}

// UTF-8 code point starts of s (Python indexes strings by code point).
inline std::vector<std::size_t> cp_starts(std::string_view s) {
    std::vector<std::size_t> at;
    for (std::size_t n = 0; n < s.size(); ++n)
        if ((static_cast<unsigned char>(s[n]) & 0xC0) != 0x80) at.push_back(n);
    return at;
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

inline std::string strip(std::string_view s, bool left, bool right, std::string_view chars = {}) {
    auto drop = [&](char c) { return chars.empty() ? is_space(c) : chars.find(c) != std::string_view::npos; };
    std::size_t b = 0, e = s.size();
    if (left)
        while (b < e && drop(s[b])) ++b;
    if (right)
        while (e > b && drop(s[e - 1])) --e;
    return std::string(s.substr(b, e - b));
}

// ASCII case mapping (non-ASCII letters are left as they are).
inline std::string ascii_case(std::string_view s, int mode) {  // 0 lower, 1 upper, 2 title, 3 capitalize
    std::string out(s);
    bool start = true;
    for (std::size_t n = 0; n < out.size(); ++n) {
        char& c = out[n];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool up = mode == 1 || ((mode == 2 || mode == 3) && start);
        if (mode == 3 && n > 0) up = false;
        if (alpha) c = up ? static_cast<char>(c & ~0x20) : static_cast<char>(c | 0x20);
        start = mode == 2 ? !alpha : false;
    }
    return out;
}

inline std::string replace_all(std::string_view s, std::string_view from, std::string_view to, std::size_t max_bytes) {
    std::string out;
    if (from.empty()) {  // Python inserts `to` between code points and at both ends
        out += to;
        const auto starts = cp_starts(s);
        for (std::size_t n = 0; n < starts.size(); ++n) {
            const std::size_t e = n + 1 < starts.size() ? starts[n + 1] : s.size();
            out += s.substr(starts[n], e - starts[n]);
            out += to;
            if (out.size() > max_bytes) break;
        }
        return out;
    }
    std::size_t pos = 0;
    for (std::size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
        out += s.substr(pos, hit - pos);
        out += to;
        if (out.size() > max_bytes) return out;
    }
    out += s.substr(pos);
    return out;
}

// ---------------------------------------------------------------- lexer

enum class tok : std::uint8_t { text, open_var, close_var, open_block, close_block, ident, string, integer, op, end };

struct token {
    tok type = tok::end;
    std::size_t at = 0;
    std::string text;  // text, identifier, string value or operator
    std::int64_t num = 0;
};

inline constexpr std::size_t max_depth = 64;         // nested blocks + nested expressions
inline constexpr std::size_t max_list = std::size_t{1} << 20;  // elements of one list
inline constexpr std::size_t max_height = 256;  // of an expression tree (a + b + ... chains)

class lexer {
public:
    explicit lexer(std::string_view src) : src_(src) {
        // Jinja drops one trailing newline of the source (keep_trailing_newline=False).
        if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
    }

    std::vector<token> run() {
        std::size_t pos = 0;
        bool strip_next = false;  // a -%} before: the next text loses its leading whitespace
        bool trim_next = false;   // a %} or #} before: the next text loses one leading '\n'
        while (pos < src_.size()) {
            std::size_t open = find_open(pos);
            std::string_view text = src_.substr(pos, open - pos);
            if (strip_next) {
                while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
            } else if (trim_next && !text.empty() && text.front() == '\n') {
                text.remove_prefix(1);
            }
            const std::size_t text_at = open - text.size();  // after the stripping above
            strip_next = trim_next = false;
            if (open == src_.size()) {
                push_text(text, text_at);
                break;
            }
            const char kind = src_[open + 1];
            const char mark = open + 2 < src_.size() ? src_[open + 2] : '\0';
            if (mark == '-') {
                while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
            } else if (kind != '{' && mark != '+') {
                // lstrip_blocks: spaces and tabs between a line's start and a block or
                // comment tag go.
                const std::size_t nl = text.rfind('\n');
                const std::size_t line = nl == std::string_view::npos ? 0 : nl + 1;
                const bool line_start = nl != std::string_view::npos || text_at == 0 || src_[text_at - 1] == '\n';
                if (line_start && text.substr(line).find_first_not_of(" \t") == std::string_view::npos)
                    text = text.substr(0, line);
            }
            push_text(text, text_at);
            pos = open + 2 + ((mark == '-' || mark == '+') ? 1 : 0);
            if (kind == '#') {
                const std::size_t close = src_.find("#}", pos);
                if (close == std::string_view::npos) bad("unclosed comment '{#'", open);
                const bool dash = close > pos && src_[close - 1] == '-';
                pos = close + 2;
                (dash ? strip_next : trim_next) = true;
                continue;
            }
            const bool var = kind == '{';
            out_.push_back({var ? tok::open_var : tok::open_block, open, {}, 0});
            const char closer = var ? '}' : '%';
            for (;;) {
                while (pos < src_.size() && is_space(src_[pos])) ++pos;
                if (pos >= src_.size()) bad(var ? "unclosed '{{' (no '}}')" : "unclosed '{%' (no '%}')", open);
                const char c = src_[pos];
                const char c1 = pos + 1 < src_.size() ? src_[pos + 1] : '\0';
                const char c2 = pos + 2 < src_.size() ? src_[pos + 2] : '\0';
                if ((c == '-' || c == '+') && c1 == closer && c2 == '}') {
                    out_.push_back({var ? tok::close_var : tok::close_block, pos, {}, 0});
                    pos += 3;
                    if (c == '-') strip_next = true;
                    break;
                }
                if (c == closer && c1 == '}') {
                    out_.push_back({var ? tok::close_var : tok::close_block, pos, {}, 0});
                    pos += 2;
                    trim_next = !var;  // trim_blocks
                    break;
                }
                pos = lex_one(pos);
            }
        }
        out_.push_back({tok::end, src_.size(), {}, 0});
        return std::move(out_);
    }

    [[noreturn]] void bad(std::string_view what, std::size_t at) const {
        fail(errc::format, "chat template: " + std::string(what) + " at " + where(src_, at));
    }

private:
    std::size_t find_open(std::size_t pos) const {
        for (std::size_t n = pos; n + 1 < src_.size(); ++n)
            if (src_[n] == '{' && (src_[n + 1] == '{' || src_[n + 1] == '%' || src_[n + 1] == '#')) return n;
        return src_.size();
    }

    void push_text(std::string_view text, std::size_t at) {
        if (!text.empty()) out_.push_back({tok::text, at, std::string(text), 0});
    }

    std::size_t lex_one(std::size_t pos) {
        const char c = src_[pos];
        const auto alpha = [](char x) { return (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') || x == '_'; };
        const auto digit = [](char x) { return x >= '0' && x <= '9'; };
        if (alpha(c)) {
            std::size_t e = pos;
            while (e < src_.size() && (alpha(src_[e]) || digit(src_[e]))) ++e;
            out_.push_back({tok::ident, pos, std::string(src_.substr(pos, e - pos)), 0});
            return e;
        }
        if (digit(c)) {
            std::size_t e = pos;
            std::int64_t v = 0;
            while (e < src_.size() && (digit(src_[e]) || src_[e] == '_')) {
                if (src_[e] != '_' && __builtin_mul_overflow(v, 10, &v)) bad("integer literal too large", pos);
                if (src_[e] != '_' && __builtin_add_overflow(v, src_[e] - '0', &v)) bad("integer literal too large", pos);
                ++e;
            }
            if (e < src_.size() && (src_[e] == '.' || src_[e] == 'e' || src_[e] == 'E') && e + 1 < src_.size() &&
                digit(src_[e + 1]))
                fail(errc::unsupported, "chat template: floating-point numbers are not supported, at " + where(src_, pos));
            out_.push_back({tok::integer, pos, {}, v});
            return e;
        }
        if (c == '\'' || c == '"') {
            std::string s;
            std::size_t e = pos + 1;
            for (;; ++e) {
                if (e >= src_.size()) bad("unterminated string literal", pos);
                if (src_[e] == c) break;
                if (src_[e] != '\\') {
                    s += src_[e];
                    continue;
                }
                if (++e >= src_.size()) bad("unterminated string literal", pos);
                switch (src_[e]) {
                    case 'n': s += '\n'; break;
                    case 't': s += '\t'; break;
                    case 'r': s += '\r'; break;
                    case '\\': s += '\\'; break;
                    case '\'': s += '\''; break;
                    case '"': s += '"'; break;
                    case '\n': break;  // line continuation
                    default: s += '\\', s += src_[e];  // Python keeps unknown escapes
                }
            }
            out_.push_back({tok::string, pos, std::move(s), 0});
            return e + 1;
        }
        static constexpr std::array<std::string_view, 6> two{"==", "!=", "<=", ">=", "//", "**"};
        for (std::string_view op : two)
            if (src_.substr(pos, 2) == op) {
                out_.push_back({tok::op, pos, std::string(op), 0});
                return pos + 2;
            }
        if (std::string_view("()[]{},.:|+-*/%~<>=").find(c) != std::string_view::npos) {
            out_.push_back({tok::op, pos, std::string(1, c), 0});
            return pos + 1;
        }
        bad("unexpected character '" + std::string(1, c) + "'", pos);
    }

    std::string_view src_;
    std::vector<token> out_;
};

// ---------------------------------------------------------------- syntax tree

struct expr {
    enum class op : std::uint8_t {
        literal, name, attr, index, slice, call, filter, test, not_, neg, binary, and_, or_, cond, list, dict
    };
    op o = op::literal;
    std::size_t at = 0;
    std::size_t height = 1;  // of this subtree: evaluation recurses this deep
    value lit;
    std::string name;  // name, attribute, filter, test, call keyword list or binary operator
    bool negate = false;  // is not
    std::vector<std::unique_ptr<expr>> kids;  // operands; call/filter/test: subject then arguments
    std::vector<std::string> keywords;        // call arguments' keywords ("" for positional)
};
using expr_ptr = std::unique_ptr<expr>;

struct stmt {
    enum class kind : std::uint8_t { text, output, if_, for_, set };
    kind k = kind::text;
    std::size_t at = 0;
    std::string text;
    expr_ptr e;                         // output value, set value, for iterable
    std::vector<std::string> targets;   // for: loop variables; set: name [, attribute]
    expr_ptr cond;                      // for ... if cond
    std::vector<std::pair<expr_ptr, std::vector<stmt>>> branches;  // if: (cond or null for else, body)
    std::vector<stmt> body, else_body;  // for
};

class parser {
public:
    parser(std::string_view src, std::vector<token> toks) : src_(src), t_(std::move(toks)) {}

    std::vector<stmt> run() {
        std::vector<stmt> body = parse_body({});
        if (cur().type != tok::end) bad("unexpected '" + cur().text + "'", cur().at);
        return body;
    }

private:
    const token& cur() const { return t_[p_]; }
    const token& next() { return t_[p_++]; }
    bool is_op(std::string_view o) const { return cur().type == tok::op && cur().text == o; }
    bool is_kw(std::string_view k) const { return cur().type == tok::ident && cur().text == k; }

    [[noreturn]] void bad(std::string_view what, std::size_t at) const {
        fail(errc::format, "chat template: " + std::string(what) + " at " + where(src_, at));
    }
    [[noreturn]] void unsupported(std::string_view what, std::size_t at) const {
        fail(errc::unsupported, "chat template: " + std::string(what) + " is not supported, at " + where(src_, at));
    }
    std::string describe(const token& t) const {
        switch (t.type) {
            case tok::end: return "end of template";
            case tok::close_var: return "'}}'";
            case tok::close_block: return "'%}'";
            case tok::string: return "string literal";
            case tok::integer: return "number";
            default: return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view o) {
        if (!is_op(o)) bad("expected '" + std::string(o) + "', found " + describe(cur()), cur().at);
        ++p_;
    }
    std::string expect_ident() {
        if (cur().type != tok::ident) bad("expected a name, found " + describe(cur()), cur().at);
        return next().text;
    }
    void expect_close_block() {
        if (cur().type != tok::close_block) bad("expected '%}', found " + describe(cur()), cur().at);
        ++p_;
    }

    struct depth_guard {
        parser& p;
        explicit depth_guard(parser& q, std::size_t at) : p(q) {
            if (++p.depth_ > max_depth)
                p.bad("nesting deeper than " + std::to_string(max_depth) + " levels", at);
        }
        ~depth_guard() { --p.depth_; }
        depth_guard(const depth_guard&) = delete;
        depth_guard& operator=(const depth_guard&) = delete;
    };

    // Statements until a block tag whose keyword is in `ends` (left unconsumed: p_
    // points at that keyword) or the end of the template.
    std::vector<stmt> parse_body(std::initializer_list<std::string_view> ends, std::string_view opener = {},
                                 std::size_t open_at = 0) {
        std::vector<stmt> out;
        for (;;) {
            const token& t = cur();
            if (t.type == tok::end) {
                if (ends.size())
                    bad("'{% " + std::string(opener) + " %}' is never closed (no '{% " + std::string(*ends.begin()) +
                            " %}' before the end of the template); it opens",
                        open_at);
                return out;
            }
            if (t.type == tok::text) {
                stmt s;
                s.k = stmt::kind::text;
                s.at = t.at;
                s.text = t.text;
                out.push_back(std::move(s));
                ++p_;
                continue;
            }
            if (t.type == tok::open_var) {
                ++p_;
                stmt s;
                s.k = stmt::kind::output;
                s.at = t.at;
                s.e = parse_expr();
                if (cur().type != tok::close_var) bad("expected '}}', found " + describe(cur()), cur().at);
                ++p_;
                out.push_back(std::move(s));
                continue;
            }
            if (t.type != tok::open_block) bad("unexpected " + describe(t), t.at);
            const token& kw = t_[p_ + 1];
            if (kw.type != tok::ident) bad("expected a statement name after '{%', found " + describe(kw), kw.at);
            for (std::string_view e : ends)
                if (kw.text == e) {
                    ++p_;
                    return out;
                }
            const bool closer = kw.text == "elif" || kw.text == "else" || kw.text.starts_with("end");
            if (closer && ends.size())
                bad("'{% " + kw.text + " %}' where '{% " + std::string(*ends.begin()) + " %}' closing the '{% " +
                        std::string(opener) + " %}' at " + where(src_, open_at) + " was expected,",
                    t.at);
            ++p_;
            out.push_back(parse_statement());
        }
    }

    stmt parse_statement() {
        const std::size_t at = t_[p_ - 1].at;  // the '{%' of this statement
        const token& kw = next();
        depth_guard guard(*this, at);
        stmt s;
        s.at = at;
        if (kw.text == "if") {
            s.k = stmt::kind::if_;
            expr_ptr c = parse_expr();
            expect_close_block();
            for (;;) {
                std::vector<stmt> body = parse_body({"endif", "elif", "else"}, "if", at);
                const std::string which = next().text;
                s.branches.emplace_back(std::move(c), std::move(body));
                if (which == "endif") break;
                if (which == "else") {
                    expect_close_block();
                    std::vector<stmt> last = parse_body({"endif"}, "if", at);
                    ++p_;
                    s.branches.emplace_back(nullptr, std::move(last));
                    break;
                }
                c = parse_expr();
                expect_close_block();
            }
            expect_close_block();
        } else if (kw.text == "for") {
            s.k = stmt::kind::for_;
            s.targets.push_back(expect_ident());
            while (is_op(",")) {
                ++p_;
                s.targets.push_back(expect_ident());
            }
            if (!is_kw("in")) bad("expected 'in' in '{% for %}', found " + describe(cur()), cur().at);
            ++p_;
            s.e = parse_or();  // not parse_expr: a trailing 'if' filters the loop
            if (is_kw("if")) {
                ++p_;
                s.cond = parse_expr();
            }
            if (is_kw("recursive")) unsupported("'recursive' loops", cur().at);
            expect_close_block();
            s.body = parse_body({"endfor", "else"}, "for", at);
            if (next().text == "else") {
                expect_close_block();
                s.else_body = parse_body({"endfor"}, "for", at);
                ++p_;
            }
            expect_close_block();
        } else if (kw.text == "set") {
            s.k = stmt::kind::set;
            s.targets.push_back(expect_ident());
            if (is_op(".")) {
                ++p_;
                s.targets.push_back(expect_ident());
            } else if (is_op(",")) {
                unsupported("'{% set a, b = ... %}'", cur().at);
            }
            if (cur().type == tok::close_block) unsupported("block '{% set %}...{% endset %}'", at);
            expect_op("=");
            s.e = parse_expr();
            expect_close_block();
        } else if (kw.text == "elif" || kw.text == "else" || kw.text.starts_with("end")) {
            bad("'{% " + kw.text + " %}' without a matching opening tag", at);
        } else {
            unsupported("statement '{% " + kw.text + " %}'", at);
        }
        return s;
    }

    // Appends an operand (null for an omitted slice bound); long operator chains are
    // built iteratively, so the height is checked here rather than by recursion depth.
    void add(expr& e, expr_ptr k) {
        if (k) {
            e.height = std::max(e.height, k->height + 1);
            if (e.height > max_height)
                bad("expression nested deeper than " + std::to_string(max_height) + " levels", e.at);
        }
        e.kids.push_back(std::move(k));
    }

    expr_ptr make(expr::op o, std::size_t at) {
        auto e = std::make_unique<expr>();
        e->o = o;
        e->at = at;
        return e;
    }

    expr_ptr parse_expr() {
        depth_guard guard(*this, cur().at);
        expr_ptr a = parse_or();
        if (!is_kw("if")) return a;
        const std::size_t at = next().at;
        auto e = make(expr::op::cond, at);
        expr_ptr c = parse_or();
        expr_ptr other;
        if (is_kw("else")) {
            ++p_;
            other = parse_expr();
        } else {
            other = make(expr::op::literal, at);  // undefined, as in Jinja
        }
        add(*e, std::move(c));
        add(*e, std::move(a));
        add(*e, std::move(other));
        return e;
    }

    expr_ptr parse_or() {
        expr_ptr a = parse_and();
        while (is_kw("or")) {
            auto e = make(expr::op::or_, next().at);
            add(*e, std::move(a));
            add(*e, parse_and());
            a = std::move(e);
        }
        return a;
    }
    expr_ptr parse_and() {
        expr_ptr a = parse_not();
        while (is_kw("and")) {
            auto e = make(expr::op::and_, next().at);
            add(*e, std::move(a));
            add(*e, parse_not());
            a = std::move(e);
        }
        return a;
    }
    expr_ptr parse_not() {
        if (is_kw("not")) {
            depth_guard guard(*this, cur().at);
            auto e = make(expr::op::not_, next().at);
            add(*e, parse_not());
            return e;
        }
        return parse_compare();
    }
    expr_ptr parse_compare() {
        expr_ptr a = parse_add();
        for (;;) {
            std::string o;
            const std::size_t at = cur().at;
            if (cur().type == tok::op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                          cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                o = next().text;
            } else if (is_kw("in")) {
                ++p_;
                o = "in";
            } else if (is_kw("not") && t_[p_ + 1].type == tok::ident && t_[p_ + 1].text == "in") {
                p_ += 2;
                o = "not in";
            } else {
                return a;
            }
            auto e = make(expr::op::binary, at);
            e->name = o;
            add(*e, std::move(a));
            add(*e, parse_add());
            a = std::move(e);
        }
    }
    expr_ptr binary_chain(expr_ptr (parser::*operand)(), std::initializer_list<std::string_view> ops) {
        expr_ptr a = (this->*operand)();
        for (;;) {
            bool hit = false;
            for (std::string_view o : ops) hit = hit || is_op(o);
            if (!hit) return a;
            const token& t = next();
            if (t.text == "/") unsupported("'/' (true division gives floats)", t.at);
            if (t.text == "**") unsupported("'**'", t.at);
            auto e = make(expr::op::binary, t.at);
            e->name = t.text;
            add(*e, std::move(a));
            add(*e, (this->*operand)());
            a = std::move(e);
        }
    }
    expr_ptr parse_add() { return binary_chain(&parser::parse_concat, {"+", "-"}); }
    expr_ptr parse_concat() { return binary_chain(&parser::parse_mul, {"~"}); }
    expr_ptr parse_mul() { return binary_chain(&parser::parse_unary, {"*", "/", "//", "%", "**"}); }

    expr_ptr parse_unary() {
        if (is_op("-") || is_op("+")) {
            depth_guard guard(*this, cur().at);
            const token& t = next();
            expr_ptr a = parse_unary();
            if (t.text == "+") return a;
            auto e = make(expr::op::neg, t.at);
            add(*e, std::move(a));
            return e;
        }
        expr_ptr a = parse_postfix(parse_primary());
        // filters and tests bind tighter than any binary operator: a + b|trim is a + (b|trim)
        for (;;) {
            if (is_op("|")) {
                ++p_;
                auto e = make(expr::op::filter, cur().at);
                e->name = expect_ident();
                add(*e, std::move(a));
                if (is_op("(")) parse_args(*e);
                a = std::move(e);
            } else if (is_kw("is")) {
                ++p_;
                auto e = make(expr::op::test, cur().at);
                if (is_kw("not")) {
                    ++p_;
                    e->negate = true;
                }
                if (cur().type == tok::ident) {
                    e->name = next().text;
                } else if (cur().type == tok::op && (cur().text == "==" || cur().text == "!=")) {
                    e->name = next().text == "==" ? "eq" : "ne";
                } else {
                    bad("expected a test name after 'is', found " + describe(cur()), cur().at);
                }
                add(*e, std::move(a));
                if (is_op("(")) {
                    parse_args(*e);
                } else if (cur().type == tok::string || cur().type == tok::integer ||
                           (cur().type == tok::ident && !is_kw("and") && !is_kw("or") && !is_kw("else") &&
                            !is_kw("if") && !is_kw("is") && !is_kw("in") && !is_kw("not"))) {
                    add(*e, parse_postfix(parse_primary()));  // x is divisibleby 3 / is eq 'a'
                    e->keywords.emplace_back();
                }
                a = std::move(e);
            } else {
                return a;
            }
        }
    }

    void parse_args(expr& call) {
        depth_guard guard(*this, cur().at);
        expect_op("(");
        call.keywords.resize(call.kids.size() - 1);
        while (!is_op(")")) {
            std::string kw;
            if (cur().type == tok::ident && t_[p_ + 1].type == tok::op && t_[p_ + 1].text == "=") {
                kw = next().text;
                ++p_;
            } else if (is_op("*")) {
                unsupported("'*args'", cur().at);
            }
            add(call, parse_expr());
            call.keywords.push_back(std::move(kw));
            if (!is_op(",")) break;
            ++p_;
        }
        expect_op(")");
    }

    expr_ptr parse_postfix(expr_ptr a) {
        for (;;) {
            if (is_op(".")) {
                ++p_;
                auto e = make(expr::op::attr, cur().at);
                if (cur().type == tok::integer) {  // x.0 is x[0] in Jinja
                    e->o = expr::op::index;
                    auto k = make(expr::op::literal, cur().at);
                    k->lit = value::integer(next().num);
                    add(*e, std::move(a));
                    add(*e, std::move(k));
                } else {
                    e->name = expect_ident();
                    add(*e, std::move(a));
                }
                a = std::move(e);
            } else if (is_op("[")) {
                depth_guard guard(*this, cur().at);
                const std::size_t at = next().at;
                auto e = make(expr::op::index, at);
                add(*e, std::move(a));
                expr_ptr parts[3];
                int n = 0;
                for (;;) {
                    if (!is_op(":") && !is_op("]")) parts[n] = parse_expr();
                    if (is_op(":") && n < 2) {
                        ++p_;
                        ++n;
                        e->o = expr::op::slice;
                        continue;
                    }
                    break;
                }
                expect_op("]");
                if (e->o == expr::op::index && !parts[0]) bad("empty subscript '[]'", at);
                for (expr_ptr& part : parts) add(*e, std::move(part));
                if (e->o == expr::op::index) e->kids.resize(2);
                a = std::move(e);
            } else if (is_op("(")) {
                auto e = make(expr::op::call, cur().at);
                add(*e, std::move(a));
                parse_args(*e);
                a = std::move(e);
            } else {
                return a;
            }
        }
    }

    expr_ptr parse_primary() {
        const token& t = cur();
        switch (t.type) {
            case tok::string: {
                auto e = make(expr::op::literal, t.at);
                std::string s = next().text;
                while (cur().type == tok::string) s += next().text;  // 'a' 'b' is 'ab'
                e->lit = value::string(std::move(s));
                return e;
            }
            case tok::integer: {
                auto e = make(expr::op::literal, t.at);
                e->lit = value::integer(next().num);
                return e;
            }
            case tok::ident: {
                auto e = make(expr::op::literal, t.at);
                const std::string& w = t.text;
                if (w == "true" || w == "True") e->lit = value::boolean(true);
                else if (w == "false" || w == "False") e->lit = value::boolean(false);
                else if (w == "none" || w == "None") e->lit = value::none();
                else if (w == "and" || w == "or" || w == "not" || w == "in" || w == "is" || w == "if" || w == "else")
                    bad("expected a value, found '" + w + "'", t.at);
                else {
                    e->o = expr::op::name;
                    e->name = w;
                }
                ++p_;
                return e;
            }
            case tok::op: {
                depth_guard guard(*this, t.at);
                if (t.text == "(") {
                    ++p_;
                    expr_ptr e = parse_expr();
                    if (is_op(",")) unsupported("tuples", cur().at);
                    expect_op(")");
                    return e;
                }
                if (t.text == "[") {
                    auto e = make(expr::op::list, next().at);
                    while (!is_op("]")) {
                        add(*e, parse_expr());
                        if (!is_op(",")) break;
                        ++p_;
                    }
                    expect_op("]");
                    return e;
                }
                if (t.text == "{") {
                    auto e = make(expr::op::dict, next().at);
                    while (!is_op("}")) {
                        add(*e, parse_expr());
                        expect_op(":");
                        add(*e, parse_expr());
                        if (!is_op(",")) break;
                        ++p_;
                    }
                    expect_op("}");
                    return e;
                }
                break;
            }
            default: break;
        }
        bad("expected a value, found " + describe(t), t.at);
    }

    std::string_view src_;
    std::vector<token> t_;
    std::size_t p_ = 0;
    std::size_t depth_ = 0;
};

// ---------------------------------------------------------------- evaluator

class renderer {
public:
    renderer(std::string_view src, const chat_options& opt) : src_(src), opt_(opt) {}

    void set_global(std::string name, value v) { scopes_.front().emplace_back(std::move(name), std::move(v)); }

    std::string run(const std::vector<stmt>& body) {
        exec(body);
        return std::move(out_);
    }

private:
    [[noreturn]] void bad(std::string_view what, std::size_t at) const {
        fail(errc::format, "chat template: " + std::string(what) + " at " + where(src_, at));
    }
    [[noreturn]] void unsupported(std::string_view what, std::size_t at) const {
        fail(errc::unsupported, "chat template: " + std::string(what) + " is not supported, at " + where(src_, at));
    }

    void step(std::size_t at) {
        if (++steps_ > opt_.max_steps)
            fail(errc::out_of_memory, "chat template: evaluation exceeds max_steps (" + std::to_string(opt_.max_steps) +
                                          ") at " + where(src_, at));
    }
    value checked_string(std::string s, std::size_t at) const {
        if (s.size() > opt_.max_output_bytes)
            fail(errc::out_of_memory, "chat template: a string of " + bytes_str(s.size()) + " exceeds max_output_bytes at " +
                                          where(src_, at));
        return value::string(std::move(s));
    }
    value checked_list(std::vector<value> xs, std::size_t at) const {
        if (xs.size() > max_list)
            fail(errc::out_of_memory, "chat template: a list of " + std::to_string(xs.size()) + " elements at " + where(src_, at));
        value v = value::list(std::move(xs));
        if (v.depth > max_depth) bad("values nested deeper than " + std::to_string(max_depth) + " levels", at);
        return v;
    }
    value checked_dict(std::vector<std::pair<std::string, value>> xs, std::size_t at) const {
        value v = value::dict(std::move(xs));
        if (v.depth > max_depth) bad("values nested deeper than " + std::to_string(max_depth) + " levels", at);
        return v;
    }

    std::string str(const value& v) const { return to_str(v, opt_.max_output_bytes); }
    // equal() and holds_namespace() spend the evaluation's step budget.
    std::uint64_t budget() const { return opt_.max_steps > steps_ ? opt_.max_steps - steps_ : 0; }
    bool eq(const value& a, const value& b) {
        std::uint64_t left = budget();
        const bool r = equal(a, b, left);
        steps_ = opt_.max_steps - left;
        return r;
    }
    bool holds_ns(const value& v) {
        std::uint64_t left = budget();
        const bool r = holds_namespace(v, left);
        steps_ = opt_.max_steps - left;
        return r;
    }

    void emit(std::string_view s, std::size_t at) {
        if (s.size() > opt_.max_output_bytes - out_.size())
            fail(errc::out_of_memory, "chat template: output exceeds max_output_bytes (" + bytes_str(opt_.max_output_bytes) +
                                          ") at " + where(src_, at));
        out_ += s;
    }

    value* lookup(std::string_view name) {
        for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
            for (auto v = s->rbegin(); v != s->rend(); ++v)
                if (v->first == name) return &v->second;
        return nullptr;
    }
    void assign(const std::string& name, value v) {
        for (auto& [n, old] : scopes_.back())
            if (n == name) {
                old = std::move(v);
                return;
            }
        scopes_.back().emplace_back(name, std::move(v));
    }

    void exec(const std::vector<stmt>& body) {
        for (const stmt& s : body) exec(s);
    }

    void exec(const stmt& s) {
        step(s.at);
        switch (s.k) {
            case stmt::kind::text: emit(s.text, s.at); break;
            case stmt::kind::output: {
                std::string text = str(eval(*s.e));
                emit(text, s.at);
                break;
            }
            case stmt::kind::if_:
                for (const auto& [c, body] : s.branches)
                    if (!c || truthy(eval(*c))) {
                        exec(body);
                        break;
                    }
                break;
            case stmt::kind::set: {
                value v = eval(*s.e);
                if (s.targets.size() == 1) {
                    assign(s.targets[0], std::move(v));
                    break;
                }
                value* ns = lookup(s.targets[0]);
                if (!ns || !ns->is_namespace)
                    bad("'{% set " + s.targets[0] + "." + s.targets[1] + " %}' needs '" + s.targets[0] +
                            "' to be a namespace()",
                        s.at);
                if (holds_ns(v)) unsupported("a namespace() stored inside a namespace()", s.at);
                for (auto& [n, old] : *ns->d)
                    if (n == s.targets[1]) {
                        old = std::move(v);
                        return;
                    }
                ns->d->emplace_back(s.targets[1], std::move(v));
                break;
            }
            case stmt::kind::for_: exec_for(s); break;
        }
    }

    void exec_for(const stmt& s) {
        const value seq = eval(*s.e);
        std::vector<value> items;
        if (seq.k == value::kind::list) {
            items = *seq.l;
        } else if (seq.k == value::kind::dict) {
            for (const auto& kv : *seq.d) items.push_back(value::string(kv.first));  // iterating a dict gives its keys
        } else if (seq.k == value::kind::string) {
            const auto starts = cp_starts(seq.s);
            for (std::size_t n = 0; n < starts.size(); ++n)
                items.push_back(value::string(
                    seq.s.substr(starts[n], (n + 1 < starts.size() ? starts[n + 1] : seq.s.size()) - starts[n])));
        } else if (seq.k != value::kind::undefined && seq.k != value::kind::none) {
            bad("cannot loop over " + a_kind(seq.k), s.e->at);
        } else if (seq.k == value::kind::none) {
            bad("cannot loop over none", s.e->at);
        }
        scopes_.emplace_back();
        std::vector<value> kept;
        for (value& item : items) {
            if (!s.cond) {
                kept.push_back(std::move(item));
                continue;
            }
            bind(s, item);
            if (truthy(eval(*s.cond))) kept.push_back(std::move(item));
        }
        const auto n = static_cast<std::int64_t>(kept.size());
        for (std::int64_t idx = 0; idx < n; ++idx) {
            step(s.at);
            const value& item = kept[static_cast<std::size_t>(idx)];
            bind(s, item);
            std::vector<std::pair<std::string, value>> loop{
                {"index0", value::integer(idx)},
                {"index", value::integer(idx + 1)},
                {"revindex0", value::integer(n - idx - 1)},
                {"revindex", value::integer(n - idx)},
                {"first", value::boolean(idx == 0)},
                {"last", value::boolean(idx == n - 1)},
                {"length", value::integer(n)},
                {"previtem", idx > 0 ? kept[static_cast<std::size_t>(idx - 1)] : value{}},
                {"nextitem", idx + 1 < n ? kept[static_cast<std::size_t>(idx + 1)] : value{}},
            };
            assign("loop", value::dict(std::move(loop)));
            exec(s.body);
        }
        scopes_.pop_back();
        if (kept.empty()) exec(s.else_body);
    }

    void bind(const stmt& s, const value& item) {
        if (s.targets.size() == 1) {
            assign(s.targets[0], item);
            return;
        }
        if (item.k != value::kind::list || item.l->size() != s.targets.size())
            bad("cannot unpack " + std::string(kind_name(item.k)) + " into " + std::to_string(s.targets.size()) +
                    " loop variables",
                s.at);
        for (std::size_t n = 0; n < s.targets.size(); ++n) assign(s.targets[n], (*item.l)[n]);
    }

    // The value of an attribute or key, undefined when absent (a Jinja Undefined).
    value member(const value& obj, std::string_view key, const expr& e) {
        if (obj.k == value::kind::undefined) bad("'" + std::string(key) + "' of an undefined value", e.at);
        if (const value* v = obj.find(key)) return *v;
        return {};
    }

    std::int64_t to_int(const value& v, const expr& e, std::string_view what) {
        if (v.k == value::kind::integer) return v.i;
        if (v.k == value::kind::boolean) return v.b;
        bad(std::string(what) + " must be an integer, not " + a_kind(v.k), e.at);
    }

    value eval(const expr& e) {
        step(e.at);
        switch (e.o) {
            case expr::op::literal: return e.lit;
            case expr::op::name: {
                if (const value* v = lookup(e.name)) return *v;
                return {};
            }
            case expr::op::attr: return member(eval(*e.kids[0]), e.name, e);
            case expr::op::index: return index(eval(*e.kids[0]), eval(*e.kids[1]), e);
            case expr::op::slice: return slice(e);
            case expr::op::call: return call(e);
            case expr::op::filter: return filter(e);
            case expr::op::test: return value::boolean(test(e) != e.negate);
            case expr::op::not_: return value::boolean(!truthy(eval(*e.kids[0])));
            case expr::op::neg: {
                const std::int64_t x = to_int(eval(*e.kids[0]), e, "the operand of unary '-'");
                std::int64_t r;
                if (__builtin_sub_overflow(std::int64_t{0}, x, &r)) bad("integer overflow in unary '-'", e.at);
                return value::integer(r);
            }
            case expr::op::and_: {
                value a = eval(*e.kids[0]);
                return truthy(a) ? eval(*e.kids[1]) : a;
            }
            case expr::op::or_: {
                value a = eval(*e.kids[0]);
                return truthy(a) ? a : eval(*e.kids[1]);
            }
            case expr::op::cond: return truthy(eval(*e.kids[0])) ? eval(*e.kids[1]) : eval(*e.kids[2]);
            case expr::op::list: {
                std::vector<value> xs;
                for (const auto& k : e.kids) xs.push_back(eval(*k));
                return checked_list(std::move(xs), e.at);
            }
            case expr::op::dict: {
                std::vector<std::pair<std::string, value>> xs;
                for (std::size_t n = 0; n + 1 < e.kids.size(); n += 2) {
                    value k = eval(*e.kids[n]);
                    if (k.k != value::kind::string) bad("dict keys must be strings", e.kids[n]->at);
                    xs.emplace_back(std::move(k.s), eval(*e.kids[n + 1]));
                }
                return checked_dict(std::move(xs), e.at);
            }
            case expr::op::binary: return binary(e);
        }
        bad("unknown expression", e.at);
    }

    value index(const value& obj, const value& key, const expr& e) {
        switch (obj.k) {
            case value::kind::undefined: bad("subscript of an undefined value", e.at);
            case value::kind::dict:
                if (key.k != value::kind::string) return {};
                return member(obj, key.s, e);
            case value::kind::list: {
                if (key.k != value::kind::integer) bad("list index must be an integer", e.at);
                const auto n = static_cast<std::int64_t>(obj.l->size());
                const std::int64_t i = key.i < 0 ? key.i + n : key.i;
                if (i < 0 || i >= n) return {};
                return (*obj.l)[static_cast<std::size_t>(i)];
            }
            case value::kind::string: {
                if (key.k != value::kind::integer) bad("string index must be an integer", e.at);
                const auto starts = cp_starts(obj.s);
                const auto n = static_cast<std::int64_t>(starts.size());
                const std::int64_t i = key.i < 0 ? key.i + n : key.i;
                if (i < 0 || i >= n) return {};
                const std::size_t b = starts[static_cast<std::size_t>(i)];
                const std::size_t en = i + 1 < n ? starts[static_cast<std::size_t>(i + 1)] : obj.s.size();
                return value::string(obj.s.substr(b, en - b));
            }
            default: return {};
        }
    }

    value slice(const expr& e) {
        const value obj = eval(*e.kids[0]);
        std::int64_t bound[3] = {0, 0, 1};
        bool given[3] = {false, false, false};
        for (int n = 0; n < 3; ++n)
            if (e.kids[static_cast<std::size_t>(n + 1)]) {
                const value v = eval(*e.kids[static_cast<std::size_t>(n + 1)]);
                if (v.k == value::kind::none) continue;
                bound[n] = to_int(v, e, "a slice bound");
                given[n] = true;
            }
        const std::int64_t stp = bound[2];
        if (stp == 0) bad("slice step cannot be zero", e.at);
        std::vector<std::size_t> starts;
        std::int64_t len = 0;
        if (obj.k == value::kind::list) {
            len = static_cast<std::int64_t>(obj.l->size());
        } else if (obj.k == value::kind::string) {
            starts = cp_starts(obj.s);
            len = static_cast<std::int64_t>(starts.size());
        } else {
            bad("cannot slice " + a_kind(obj.k), e.at);
        }
        // Python's slice.indices()
        auto clamp = [&](std::int64_t v, bool has, std::int64_t dflt) {
            if (!has) return dflt;
            if (v < 0) v = std::max<std::int64_t>(v + len, stp < 0 ? -1 : 0);
            return std::min<std::int64_t>(v, stp < 0 ? len - 1 : len);
        };
        const std::int64_t b = clamp(bound[0], given[0], stp < 0 ? len - 1 : 0);
        const std::int64_t en = clamp(bound[1], given[1], stp < 0 ? -1 : len);
        std::vector<std::int64_t> picks;
        for (std::int64_t i = b; stp > 0 ? i < en : i > en; i += stp) picks.push_back(i);
        if (obj.k == value::kind::list) {
            std::vector<value> xs;
            for (std::int64_t i : picks) xs.push_back((*obj.l)[static_cast<std::size_t>(i)]);
            return checked_list(std::move(xs), e.at);
        }
        std::string s;
        for (std::int64_t i : picks) {
            const auto u = static_cast<std::size_t>(i);
            const std::size_t end = u + 1 < starts.size() ? starts[u + 1] : obj.s.size();
            s.append(obj.s, starts[u], end - starts[u]);
        }
        return value::string(std::move(s));
    }

    value binary(const expr& e) {
        const std::string& o = e.name;
        const value a = eval(*e.kids[0]);
        const value b = eval(*e.kids[1]);
        using K = value::kind;
        if (o == "==") return value::boolean(eq(a, b));
        if (o == "!=") return value::boolean(!eq(a, b));
        if (o == "in" || o == "not in") {
            bool found = false;
            if (b.k == K::string) {
                if (a.k != K::string) bad("'in <string>' needs a string on the left", e.at);
                found = b.s.find(a.s) != std::string::npos;
            } else if (b.k == K::list) {
                for (const value& x : *b.l) found = found || eq(a, x);
            } else if (b.k == K::dict) {
                found = a.k == K::string && b.find(a.s) != nullptr;
            } else {
                bad("'in' needs a string, list or dict on the right, not " + a_kind(b.k), e.at);
            }
            return value::boolean(found == (o == "in"));
        }
        if (o == "~") return checked_string(str(a) + str(b), e.at);
        const bool numbers = (a.k == K::integer || a.k == K::boolean) && (b.k == K::integer || b.k == K::boolean);
        if (o == "<" || o == ">" || o == "<=" || o == ">=") {
            int c = 0;
            if (numbers) {
                const std::int64_t x = to_int(a, e, ""), y = to_int(b, e, "");
                c = x < y ? -1 : x > y;
            } else if (a.k == K::string && b.k == K::string) {
                c = a.s.compare(b.s);
                c = c < 0 ? -1 : c > 0;
            } else {
                bad("cannot compare " + a_kind(a.k) + " with " + a_kind(b.k) +
                        " using '" + o + "'",
                    e.at);
            }
            return value::boolean(o == "<" ? c < 0 : o == ">" ? c > 0 : o == "<=" ? c <= 0 : c >= 0);
        }
        if (o == "+" && a.k == K::string && b.k == K::string) return checked_string(a.s + b.s, e.at);
        if (o == "+" && a.k == K::list && b.k == K::list) {
            std::vector<value> xs = *a.l;
            xs.insert(xs.end(), b.l->begin(), b.l->end());
            return checked_list(std::move(xs), e.at);
        }
        if (o == "*" && ((a.k == K::string && (b.k == K::integer)) || (b.k == K::string && a.k == K::integer))) {
            const std::string& s = a.k == K::string ? a.s : b.s;
            const std::int64_t times = a.k == K::string ? b.i : a.i;
            if (times > 0 && !s.empty() && static_cast<std::uint64_t>(times) > opt_.max_output_bytes / s.size())
                fail(errc::out_of_memory, "chat template: string repetition beyond max_output_bytes at " + where(src_, e.at));
            std::string r;
            for (std::int64_t n = 0; n < times; ++n) r += s;
            return value::string(std::move(r));
        }
        if (!numbers)
            bad("'" + o + "' cannot combine " + a_kind(a.k) + " and " + a_kind(b.k),
                e.at);
        const std::int64_t x = to_int(a, e, ""), y = to_int(b, e, "");
        std::int64_t r = 0;
        bool overflow = false;
        if (o == "+") overflow = __builtin_add_overflow(x, y, &r);
        else if (o == "-") overflow = __builtin_sub_overflow(x, y, &r);
        else if (o == "*") overflow = __builtin_mul_overflow(x, y, &r);
        else {  // // and %, rounding toward negative infinity as Python does
            if (y == 0) bad("integer division or modulo by zero", e.at);
            if (x == INT64_MIN && y == -1) bad("integer overflow in '" + o + "'", e.at);
            std::int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
            r = o == "//" ? q : m;
        }
        if (overflow) bad("integer overflow in '" + o + "'", e.at);
        return value::integer(r);
    }

    std::vector<value> args_of(const expr& e, std::size_t first) {
        std::vector<value> xs;
        for (std::size_t n = first; n < e.kids.size(); ++n) xs.push_back(eval(*e.kids[n]));
        return xs;
    }
    void arity(const expr& e, const std::vector<value>& xs, std::size_t lo, std::size_t hi, std::string_view what) {
        if (xs.size() < lo || xs.size() > hi)
            bad(std::string(what) + " takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                    " argument" + (hi == 1 ? "" : "s") + ", got " + std::to_string(xs.size()),
                e.at);
    }
    std::string str_arg(const expr& e, const value& v, std::string_view what) {
        if (v.k != value::kind::string)
            bad(std::string(what) + " must be a string, not " + a_kind(v.k), e.at);
        return v.s;
    }

    value call(const expr& e) {
        const expr& callee = *e.kids[0];
        for (std::size_t n = 1; n < e.kids.size(); ++n)
            if (!e.keywords[n - 1].empty() && !(callee.o == expr::op::name && callee.name == "namespace"))
                unsupported("keyword argument '" + e.keywords[n - 1] + "'", e.kids[n]->at);
        if (callee.o == expr::op::name) {
            const std::string& f = callee.name;
            if (f == "namespace") {
                std::vector<std::pair<std::string, value>> xs;
                for (std::size_t n = 1; n < e.kids.size(); ++n) {
                    if (e.keywords[n - 1].empty()) unsupported("positional arguments to namespace()", e.kids[n]->at);
                    xs.emplace_back(e.keywords[n - 1], eval(*e.kids[n]));
                    if (holds_ns(xs.back().second)) unsupported("a namespace() stored inside a namespace()", e.kids[n]->at);
                }
                value v = checked_dict(std::move(xs), e.at);
                v.is_namespace = true;
                return v;
            }
            std::vector<value> xs = args_of(e, 1);
            if (f == "raise_exception") {
                arity(e, xs, 1, 1, "raise_exception()");
                fail(errc::invalid_argument, "chat template: raise_exception: " + str(xs[0]) + " (at " + where(src_, e.at) + ")");
            }
            if (f == "range") {
                arity(e, xs, 1, 3, "range()");
                std::int64_t lo = 0, hi = 0, st = 1;
                if (xs.size() == 1) hi = to_int(xs[0], e, "range() bound");
                else lo = to_int(xs[0], e, "range() bound"), hi = to_int(xs[1], e, "range() bound");
                if (xs.size() == 3) st = to_int(xs[2], e, "range() step");
                if (st == 0) bad("range() step cannot be zero", e.at);
                const double count = (static_cast<double>(hi) - static_cast<double>(lo)) / static_cast<double>(st);
                if (count > static_cast<double>(max_list))
                    fail(errc::out_of_memory, "chat template: range() of more than " + std::to_string(max_list) +
                                                  " elements at " + where(src_, e.at));
                std::vector<value> out;
                for (std::int64_t i = lo; st > 0 ? i < hi : i > hi;) {
                    out.push_back(value::integer(i));
                    if (__builtin_add_overflow(i, st, &i)) break;
                }
                return checked_list(std::move(out), e.at);
            }
            if (lookup(f)) bad("'" + f + "' is not callable", e.at);
            unsupported("function '" + f + "()'", e.at);
        }
        if (callee.o != expr::op::attr) bad("this expression is not callable", e.at);
        const value obj = eval(*callee.kids[0]);
        std::vector<value> xs = args_of(e, 1);
        const std::string& m = callee.name;
        if (obj.k == value::kind::string) {
            const std::string& s = obj.s;
            if (m == "strip" || m == "lstrip" || m == "rstrip") {
                arity(e, xs, 0, 1, m + "()");
                const std::string chars = xs.empty() || xs[0].k == value::kind::none ? "" : str_arg(e, xs[0], m + "() argument");
                if (!xs.empty() && xs[0].k != value::kind::none && chars.empty()) return obj;
                return value::string(strip(s, m != "rstrip", m != "lstrip", chars));
            }
            if (m == "upper" || m == "lower" || m == "title" || m == "capitalize") {
                arity(e, xs, 0, 0, m + "()");
                return value::string(ascii_case(s, m == "lower" ? 0 : m == "upper" ? 1 : m == "title" ? 2 : 3));
            }
            if (m == "startswith" || m == "endswith") {
                arity(e, xs, 1, 1, m + "()");
                const std::string x = str_arg(e, xs[0], m + "() argument");
                const bool hit = x.size() <= s.size() &&
                                 (m == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
                return value::boolean(hit);
            }
            if (m == "split") {
                arity(e, xs, 0, 1, "split()");
                std::vector<value> parts;
                if (xs.empty() || xs[0].k == value::kind::none) {
                    std::size_t p = 0;
                    for (;;) {
                        while (p < s.size() && is_space(s[p])) ++p;
                        if (p >= s.size()) break;
                        std::size_t q = p;
                        while (q < s.size() && !is_space(s[q])) ++q;
                        parts.push_back(value::string(s.substr(p, q - p)));
                        p = q;
                    }
                } else {
                    const std::string sep = str_arg(e, xs[0], "split() separator");
                    if (sep.empty()) bad("split() separator is empty", e.at);
                    std::size_t p = 0;
                    for (std::size_t hit; (hit = s.find(sep, p)) != std::string::npos; p = hit + sep.size())
                        parts.push_back(value::string(s.substr(p, hit - p)));
                    parts.push_back(value::string(s.substr(p)));
                }
                return checked_list(std::move(parts), e.at);
            }
            if (m == "replace") {
                arity(e, xs, 2, 2, "replace()");
                return checked_string(replace_all(s, str_arg(e, xs[0], "replace() argument"), str_arg(e, xs[1], "replace() argument"),
                                                  opt_.max_output_bytes),
                                      e.at);
            }
        } else if (obj.k == value::kind::dict) {
            if (m == "items" || m == "keys" || m == "values") {
                arity(e, xs, 0, 0, m + "()");
                std::vector<value> out;
                for (const auto& [k, v] : *obj.d) {
                    if (m == "items") out.push_back(value::list({value::string(k), v}));
                    else out.push_back(m == "keys" ? value::string(k) : v);
                }
                return checked_list(std::move(out), e.at);
            }
            if (m == "get") {
                arity(e, xs, 1, 2, "get()");
                if (xs[0].k == value::kind::string)
                    if (const value* v = obj.find(xs[0].s)) return *v;
                return xs.size() == 2 ? xs[1] : value::none();
            }
        } else if (obj.k == value::kind::undefined) {
            bad("method '" + m + "()' called on an undefined value", e.at);
        }
        unsupported("method '" + m + "()' of " + a_kind(obj.k), e.at);
    }

    value filter(const expr& e) {
        const std::string& f = e.name;
        for (std::size_t n = 1; n < e.kids.size(); ++n)
            if (!e.keywords[n - 1].empty()) unsupported("keyword argument '" + e.keywords[n - 1] + "'", e.kids[n]->at);
        const value v = eval(*e.kids[0]);
        std::vector<value> xs = args_of(e, 1);
        using K = value::kind;
        const std::string what = "filter '" + f + "'";
        if (f == "trim") {
            arity(e, xs, 0, 1, what);
            const std::string chars = xs.empty() || xs[0].k == K::none ? "" : str_arg(e, xs[0], what + " argument");
            return value::string(strip(str(v), true, true, chars));
        }
        if (f == "length" || f == "count") {
            arity(e, xs, 0, 0, what);
            switch (v.k) {
                case K::string: return value::integer(static_cast<std::int64_t>(cp_starts(v.s).size()));
                case K::list: return value::integer(static_cast<std::int64_t>(v.l->size()));
                case K::dict: return value::integer(static_cast<std::int64_t>(v.d->size()));
                case K::undefined: return value::integer(0);
                default: bad(what + " of " + a_kind(v.k), e.at);
            }
        }
        if (f == "upper" || f == "lower" || f == "title" || f == "capitalize") {
            arity(e, xs, 0, 0, what);
            return value::string(ascii_case(str(v), f == "lower" ? 0 : f == "upper" ? 1 : f == "title" ? 2 : 3));
        }
        if (f == "string") {
            arity(e, xs, 0, 0, what);
            return value::string(str(v));
        }
        if (f == "safe") {
            arity(e, xs, 0, 0, what);
            return v;
        }
        if (f == "default" || f == "d") {
            arity(e, xs, 0, 2, what);
            const bool use = xs.size() == 2 && truthy(xs[1]) ? !truthy(v) : !v.defined();
            return use ? (xs.empty() ? value::string("") : xs[0]) : v;
        }
        if (f == "first" || f == "last") {
            arity(e, xs, 0, 0, what);
            if (v.k == K::list) {
                if (v.l->empty()) return {};
                return f == "first" ? v.l->front() : v.l->back();
            }
            if (v.k == K::string) {
                value idx = value::integer(f == "first" ? 0 : -1);
                return index(v, idx, e);
            }
            bad(what + " of " + a_kind(v.k), e.at);
        }
        if (f == "list" || f == "reverse") {
            arity(e, xs, 0, 0, what);
            std::vector<value> out;
            if (v.k == K::list) {
                out = *v.l;
            } else if (v.k == K::string) {
                for (std::size_t n = 0, len = cp_starts(v.s).size(); n < len; ++n)
                    out.push_back(index(v, value::integer(static_cast<std::int64_t>(n)), e));
            } else if (v.k == K::dict) {
                for (const auto& kv : *v.d) out.push_back(value::string(kv.first));
            } else {
                bad(what + " of " + a_kind(v.k), e.at);
            }
            if (f == "reverse") {
                std::reverse(out.begin(), out.end());
                if (v.k == K::string) {
                    std::string s;
                    for (const value& x : out) s += x.s;
                    return value::string(std::move(s));
                }
            }
            return checked_list(std::move(out), e.at);
        }
        if (f == "join") {
            arity(e, xs, 0, 1, what);
            const std::string sep = xs.empty() ? "" : str_arg(e, xs[0], what + " separator");
            if (v.k != K::list) bad(what + " of " + a_kind(v.k), e.at);
            std::string s;
            for (std::size_t n = 0; n < v.l->size(); ++n) {
                if (n) s += sep;
                s += str((*v.l)[n]);
                if (s.size() > opt_.max_output_bytes) break;
            }
            return checked_string(std::move(s), e.at);
        }
        if (f == "replace") {
            arity(e, xs, 2, 2, what);
            return checked_string(replace_all(str(v), str_arg(e, xs[0], what + " argument"), str_arg(e, xs[1], what + " argument"),
                                              opt_.max_output_bytes),
                                  e.at);
        }
        if (f == "int") {
            arity(e, xs, 0, 0, what);
            if (v.k == K::integer) return v;
            if (v.k == K::boolean) return value::integer(v.b);
            if (v.k == K::string) {
                const std::string t = strip(v.s, true, true);
                std::int64_t r = 0;
                std::size_t p = t.size() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
                bool ok = p < t.size();
                for (; ok && p < t.size(); ++p) {
                    ok = t[p] >= '0' && t[p] <= '9' && !__builtin_mul_overflow(r, 10, &r) && !__builtin_add_overflow(r, t[p] - '0', &r);
                }
                return value::integer(ok ? (t[0] == '-' ? -r : r) : 0);
            }
            return value::integer(0);
        }
        if (f == "items") {
            arity(e, xs, 0, 0, what);
            if (v.k != K::dict) bad(what + " of " + a_kind(v.k), e.at);
            std::vector<value> out;
            for (const auto& [k, x] : *v.d) out.push_back(value::list({value::string(k), x}));
            return checked_list(std::move(out), e.at);
        }
        if (f == "tojson") {
            arity(e, xs, 0, 0, what);
            std::string s;
            append_json(s, v, opt_.max_output_bytes);
            return checked_string(std::move(s), e.at);
        }
        unsupported("filter '" + f + "'", e.at);
    }

    bool test(const expr& e) {
        const std::string& t = e.name;
        using K = value::kind;
        if (t == "defined" || t == "undefined") {
            const value v = eval(*e.kids[0]);
            return v.defined() == (t == "defined");
        }
        const value v = eval(*e.kids[0]);
        std::vector<value> xs = args_of(e, 1);
        const std::string what = "test '" + t + "'";
        if (t == "eq" || t == "equalto" || t == "ne" || t == "sameas") {
            arity(e, xs, 1, 1, what);
            return eq(v, xs[0]) == (t != "ne");
        }
        arity(e, xs, 0, 0, what);
        if (t == "none") return v.k == K::none;
        if (t == "string") return v.k == K::string;
        if (t == "number" || t == "integer") return v.k == K::integer;
        if (t == "boolean") return v.k == K::boolean;
        if (t == "true") return v.k == K::boolean && v.b;
        if (t == "false") return v.k == K::boolean && !v.b;
        if (t == "mapping") return v.k == K::dict;
        if (t == "sequence" || t == "iterable") return v.k == K::list || v.k == K::string || v.k == K::dict;
        if (t == "even" || t == "odd") {
            const std::int64_t x = to_int(v, e, what + " operand");
            return ((x % 2) == 0) == (t == "even");
        }
        unsupported(what, e.at);
    }

    std::string_view src_;
    const chat_options& opt_;
    std::vector<std::vector<std::pair<std::string, value>>> scopes_ = std::vector<std::vector<std::pair<std::string, value>>>(1);
    std::string out_;
    std::uint64_t steps_ = 0;
};

}  // namespace detail::jinja

// A parsed chat template: parse once, render many conversations. Construction throws
// tessera::error (errc::format for malformed templates, errc::unsupported for Jinja
// this interpreter does not implement) naming the construct and its offset.
class chat_template {
public:
    explicit chat_template(std::string_view source) : source_(source) {
        detail::jinja::lexer lex(source_);
        detail::jinja::parser p(source_, lex.run());
        body_ = p.run();
    }

    const std::string& source() const noexcept { return source_; }

    // The prompt for msgs. The template sees messages (a list of {role, content}
    // dicts), bos_token, eos_token and add_generation_prompt. raise_exception(msg)
    // in the template throws errc::invalid_argument carrying msg.
    std::string apply(std::span<const chat_message> msgs, const chat_options& opt) const {
        using detail::jinja::value;
        detail::jinja::renderer r(source_, opt);
        std::vector<value> list;
        list.reserve(msgs.size());
        for (const chat_message& m : msgs)
            list.push_back(value::dict({{"role", value::string(m.role)}, {"content", value::string(m.content)}}));
        r.set_global("messages", value::list(std::move(list)));
        r.set_global("bos_token", value::string(opt.bos_token));
        r.set_global("eos_token", value::string(opt.eos_token));
        r.set_global("add_generation_prompt", value::boolean(opt.add_generation_prompt));
        return r.run(body_);
    }

private:
    std::string source_;
    std::vector<detail::jinja::stmt> body_;
};

inline std::string apply_chat_template(std::string_view tmpl, std::span<const chat_message> msgs, const chat_options& opt) {
    return chat_template(tmpl).apply(msgs, opt);
}

// ---------------------------------------------------------------- built-in templates

// The chat templates of well-known model families, as their tokenizer_config.json
// ships them, for `--chat-template NAME` when a GGUF carries none (or the wrong one).
struct builtin_template {
    std::string_view name;
    std::string_view model;  // where the text comes from
    std::string_view source;
};

inline constexpr std::array<builtin_template, 4> builtin_chat_templates{{
    {"llama2", "meta-llama/Llama-2-7b-chat-hf",
     "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
     "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif "
     "%}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
     "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
     "loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
     "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if "
     "message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] "
     "== 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"},
    {"llama3", "meta-llama/Meta-Llama-3-8B-Instruct",
     "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
     "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
     "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% "
     "endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"},
    {"chatml", "teknium/OpenHermes-2.5-Mistral-7B",
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
     "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"mistral", "mistralai/Mistral-7B-Instruct-v0.2 (the revision with an optional system message)",
     "{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content'] %}\n    {%- "
     "set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n{%- endif "
     "%}\n\n{{- bos_token }}\n{%- for message in loop_messages %}\n    {%- if (message['role'] == 'user') != "
     "(loop.index0 % 2 == 0) %}\n        {{- raise_exception('After the optional system message, conversation "
     "roles must alternate user/assistant/user/assistant/...') }}\n    {%- endif %}\n    {%- if message['role'] == "
     "'user' %}\n        {%- if loop.first and system_message is defined %}\n            {{- ' [INST] ' + "
     "system_message + '\\n\\n' + message['content'] + ' [/INST]' }}\n        {%- else %}\n            {{- ' "
     "[INST] ' + message['content'] + ' [/INST]' }}\n        {%- endif %}\n    {%- elif message['role'] == "
     "'assistant' %}\n        {{- ' ' + message['content'] + eos_token}}\n    {%- else %}\n        {{- "
     "raise_exception('Only user and assistant roles are supported, with the exception of an initial optional "
     "system message!') }}\n    {%- endif %}\n{%- endfor %}\n"},
}};

// The source of the built-in template `name`; throws errc::invalid_argument listing
// the known names otherwise.
inline std::string_view builtin_chat_template(std::string_view name) {
    std::string known;
    for (const builtin_template& t : builtin_chat_templates) {
        if (t.name == name) return t.source;
        known += known.empty() ? "" : ", ";
        known += t.name;
    }
    fail(errc::invalid_argument, "chat template: no built-in template named '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace text
TESSERA_END_NAMESPACE
