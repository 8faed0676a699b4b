//! The result of an all-gather, [`Rows`], and how a transport builds it.

use std::sync::Arc;

/// The result of an all-gather: every processor's row, in pid order. Shared,
/// not copied, between the processors of one process (the statistics log
/// keeps it), so p processors holding the rows of a sync cost p rows, not p².
pub(crate) type Rows = Arc<[u64]>;

/// The `p` rows of `width` words that `row` gives, concatenated: written
/// into `spare` (rows an earlier all-gather returned, given back by
/// [`Comm::recycle_rows`](super::Comm::recycle_rows)) when it has the
/// length and nobody else holds it, so that no allocation is made; into a
/// new allocation otherwise, each word written once (not zeroed first:
/// that `memset` and the allocation were a tenth of an empty superstep
/// under MPI, BENCHMARKS.md section 14h).
///
/// # Panics
///
/// If a row is not `width` words long.
pub(crate) fn concatenate<'a>(
    spare: Option<Rows>,
    p: usize,
    width: usize,
    row: impl Fn(usize) -> &'a [u64],
) -> Rows {
    let check = |q: usize| {
        let words = row(q);
        assert_eq!(words.len(), width, "bsp: all-gather rows of unequal width");
        words
    };
    if let Some(mut rows) = spare.filter(|rows| rows.len() == p * width) {
        if let Some(out) = Arc::get_mut(&mut rows) {
            for (q, chunk) in out.chunks_exact_mut(width.max(1)).enumerate().take(p) {
                chunk.copy_from_slice(check(q));
            }
            return rows;
        }
    }
    let mut all = Arc::<[u64]>::new_uninit_slice(p * width);
    let out = Arc::get_mut(&mut all).expect("a new allocation is unshared");
    for (q, chunk) in out.chunks_exact_mut(width.max(1)).enumerate().take(p) {
        for (slot, &w) in chunk.iter_mut().zip(check(q)) {
            slot.write(w);
        }
    }
    // SAFETY: every one of the p·width words was written above (each row
    // has exactly `width` words; with width 0 there are none).
    unsafe { all.assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenation_keeps_pid_order() {
        let rows = [vec![1, 2], vec![3, 4], vec![5, 6]];
        let all = concatenate(None, 3, 2, |q| &rows[q]);
        assert_eq!(&all[..], &[1, 2, 3, 4, 5, 6]);
        let empty: [Vec<u64>; 3] = Default::default();
        assert!(concatenate(None, 3, 0, |q| &empty[q]).is_empty());
    }

    #[test]
    fn spare_rows_are_written_over_when_nobody_else_holds_them() {
        let rows = [vec![1, 2], vec![3, 4]];
        let spare: Rows = vec![9; 4].into();
        let at = spare.as_ptr();
        let all = concatenate(Some(spare), 2, 2, |q| &rows[q]);
        assert_eq!((&all[..], all.as_ptr()), (&[1, 2, 3, 4][..], at));
        // Held elsewhere, or of another length: a new allocation.
        let held: Rows = vec![9; 4].into();
        let all = concatenate(Some(Rows::clone(&held)), 2, 2, |q| &rows[q]);
        assert_eq!((&all[..], &held[..]), (&[1, 2, 3, 4][..], &[9; 4][..]));
        let short: Rows = vec![9; 3].into();
        assert_eq!(
            &concatenate(Some(short), 2, 2, |q| &rows[q])[..],
            &[1, 2, 3, 4]
        );
    }
}
