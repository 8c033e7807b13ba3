// dataset: datapoints and their labels in host memory (ggml-opt's ggml_opt_dataset).
// Each datapoint is ne_datapoint floats, each label ne_label floats (for a classifier a
// one-hot row); they are stored one after the other. Shuffling permutes shards of
// `shard` consecutive datapoints (1: every datapoint on its own), with a generator of
// our own seeded by the caller, so a seed gives the same order on every platform and
// compiler. get_batch copies batch i of the (shuffled) order into an input tensor and a
// label tensor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace opt {

// splitmix64: a small, fully specified generator (the same stream everywhere).
class rng64 {
public:
    explicit rng64(std::uint64_t seed) noexcept : s_(seed) {}
    std::uint64_t next() noexcept {
        std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, n) without modulo bias.
    std::uint64_t below(std::uint64_t n) noexcept {
        const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
        std::uint64_t x;
        do x = next();
        while (x >= limit);
        return x % n;
    }
    // Uniform in [0, 1).
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t s_;
};

class dataset {
public:
    dataset(std::int64_t ne_datapoint, std::int64_t ne_label, std::int64_t ndata, std::int64_t shard = 1)
        : ne_data_(ne_datapoint), ne_label_(ne_label), ndata_(ndata), shard_(shard) {
        if (ne_datapoint < 1 || ne_label < 0 || ndata < 1 || shard < 1)
            fail_cat(errc::invalid_argument, "dataset: datapoint size ", ne_datapoint, ", label size ", ne_label, ", count ", ndata,
                     " and shard ", shard, " must be positive (labels may be empty)");
        if (ndata % shard != 0) fail_cat(errc::invalid_argument, "dataset: ", ndata, " datapoints are not whole shards of ", shard);
        if (ne_datapoint > (std::int64_t{1} << 40) / ndata || (ne_label > 0 && ne_label > (std::int64_t{1} << 40) / ndata))
            fail_cat(errc::out_of_memory, "dataset: ", ndata, " datapoints of ", ne_datapoint, " floats is too large");
        data_.assign(static_cast<std::size_t>(ndata * ne_datapoint), 0.0f);
        labels_.assign(static_cast<std::size_t>(ndata * ne_label), 0.0f);
        order_.resize(static_cast<std::size_t>(ndata / shard));
        std::iota(order_.begin(), order_.end(), std::int64_t{0});
    }

    std::int64_t size() const noexcept { return ndata_; }
    std::int64_t ne_datapoint() const noexcept { return ne_data_; }
    std::int64_t ne_label() const noexcept { return ne_label_; }
    std::int64_t shard() const noexcept { return shard_; }

    std::span<float> data() noexcept { return data_; }
    std::span<const float> data() const noexcept { return data_; }
    std::span<float> labels() noexcept { return labels_; }
    std::span<const float> labels() const noexcept { return labels_; }
    std::span<float> datapoint(std::int64_t i) { return std::span<float>(data_).subspan(index(i) * ne_data_, ne_data_); }
    std::span<float> label(std::int64_t i) { return std::span<float>(labels_).subspan(index(i) * ne_label_, ne_label_); }

    // Puts the shards among the first `first` datapoints (all when negative; a multiple
    // of the shard size) in a random order drawn from `seed`; the rest keep theirs.
    void shuffle(std::uint64_t seed, std::int64_t first = -1) {
        if (first < 0) first = ndata_;
        if (first > ndata_ || first % shard_ != 0)
            fail_cat(errc::invalid_argument, "dataset::shuffle: ", first, " datapoints is not whole shards of ", shard_, " within ", ndata_);
        rng64 r(seed);
        const auto n = static_cast<std::size_t>(first / shard_);
        for (std::size_t i = n; i > 1; --i) std::swap(order_[i - 1], order_[static_cast<std::size_t>(r.below(i))]);
    }
    // Back to the stored order.
    void unshuffle() { std::iota(order_.begin(), order_.end(), std::int64_t{0}); }

    // The index of the datapoint at position i of the current order.
    std::int64_t position(std::int64_t i) const {
        return order_[static_cast<std::size_t>(i / shard_)] * shard_ + i % shard_;
    }

    // Copies the batch of datapoints [ibatch * B, (ibatch + 1) * B) of the current order into
    // `data` (B datapoints) and `labels` (B labels, may be null), B being data's element count
    // over the datapoint size. Both tensors f32, contiguous, in host memory.
    void get_batch(graph::node* data, graph::node* labels, std::int64_t ibatch) const {
        const std::int64_t b = batch_of(data, labels);
        if (b % shard_ != 0) fail_cat(errc::invalid_argument, "dataset::get_batch: batch size ", b, " is not whole shards of ", shard_);
        if (ibatch < 0 || (ibatch + 1) * b > ndata_)
            fail_cat(errc::invalid_argument, "dataset::get_batch: batch ", ibatch, " of ", b, " runs past the ", ndata_, " datapoints");
        get_range(data, labels, ibatch * b, b);
    }

    // Copies the datapoints at positions [first, first + count) of the current order into the
    // first count slots of `data` and `labels` (labels may be null) and zeroes the slots after
    // them (a partial last batch). Any offset: no shard alignment needed.
    void get_range(graph::node* data, graph::node* labels, std::int64_t first, std::int64_t count) const {
        const std::int64_t b = batch_of(data, labels);
        if (count < 0 || count > b || first < 0 || first + count > ndata_)
            fail_cat(errc::invalid_argument, "dataset::get_range: datapoints [", first, ", ", first + count, ") do not fit the ", ndata_,
                     " datapoints and the tensors' ", b, " slots");
        auto* d = reinterpret_cast<float*>(data->bytes());
        auto* l = labels ? reinterpret_cast<float*>(labels->bytes()) : nullptr;
        const auto nd = static_cast<std::size_t>(ne_data_), nl = static_cast<std::size_t>(ne_label_);
        const auto n = static_cast<std::size_t>(count), slots = static_cast<std::size_t>(b);
        for (std::size_t k = 0; k < n; ++k) {
            const auto p = static_cast<std::size_t>(position(first + static_cast<std::int64_t>(k)));
            std::memcpy(d + k * nd, data_.data() + p * nd, nd * 4);
            if (l && nl) std::memcpy(l + k * nl, labels_.data() + p * nl, nl * 4);
        }
        std::memset(d + n * nd, 0, (slots - n) * nd * 4);
        if (l && nl) std::memset(l + n * nl, 0, (slots - n) * nl * 4);
    }

private:
    std::size_t index(std::int64_t i) const {
        if (i < 0 || i >= ndata_) fail_cat(errc::invalid_argument, "dataset: datapoint ", i, " outside 0..", ndata_ - 1);
        return static_cast<std::size_t>(i);
    }
    // The datapoints the data tensor holds (the labels tensor, when given, must hold as many).
    std::int64_t batch_of(const graph::node* data, const graph::node* labels) const {
        const std::int64_t b = slots(data, ne_data_, "data");
        if (labels) {
            const std::int64_t bl = slots(labels, ne_label_, "labels");
            if (bl != b)
                fail_cat(errc::shape_mismatch, "dataset::get_batch: the data tensor holds ", b, " datapoints, the labels tensor ", bl);
        }
        return b;
    }
    static std::int64_t slots(const graph::node* t, std::int64_t per, const char* what) {
        if (!t) fail_cat(errc::invalid_argument, "dataset::get_batch: no ", what, " tensor");
        if (t->lay.type != type_id::f32 || !t->lay.is_contiguous())
            fail_cat(errc::unsupported, "dataset::get_batch: the ", what, " tensor ", t->lay.to_string(), " must be contiguous f32");
        if (!t->bytes()) fail_cat(errc::invalid_argument, "dataset::get_batch: the ", what, " tensor has no memory yet");
        const std::int64_t n = t->lay.nelements();
        if (per == 0 || n % per != 0)
            fail_cat(errc::shape_mismatch, "dataset::get_batch: the ", what, " tensor ", t->lay.to_string(), " is not whole datapoints of ",
                     per, " floats");
        return n / per;
    }

    std::int64_t ne_data_, ne_label_, ndata_, shard_;
    std::vector<float> data_, labels_;
    std::vector<std::int64_t> order_;
};

}  // namespace opt
TESSERA_END_NAMESPACE
