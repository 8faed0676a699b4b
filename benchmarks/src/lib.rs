//! Benchmarks of bsp against its peers, kept out of the `bsp` package so
//! that its examples build without the peers: the harnesses in `examples/`
//! (`bench_sort` against the peer sorters, `bspbench`, `bench_router`,
//! `bench_collectives`, ...: `cargo run --release -p bsp-benchmarks
//! --example bench_sort`), and the
//! pictures of BENCHMARKS.md, drawn by `src/bin/plot.rs` from the recorded
//! benchmark output in `benchmarks/data/` (`bash benchmarks/pictures.sh`
//! measures and draws).
