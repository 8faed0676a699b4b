//! What a random access write does when several writes hit one element
//! (Shankar and Ranka, Sect. 1).

use bytemuck::Pod;

use crate::ops::Op;

/// A collision policy: how two writes to the same element are resolved.
///
/// Writes to one element are always resolved in writer order (source pid,
/// then position in the source's input), so a non-commutative operator or
/// a "first"/"last" rule gives the same answer as a sequential loop.
///
/// # Examples
///
/// ```
/// use bsp_algos::{Collision, Combine, First, Last, Sum, Unique};
///
/// assert_eq!(Combine(Sum).resolve(2u32, 3), Some(5));
/// assert_eq!(First.resolve(2u32, 3), Some(2));
/// assert_eq!(Last.resolve(2u32, 3), Some(3));
/// assert_eq!(Unique.resolve(2u32, 3), None);
/// assert_eq!(Unique.resolve(7u32, 7), Some(7));
/// ```
pub trait Collision<T>: Sync {
    /// The value left by an `earlier` and a `later` write to one element,
    /// or `None` if they conflict.
    fn resolve(&self, earlier: T, later: T) -> Option<T>;

    /// Whether [`resolve`](Collision::resolve) can return `None` (then the
    /// write spends one more superstep agreeing on the outcome).
    fn can_conflict(&self) -> bool {
        false
    }
}

/// Combine colliding values with an associative operator (policy iii).
#[derive(Clone, Copy, Debug, Default)]
pub struct Combine<O>(pub O);

/// Keep the first write, in writer order (policy ii).
#[derive(Clone, Copy, Debug, Default)]
pub struct First;

/// Keep the last write, in writer order (policy ii).
#[derive(Clone, Copy, Debug, Default)]
pub struct Last;

/// Colliding values must be equal (bitwise); otherwise the write reports a
/// [`Conflict`] (policy i).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unique;

impl<T, O: Op<T>> Collision<T> for Combine<O> {
    fn resolve(&self, earlier: T, later: T) -> Option<T> {
        Some(self.0.combine(earlier, later))
    }
}

impl<T> Collision<T> for First {
    fn resolve(&self, earlier: T, _later: T) -> Option<T> {
        Some(earlier)
    }
}

impl<T> Collision<T> for Last {
    fn resolve(&self, _earlier: T, later: T) -> Option<T> {
        Some(later)
    }
}

impl<T: Pod> Collision<T> for Unique {
    fn resolve(&self, earlier: T, later: T) -> Option<T> {
        (bytemuck::bytes_of(&earlier) == bytemuck::bytes_of(&later)).then_some(earlier)
    }

    fn can_conflict(&self) -> bool {
        true
    }
}

/// Two different values were written to global element `index` under the
/// [`Unique`] policy (the smallest such index; the same on every
/// processor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The global index of the element.
    pub index: usize,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "different values written to global element {} under the Unique collision policy",
            self.index
        )
    }
}

impl std::error::Error for Conflict {}

/// Applies a policy and remembers the smallest conflicting index.
pub(crate) struct Resolver<'a, C> {
    policy: &'a C,
    conflict: Option<usize>,
}

impl<'a, C> Resolver<'a, C> {
    pub(crate) fn new(policy: &'a C) -> Self {
        Resolver {
            policy,
            conflict: None,
        }
    }

    /// Resolves two writes to global element `g`.
    pub(crate) fn merge<T: Copy>(&mut self, g: usize, earlier: T, later: T) -> T
    where
        C: Collision<T>,
    {
        match self.policy.resolve(earlier, later) {
            Some(v) => v,
            None => {
                self.conflict = Some(self.conflict.map_or(g, |c| c.min(g)));
                earlier
            }
        }
    }

    /// Agrees on the outcome with every processor (one superstep when the
    /// policy can conflict, none otherwise).
    pub(crate) fn finish<T>(self, ctx: &mut bsp_core::Ctx) -> Result<(), Conflict>
    where
        C: Collision<T>,
    {
        if !self.policy.can_conflict() {
            return Ok(());
        }
        let mut first = [self.conflict.map_or(u64::MAX, |c| c as u64)];
        crate::reduce::all_reduce(ctx, &mut first, &crate::ops::Min);
        match first[0] {
            u64::MAX => Ok(()),
            c => Err(Conflict { index: c as usize }),
        }
    }
}
