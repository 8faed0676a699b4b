//! # bsp-sort: counting sort and stable parallel radix sort
//!
//! Written only against the public API of `bsp-core` and `bsp-algos`.

#![forbid(unsafe_code)]
