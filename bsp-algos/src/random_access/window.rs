//! Resolving the writes to a window of consecutive elements in a dense
//! array (Shankar and Ranka's dense representation of a bucket): linear in the
//! writes and the window, whatever the distribution of the writes.

use bytemuck::Pod;

use super::collision::{Collision, Resolver};

/// Applies a write of `v` to `dst[o]` (global index `g`): the first write
/// to an element replaces it, later ones are resolved against it.
#[inline]
fn merge_at<T: Copy, C: Collision<T>>(
    dst: &mut [T],
    seen: &mut [bool],
    o: usize,
    g: usize,
    v: T,
    res: &mut Resolver<'_, C>,
) {
    dst[o] = if seen[o] {
        res.merge(g, dst[o], v)
    } else {
        seen[o] = true;
        v
    };
}

/// Applies, in order, the writes of `vals` at offsets `offs` of `dst`,
/// whose element 0 is global index `base`; `seen` (as long as `dst`, all
/// false on entry) marks the elements written.
pub(crate) fn absorb<T: Copy, C: Collision<T>>(
    dst: &mut [T],
    seen: &mut [bool],
    base: usize,
    offs: &[u32],
    vals: &[T],
    res: &mut Resolver<'_, C>,
) {
    for (&o, &v) in offs.iter().zip(vals) {
        merge_at(dst, seen, o as usize, base + o as usize, v, res);
    }
}

/// A reusable scratch window: the resolved value of each written element.
pub(crate) struct Window<T> {
    value: Vec<T>,
    seen: Vec<bool>,
}

impl<T: Pod> Window<T> {
    pub(crate) fn new() -> Self {
        Window {
            value: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Empties the window and makes it `len` elements long.
    pub(crate) fn reset(&mut self, len: usize) {
        self.seen.clear();
        self.seen.resize(len, false);
        if self.value.len() < len {
            self.value.resize(len, T::zeroed());
        }
    }

    /// Applies the writes of `vals` at offsets `offs` (see [`absorb`]).
    pub(crate) fn absorb<C: Collision<T>>(
        &mut self,
        base: usize,
        offs: &[u32],
        vals: &[T],
        res: &mut Resolver<'_, C>,
    ) {
        absorb(&mut self.value, &mut self.seen, base, offs, vals, res);
    }

    /// Applies one write of `v` at offset `o` (global index `g`).
    pub(crate) fn write<C: Collision<T>>(
        &mut self,
        o: usize,
        g: usize,
        v: T,
        res: &mut Resolver<'_, C>,
    ) {
        merge_at(&mut self.value, &mut self.seen, o, g, v, res);
    }

    /// The written elements, (offset, value) by increasing offset.
    pub(crate) fn written(&self) -> impl Iterator<Item = (usize, T)> + '_ {
        self.seen
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s)
            .map(|(o, _)| (o, self.value[o]))
    }
}
