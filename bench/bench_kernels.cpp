int bench_placeholder_k = 0;
