//! Benchmarks of bsp against its peers, kept out of the `bsp` package so
//! that its examples build without the peers: `examples/bench_sort.rs`
//! (`cargo run --release -p bsp-benchmarks --example bench_sort`).
