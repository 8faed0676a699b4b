//! Random data accesses over a block-distributed global array (Shankar and Ranka):
//! random access write (RAW) and read (RAR) with hot spots, their
//! monotonic special cases, generalize, concentrate and distribute.

mod checks;
mod collision;
mod monotonic;
mod pack;
mod pairs;
mod plan;
mod rar;
mod raw;
mod window;

pub use collision::{Collision, Combine, Conflict, First, Last, Unique};
pub use monotonic::{generalize, monotonic_raw};
pub use pack::{concentrate, distribute};
pub use rar::{rar, rar_direct};
pub use raw::{raw, raw_direct};
