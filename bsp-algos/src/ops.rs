//! Associative operators for reductions, scans and combining writes.
//!
//! An [`Op`] combines two values; every collective applies it in processor
//! order (and, within a processor, in element order), so an associative but
//! non-commutative operator gives the same result as a sequential left fold
//! in pid order. A [`Monoid`] also has an identity, needed where a result
//! can be empty (the exclusive scan on processor 0).
//!
//! Ready operators: [`Sum`], [`Prod`], [`Min`], [`Max`]. Any closure
//! `Fn(T, T) -> T` is an [`Op`]; [`monoid`] pairs a closure with its
//! identity.

use std::ops::{Add, Mul};

use num_traits::{Bounded, One, Zero};

/// An associative binary operator on `T`.
///
/// Implemented by the ready operators and by every `Fn(T, T) -> T + Sync`
/// closure.
///
/// # Examples
///
/// ```
/// use bsp_algos::{Op, Sum};
///
/// assert_eq!(Sum.combine(2u32, 3), 5);
/// let concat_digits = |a: u64, b: u64| a * 10 + b;
/// assert_eq!(concat_digits.combine(1, 2), 12);
/// ```
pub trait Op<T>: Sync {
    /// `a ⊕ b`, where `a` comes first (lower pid, or earlier element).
    fn combine(&self, a: T, b: T) -> T;
}

/// An [`Op`] with an identity element `e` (`e ⊕ x = x ⊕ e = x`).
///
/// # Examples
///
/// ```
/// use bsp_algos::{Monoid, Max};
///
/// assert_eq!(Monoid::<i32>::identity(&Max), i32::MIN);
/// ```
pub trait Monoid<T>: Op<T> {
    /// The identity element.
    fn identity(&self) -> T;
}

impl<T, F: Fn(T, T) -> T + Sync> Op<T> for F {
    fn combine(&self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// Addition; identity `0` (from `num_traits::Zero`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;

/// Multiplication; identity `1` (from `num_traits::One`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prod;

/// Minimum; identity the largest value (`num_traits::Bounded::max_value`,
/// which is `MAX`, not infinity, for floats). Of equal values the first is
/// kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

/// Maximum; identity the smallest value (`num_traits::Bounded::min_value`,
/// which is `MIN`, not minus infinity, for floats). Of equal values the
/// first is kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

impl<T: Add<Output = T>> Op<T> for Sum {
    fn combine(&self, a: T, b: T) -> T {
        a + b
    }
}

impl<T: Add<Output = T> + Zero> Monoid<T> for Sum {
    fn identity(&self) -> T {
        T::zero()
    }
}

impl<T: Mul<Output = T>> Op<T> for Prod {
    fn combine(&self, a: T, b: T) -> T {
        a * b
    }
}

impl<T: Mul<Output = T> + One> Monoid<T> for Prod {
    fn identity(&self) -> T {
        T::one()
    }
}

impl<T: PartialOrd> Op<T> for Min {
    fn combine(&self, a: T, b: T) -> T {
        if b < a {
            b
        } else {
            a
        }
    }
}

impl<T: PartialOrd + Bounded> Monoid<T> for Min {
    fn identity(&self) -> T {
        T::max_value()
    }
}

impl<T: PartialOrd> Op<T> for Max {
    fn combine(&self, a: T, b: T) -> T {
        if b > a {
            b
        } else {
            a
        }
    }
}

impl<T: PartialOrd + Bounded> Monoid<T> for Max {
    fn identity(&self) -> T {
        T::min_value()
    }
}

/// A closure operator with an explicit identity: see [`monoid`].
#[derive(Clone, Copy, Debug)]
pub struct FnMonoid<T, F> {
    identity: T,
    op: F,
}

/// Makes a [`Monoid`] from an identity element and an associative closure.
///
/// # Examples
///
/// ```
/// use bsp_algos::{monoid, Monoid, Op};
///
/// let or = monoid(0u8, |a: u8, b: u8| a | b);
/// assert_eq!(or.combine(or.identity(), 0b101), 0b101);
/// ```
pub fn monoid<T: Copy + Sync, F: Fn(T, T) -> T + Sync>(identity: T, op: F) -> FnMonoid<T, F> {
    FnMonoid { identity, op }
}

impl<T: Copy + Sync, F: Fn(T, T) -> T + Sync> Op<T> for FnMonoid<T, F> {
    fn combine(&self, a: T, b: T) -> T {
        (self.op)(a, b)
    }
}

impl<T: Copy + Sync, F: Fn(T, T) -> T + Sync> Monoid<T> for FnMonoid<T, F> {
    fn identity(&self) -> T {
        self.identity
    }
}

/// Folds `acc[i] = acc[i] ⊕ next[i]` element-wise.
pub(crate) fn fold_into<T: Copy, O: Op<T> + ?Sized>(op: &O, acc: &mut [T], next: &[T]) {
    debug_assert_eq!(acc.len(), next.len());
    for (a, &b) in acc.iter_mut().zip(next) {
        *a = op.combine(*a, b);
    }
}

/// Folds `acc[i] = before[i] ⊕ acc[i]` element-wise.
pub(crate) fn fold_before<T: Copy, O: Op<T> + ?Sized>(op: &O, before: &[T], acc: &mut [T]) {
    debug_assert_eq!(acc.len(), before.len());
    for (a, &b) in acc.iter_mut().zip(before) {
        *a = op.combine(b, *a);
    }
}
