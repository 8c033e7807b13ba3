int bench_placeholder_m = 0;
