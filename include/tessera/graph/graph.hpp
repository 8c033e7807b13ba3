// graph: the tensors that compute a set of outputs, in topological order.
//
// build_forward_expand(t) walks t's sources depth first (post-order), adding each
// tensor once: tensors with op none are leafs, the rest nodes, and t ends up last.
// A view's root is visited as a source, so it is ready before the view is read.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/tensor.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

class cgraph {
public:
    cgraph() = default;

    // Adds t and everything it depends on; t becomes the last node.
    void build_forward_expand(any_tensor t) { expand(t.get()); }
    template <class T, int R>
    void build_forward_expand(tensor<T, R> t) {
        expand(t.get());
    }

    const std::vector<node*>& nodes() const noexcept { return nodes_; }
    const std::vector<node*>& leafs() const noexcept { return leafs_; }
    std::size_t n_nodes() const noexcept { return nodes_.size(); }
    // The i-th node; negative i counts from the end (-1 = last).
    node* node_at(std::ptrdiff_t i) const {
        const auto n = static_cast<std::ptrdiff_t>(nodes_.size());
        if (i < -n || i >= n) fail_cat(errc::invalid_argument, "graph: node index ", i, " out of range");
        return nodes_[static_cast<std::size_t>(i < 0 ? n + i : i)];
    }
    bool contains(const node* n) const { return seen_.count(n) != 0; }
    node* find(std::string_view name) const {
        for (node* n : nodes_)
            if (n->name == name) return n;
        for (node* n : leafs_)
            if (n->name == name) return n;
        return nullptr;
    }

    // One line per node and leaf: index, op, type, shape, flags, name.
    std::string print() const {
        std::string s = "graph: " + std::to_string(nodes_.size()) + " nodes, " + std::to_string(leafs_.size()) + " leafs\n";
        for (std::size_t i = 0; i < nodes_.size(); ++i) s += line("node", i, nodes_[i]);
        for (std::size_t i = 0; i < leafs_.size(); ++i) s += line("leaf", i, leafs_[i]);
        return s;
    }

    // Graphviz: nodes as boxes (op, shape), leafs as ellipses, an edge per source.
    std::string dot() const {
        std::string s = "digraph G {\n  newrank = true;\n  rankdir = TB;\n";
        auto id = [](const node* n) {
            std::string r(1, 't');
            r += std::to_string(reinterpret_cast<std::uintptr_t>(n));
            return r;
        };
        auto label = [](const node* n) {
            std::string l = n->name.empty() ? std::string() : escape(n->name) + "\\n";
            l += std::string(op_label(*n)) + "\\n" + n->lay.to_string();
            return l;
        };
        for (const node* n : nodes_) {
            s += "  " + id(n) + " [shape=box, style=filled, fillcolor=" +
                 ((n->flags & flag_output) ? "\"#ffd0d0\"" : (n->is_view() ? "\"#e0e0ff\"" : "white")) + ", label=\"" +
                 label(n) + "\"];\n";
        }
        for (const node* n : leafs_)
            s += "  " + id(n) + " [shape=ellipse, style=filled, fillcolor=\"#e8ffe8\", label=\"" + label(n) + "\"];\n";
        for (const node* n : nodes_)
            for (int i = 0; i < max_src; ++i)
                if (const node* src = n->src[static_cast<std::size_t>(i)])
                    s += "  " + id(src) + " -> " + id(n) + " [label=\"src" + std::to_string(i) + "\"];\n";
        s += "}\n";
        return s;
    }

    // The op's name, with the unary/glu sub-op ("unary(silu)").
    static std::string op_label(const node& n) {
        if (n.op == op_kind::unary) return "unary(" + std::string(unary_name(n.param<unary_params>().op)) + ")";
        if (n.op == op_kind::glu) return "glu(" + std::string(glu_name(n.param<glu_params>().op)) + ")";
        return std::string(op_name(n.op));
    }

private:
    static std::string escape(const std::string& s) {
        std::string o;
        for (char c : s) {
            if (c == '"' || c == '\\') o += '\\';
            o += c;
        }
        return o;
    }
    static std::string line(const char* kind, std::size_t i, const node* n) {
        std::string s = std::string(" ") + kind + " " + std::to_string(i) + ": " + op_label(*n) + " " + n->lay.to_string();
        if (n->flags & flag_input) s += " input";
        if (n->flags & flag_output) s += " output";
        if (n->flags & flag_param) s += " param";
        if (n->is_view()) s += " view";
        if (!n->name.empty()) s += " '" + n->name + "'";
        return s + "\n";
    }

    void expand(node* root) {
        if (!root) fail(errc::invalid_argument, "build_forward_expand: empty tensor handle");
        // iterative post-order DFS, so deep graphs do not overflow the stack
        struct frame {
            node* n;
            int next;
        };
        std::vector<frame> stack;
        if (seen_.count(root)) return;
        stack.push_back({root, 0});
        seen_.insert(root);
        while (!stack.empty()) {
            frame& f = stack.back();
            node* child = nullptr;
            while (f.next <= max_src && !child) {
                node* c = f.next < max_src ? f.n->src[static_cast<std::size_t>(f.next)] : f.n->view_src;
                ++f.next;
                if (c && !seen_.count(c)) child = c;
            }
            if (child) {
                seen_.insert(child);
                stack.push_back({child, 0});
                continue;
            }
            node* n = f.n;
            stack.pop_back();
            if (n->op == op_kind::none && !(n->flags & flag_param)) {
                if (n->name.empty()) n->name = "leaf_" + std::to_string(leafs_.size());
                leafs_.push_back(n);
            } else {
                if (n->name.empty()) n->name = "node_" + std::to_string(nodes_.size());
                nodes_.push_back(n);
            }
        }
    }

    std::vector<node*> nodes_;
    std::vector<node*> leafs_;
    std::unordered_set<const node*> seen_;
};

// A graph computing t.
template <class H>
cgraph build_forward(H t) {
    cgraph g;
    g.build_forward_expand(t);
    return g;
}

}  // namespace graph
TESSERA_END_NAMESPACE
