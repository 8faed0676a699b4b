//! Collectives for any serde type: [`broadcast`], [`gather`],
//! [`all_gather`] and [`all_to_all`] of values `T: Serialize +
//! DeserializeOwned`, where the collectives at the crate's top level move
//! `bytemuck::Pod` data.
//!
//! Each value is encoded once (with the codec of
//! [`Ctx::serde_queue`](bsp_core::Ctx::serde_queue), bincode in its
//! standard configuration), travels as bytes in one h-relation, and is
//! decoded once by each processor that receives it. Sizes are in encoded
//! bytes: a `u64` below 251 takes one byte, a `String` its length and one
//! to nine bytes more.
//!
//! ```
//! let out = bsp_core::run(3, |ctx| {
//!     let me = ctx.pid();
//!     // Processor i sends "i→j" to every j.
//!     let sends: Vec<Vec<String>> = (0..3).map(|j| vec![format!("{me}→{j}")]).collect();
//!     bsp_algos::serde::all_to_all(ctx, sends)
//! })
//! .unwrap();
//! assert_eq!(out.get(2).unwrap(), &vec![vec!["0→2"], vec!["1→2"], vec!["2→2"]]);
//! ```

mod all_to_all;
mod broadcast;
mod gather;

pub use all_to_all::all_to_all;
pub use broadcast::broadcast;
pub use gather::{all_gather, gather};

use ::serde::de::DeserializeOwned;
use ::serde::Serialize;
use bsp_core::Ctx;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// `value`'s encoding.
///
/// # Panics
///
/// Naming the collective `what` and this processor, when serde refuses
/// the value.
fn encode<T: Serialize>(ctx: &Ctx, what: &str, value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, config()).unwrap_or_else(|e| {
        panic!(
            "bsp-algos: serde::{what}: processor {} cannot serialize its value: {e}",
            ctx.pid()
        )
    })
}

/// The value `bytes` encode, which came from processor `src`.
///
/// # Panics
///
/// Naming the collective `what`, both processors and the type, when the
/// bytes do not decode as a `T` (the processors disagree on the type).
fn decode<T: DeserializeOwned>(ctx: &Ctx, what: &str, src: usize, bytes: &[u8]) -> T {
    match bincode::serde::decode_from_slice(bytes, config()) {
        Ok((value, used)) if used == bytes.len() => value,
        Ok((_, used)) => panic!(
            "bsp-algos: serde::{what}: processor {} read a {} from processor {src} in {used} of \
             its {} bytes: do all processors pass the same type?",
            ctx.pid(),
            std::any::type_name::<T>(),
            bytes.len()
        ),
        Err(e) => panic!(
            "bsp-algos: serde::{what}: processor {} cannot read a {} from processor {src}: {e} \
             (do all processors pass the same type?)",
            ctx.pid(),
            std::any::type_name::<T>()
        ),
    }
}

/// Panics, naming the collective `what`, unless `root < p`.
fn check_root(ctx: &Ctx, what: &str, root: usize) {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: serde::{what}: root {root} out of range (p = {p}) on processor {}",
        ctx.pid()
    );
}
