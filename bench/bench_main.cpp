// main() of every tessera benchmark but bench_mpi_transfer (which starts MPI first):
// bench_run.hpp's report, then Google Benchmark.
#include "bench_run.hpp"

int main(int argc, char** argv) { return tessera_bench::run_benchmarks(argc, argv); }
