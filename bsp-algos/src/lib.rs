//! # bsp-algos: collectives and random-access primitives
//!
//! Written only against the public API of `bsp-core`.

#![forbid(unsafe_code)]
