//! The integration and property tests of the bsp workspace, in `tests/`.
//!
//! They live in a package of their own so that their dev-dependency,
//! proptest, is not built with the `bsp` package's examples. Run them with
//! `cargo test --workspace` (or `cargo test -p bsp-tests`); with
//! `--features mpi` the MPI tests are built too, and each test binary can
//! also run as the ranks of an MPI job (see `tests/support/mod.rs`).
