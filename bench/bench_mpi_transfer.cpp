// What MPI moves between two ranks, seen through tessera's MPI device: rank 0 writes
// (SET) and reads (GET) a tensor in rank 1's memory, for sizes from 4 KiB to 16 MiB, and
// times an empty round trip (a 4-byte GET). Run it under mpirun -np 2 (alone it prints
// SKIP and exits 77):
//
//   mpirun --oversubscribe --bind-to none -np 2 bench_mpi_transfer
//
// Each figure prints its GB/s and its ratio to the limit measured in the same run: a
// memcpy of the same size on one core (on one host Open MPI's shared-memory transport
// copies the bytes through a shared segment, so a single copy is an upper bound). The
// round trip is its time per iteration. bench/bench_mpi.py reads these to turn the bytes a
// split model moves per token into transfer time per token.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "bench_run.hpp"
#include "machine.hpp"
#include "tessera/backend/mpi.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/simd/dispatch.hpp"

#if defined(TESSERA_MPI) && TESSERA_MPI
using namespace tessera;
using namespace tessera::backend;

namespace {

// A tensor of `bytes` in rank 1's memory, and host bytes to write into it.
struct remote {
    std::unique_ptr<graph::context> ctx = std::make_unique<graph::context>(graph::context_options{true});
    graph::node* t = nullptr;
    any_buffer buf;
    std::vector<std::byte> host;
    explicit remote(std::size_t bytes) : host(bytes, std::byte{0x5a}) {
        t = graph::new_tensor(*ctx, type_id::i8, {static_cast<std::int64_t>(bytes), 1, 1, 1}, "payload").get();
        buf = alloc_ctx_tensors(*ctx, mpi_buffer_type(0));
    }
};

void set_limit(benchmark::State& st, std::size_t bytes) {
    // a one-core memcpy of the same bytes (read + write counted once: bytes moved)
    const double copy = tessera_bench::copy_gbs(1, 2 * bytes) / 2;
    const double gbs = static_cast<double>(bytes) * static_cast<double>(st.iterations()) / 1e9;
    st.counters["GB/s"] = benchmark::Counter(gbs, benchmark::Counter::kIsRate);
    st.counters["memcpy_GB/s"] = copy;
    st.counters["memcpy_ratio"] = benchmark::Counter(gbs / copy, benchmark::Counter::kIsRate);
}

// SET (a synchronous set_tensor: it returns when MPI has sent the bytes); a 4-byte GET at
// the end waits until rank 1 has taken every one (the worker runs commands in order).
void mpi_set(benchmark::State& st) {
    const auto bytes = static_cast<std::size_t>(st.range(0));
    remote r(bytes);
    std::byte tail[4];
    for (auto _ : st) tensor_set(*r.t, r.host.data(), 0, bytes);
    tensor_get(*r.t, tail, 0, sizeof tail);
    set_limit(st, bytes);
}

// GET: a request, then the bytes back into host memory.
void mpi_get(benchmark::State& st) {
    const auto bytes = static_cast<std::size_t>(st.range(0));
    remote r(bytes);
    tensor_set(*r.t, r.host.data(), 0, bytes);
    for (auto _ : st) {
        tensor_get(*r.t, r.host.data(), 0, bytes);
        benchmark::DoNotOptimize(r.host.data());
    }
    set_limit(st, bytes);
}

// The latency of one command and its reply: a 4-byte GET.
void mpi_round_trip(benchmark::State& st) {
    remote r(64);
    std::byte b[4];
    for (auto _ : st) tensor_get(*r.t, b, 0, sizeof b);
}

}  // namespace

BENCHMARK(mpi_set)->Name("mpi/set")->RangeMultiplier(16)->Range(4 << 10, 16 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(mpi_get)->Name("mpi/get")->RangeMultiplier(16)->Range(4 << 10, 16 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(mpi_round_trip)->Name("mpi/round_trip")->Unit(benchmark::kMicrosecond);
#endif

int main(int argc, char** argv) {
#if defined(TESSERA_MPI) && TESSERA_MPI
    std::unique_ptr<tessera::backend::mpi::session> s;
    try {
        s = std::make_unique<tessera::backend::mpi::session>(argc, argv);
    } catch (const tessera::error& e) {
        std::fprintf(stderr, "bench_mpi_transfer: %s\n", e.what());
        return 1;
    }
    if (!s->is_root()) return s->serve();
    if (s->size() < 2) {
        std::puts("SKIP: bench_mpi_transfer needs mpirun -np 2");
        return 77;
    }
    return tessera_bench::run_benchmarks(argc, argv);
#else
    (void)argc;
    (void)argv;
    std::puts("SKIP: built without MPI");
    return 77;
#endif
}
