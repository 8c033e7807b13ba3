// tessera::text SPM (sentencepiece BPE-by-score, llama) tokenization of one escaped
// fragment, as llama.cpp's llm_tokenizer_spm_session does it.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

class spm_session {
public:
    explicit spm_session(const vocab& v) : v_(v) {}

    // `text` is already ▁-escaped. Appends token ids to `out`.
    void tokenize(std::string_view text, std::vector<token>& out) {
        sym_.clear();
        rev_merge_.clear();
        queue_ = {};
        for (std::size_t off = 0; off < text.size();) {
            const std::size_t n = std::min(utf8_len(text[off]), text.size() - off);
            const int idx = static_cast<int>(sym_.size());
            off += n;
            sym_.push_back({idx - 1, off == text.size() ? -1 : idx + 1, text.data() + off - n, n});
        }
        for (int i = 1; i < static_cast<int>(sym_.size()); ++i) try_add(i - 1, i);
        while (!queue_.empty()) {
            const bigram b = queue_.top();
            queue_.pop();
            symbol& l = sym_[static_cast<std::size_t>(b.left)];
            symbol& r = sym_[static_cast<std::size_t>(b.right)];
            if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
            l.n += r.n;
            r.n = 0;
            l.next = r.next;
            if (r.next >= 0) sym_[static_cast<std::size_t>(r.next)].prev = b.left;
            try_add(l.prev, b.left);
            try_add(b.left, l.next);
        }
        for (int i = sym_.empty() ? -1 : 0; i != -1; i = sym_[static_cast<std::size_t>(i)].next) resegment(sym_[static_cast<std::size_t>(i)], out);
    }

private:
    struct symbol {
        int prev, next;
        const char* text;
        std::size_t n;
    };
    struct bigram {
        int left, right;
        float score;
        std::size_t size;
    };
    struct lower_priority {
        bool operator()(const bigram& a, const bigram& b) const noexcept {
            return a.score < b.score || (a.score == b.score && a.left > b.left);
        }
    };

    void try_add(int left, int right) {
        if (left == -1 || right == -1) return;
        const symbol& l = sym_[static_cast<std::size_t>(left)];
        const symbol& r = sym_[static_cast<std::size_t>(right)];
        const std::string_view s(l.text, l.n + r.n);
        const token id = v_.find(s);
        if (id == null_token) return;
        queue_.push({left, right, v_.score(id), s.size()});
        rev_merge_[s] = {left, right};
    }

    void resegment(const symbol& s, std::vector<token>& out) {
        const std::string_view t(s.text, s.n);
        if (const token id = v_.find(t); id != null_token) {
            out.push_back(id);
            return;
        }
        auto it = rev_merge_.find(t);
        if (it == rev_merge_.end()) {
            for (char c : t) out.push_back(v_.byte_to_token(static_cast<std::uint8_t>(c)));
            return;
        }
        const auto [a, b] = it->second;
        resegment(sym_[static_cast<std::size_t>(a)], out);
        resegment(sym_[static_cast<std::size_t>(b)], out);
    }

    const vocab& v_;
    std::vector<symbol> sym_;
    std::priority_queue<bigram, std::vector<bigram>, lower_priority> queue_;
    // Text of each pushed pair -> its (left, right), last push wins (llama.cpp keeps
    // the same map). Keys view the text being tokenized.
    std::unordered_map<std::string_view, std::pair<int, int>> rev_merge_;
};

}  // namespace text
TESSERA_END_NAMESPACE
