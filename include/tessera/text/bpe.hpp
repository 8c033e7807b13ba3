// tessera::text BPE (GPT-2 style) merging of pre-tokenized words, as llama.cpp's
// llm_tokenizer_bpe_session does it: merge ranks, lowest first, ties to the left.
#pragma once

#include <cstddef>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/text/pretokenize.hpp"
#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

class bpe_session {
public:
    bpe_session(const vocab& v, const pretokenizer& pre) : v_(v), pre_(pre) {}

    void tokenize(std::string_view text, std::vector<token>& out) {
        const auto words = pre_.split(text);
        for (const std::string& w : words) merge_word(w, out);
    }

    // Merges one (already byte-encoded) word and appends its tokens.
    void merge_word(std::string_view w, std::vector<token>& out) {
        sym_.clear();
        queue_ = {};
        if (w.empty()) return;
        if (v_.ignore_merges) {
            if (token id = v_.find(w); id != null_token) {
                out.push_back(id);
                return;
            }
        }
        if (v_.pre_kind() == pre_type::gemma4 && w.find_first_not_of('\n') == std::string_view::npos) {
            if (token id = v_.find(w); id != null_token) {
                out.push_back(id);
                return;
            }
        }
        for (std::size_t off = 0; off < w.size();) {
            const std::size_t n = std::min(utf8_len(w[off]), w.size() - off);
            const int idx = static_cast<int>(sym_.size());
            off += n;
            sym_.push_back({idx - 1, off == w.size() ? -1 : idx + 1, static_cast<std::size_t>(off - n), n,
                            v_.find(w.substr(off - n, n))});
        }
        word_ = w;
        for (int i = 1; i < static_cast<int>(sym_.size()); ++i) add(i - 1, i);
        while (!queue_.empty()) {
            const bigram b = queue_.top();
            queue_.pop();
            symbol& l = sym_[static_cast<std::size_t>(b.left)];
            symbol& r = sym_[static_cast<std::size_t>(b.right)];
            if (l.n == 0 || r.n == 0) continue;
            if (l.n != b.left_n || r.n != b.right_n) continue;  // stale: a side changed since the push
            l.n += r.n;
            r.n = 0;
            l.id = v_.find(word_.substr(l.off, l.n));
            l.next = r.next;
            if (r.next >= 0) sym_[static_cast<std::size_t>(r.next)].prev = b.left;
            add(l.prev, b.left);
            add(b.left, l.next);
        }
        for (const symbol& s : sym_) {
            if (s.n == 0) continue;
            if (s.id != null_token) {
                out.push_back(s.id);
                continue;
            }
            const std::string_view t = word_.substr(s.off, s.n);
            for (char c : t) {
                token id;
                if (pre_.byte_encode()) {
                    id = v_.find(std::string_view(&c, 1));
                } else {
                    static constexpr char hex[] = "0123456789ABCDEF";
                    const auto b = static_cast<std::uint8_t>(c);
                    const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
                    id = v_.find(std::string_view(buf, 6));
                }
                if (id != null_token) out.push_back(id);
            }
        }
    }

private:
    struct symbol {
        int prev, next;
        std::size_t off, n;
        token id;  // the token with this symbol's text, or null_token
    };
    struct bigram {
        int left, right;
        int rank;
        std::size_t left_n, right_n;
    };
    struct lower_priority {
        bool operator()(const bigram& a, const bigram& b) const noexcept {
            return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
        }
    };

    void add(int left, int right) {
        if (left == -1 || right == -1) return;
        const symbol& l = sym_[static_cast<std::size_t>(left)];
        const symbol& r = sym_[static_cast<std::size_t>(right)];
        const int rank = (l.id != null_token && r.id != null_token)
                             ? v_.merge_rank(l.id, r.id)
                             : v_.merge_rank(word_.substr(l.off, l.n), word_.substr(r.off, r.n));
        if (rank < 0) return;
        queue_.push({left, right, rank, l.n, r.n});
    }

    const vocab& v_;
    const pretokenizer& pre_;
    std::string_view word_;
    std::vector<symbol> sym_;
    std::priority_queue<bigram, std::vector<bigram>, lower_priority> queue_;
};

}  // namespace text
TESSERA_END_NAMESPACE
