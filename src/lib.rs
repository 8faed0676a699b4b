//! # bsp: Bulk Synchronous Parallel computing for Rust
//!
//! The facade of the workspace: the runtime from `bsp-core` at the top
//! level, the collectives and random-access primitives as [`algos`], and
//! the sorts as [`sort`].
//!
//! ```
//! use bsp::prelude::*;
//!
//! let pids = bsp::run(2, |ctx| ctx.pid()).unwrap();
//! assert_eq!(pids, vec![0, 1]);
//! ```

pub use bsp_core::*;

/// Collectives and random-access primitives (`bsp-algos`).
pub use bsp_algos as algos;
/// Counting sort and stable parallel radix sort (`bsp-sort`).
pub use bsp_sort as sort;

/// The names a BSP program needs: `use bsp::prelude::*;`.
pub mod prelude {
    pub use bsp_core::prelude::*;
}
