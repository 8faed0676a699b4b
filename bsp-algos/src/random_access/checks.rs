//! The argument checks shared by the random access primitives: a
//! processor's block of the global array, one value per destination, and
//! sorted destinations in range.

use bsp_core::Ctx;

use crate::dist::Block;

/// Checks that `local` is the length of this processor's block of a
/// global array of `len` elements, and returns the distribution.
pub(crate) fn check_block(ctx: &Ctx, local: usize, len: usize, what: &str) -> Block {
    let dist = Block::new(len, ctx.nprocs());
    let want = dist.local_len(ctx.pid());
    assert_eq!(
        local,
        want,
        "bsp-algos: {what}: processor {}'s block of a global array of {len} elements has {want} elements, got {local}",
        ctx.pid()
    );
    dist
}

/// The checks of a write of `values` to destinations `index` of a global
/// array of `len` elements, of which `target` is this processor's block:
/// one value per destination, and the block's length. Returns the
/// distribution.
pub(crate) fn check_writes<T>(
    ctx: &Ctx,
    what: &str,
    target: &[T],
    len: usize,
    index: &[usize],
    values: &[T],
) -> Block {
    assert_eq!(
        index.len(),
        values.len(),
        "bsp-algos: {what} needs one value per destination"
    );
    check_block(ctx, target.len(), len, what)
}

/// Checks that destinations `index`, into a global array of `len`
/// elements, are nondecreasing and the last of them below `len`.
pub(crate) fn check_sorted(index: &[usize], len: usize, what: &str) {
    if let Some(w) = index.windows(2).position(|w| w[0] > w[1]) {
        panic!(
            "bsp-algos: {what} needs nondecreasing destinations, but index[{w}] = {} > index[{}] = {}",
            index[w],
            w + 1,
            index[w + 1]
        );
    }
    if let Some(&g) = index.last() {
        assert!(
            g < len,
            "bsp-algos: {what}: random access to index {g} of a global array of length {len}"
        );
    }
}
