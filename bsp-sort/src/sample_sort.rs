//! Sample sort by regular sampling (PSRS: Shi and Schaeffer, 1992) for any
//! ordered serde type, over the serde collectives of `bsp-algos`.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use bsp_algos::serde::{all_gather, all_to_all};
use bsp_core::Ctx;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Sorts the processors' `data` together and returns this processor's
/// part of the result: the parts, in pid order, are the sorted sequence of
/// all elements, each element once.
///
/// Regular sampling: every processor sorts its data, takes p − 1 samples
/// at regular positions and all-gathers them; every processor picks the
/// same p − 1 splitters from the p(p − 1) samples, cuts its sorted data at
/// them and sends part j to processor j (one [`all_to_all`]), which merges
/// the p sorted runs it received (a k-way merge, not a sort).
///
/// Elements compare as `(value, source pid, position)`, so equal values
/// are spread over processors like distinct ones (all-equal input
/// balances as well as distinct input), and the sort is **stable in pid
/// order**: equal elements keep the order they have in the concatenation
/// of the inputs in pid order.
///
/// Balance: with nᵢ elements on processor i and n = Σ nᵢ, each processor
/// receives fewer than n/p + maxᵢ nᵢ + p elements; when every processor
/// starts with n/p, at most (2p − 1)n/p² + p < 2n/p + p. Output sizes
/// are therefore not those of the input (use
/// [`radix_sort`](crate::radix_sort) for that, for integer keys).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let words = ["pear", "fig", "apple", "kiwi", "date", "lime"];
///     let mine: Vec<String> = words.iter().skip(ctx.pid()).step_by(3).map(|w| w.to_string()).collect();
///     bsp_sort::sample_sort(ctx, mine)
/// })
/// .unwrap();
/// assert_eq!(out.concat(), ["apple", "date", "fig", "kiwi", "lime", "pear"]);
/// ```
///
/// # Panics
///
/// If serde fails to encode or decode an element (see
/// [`bsp_algos::serde`]), or `Ord` panics.
///
/// # Cost
///
/// 2 supersteps: the sample all-gather (h = (p − 1)² samples received,
/// as many sent) and the all-to-all (h ≤ max(nᵢ, elements received), each
/// element encoded once). Local work O(nᵢ log nᵢ) for the local sort,
/// O(p² log p) to sort the samples, O(p log nᵢ) to cut, and O(r log p) to
/// merge the r elements received.
pub fn sample_sort<T>(ctx: &mut Ctx, mut data: Vec<T>) -> Vec<T>
where
    T: Ord + Clone + Serialize + DeserializeOwned,
{
    let (p, me) = (ctx.nprocs(), ctx.pid());
    data.sort();
    if p == 1 {
        return data;
    }
    let n = data.len();
    let samples: Vec<Tied<T>> = match n {
        0 => Vec::new(),
        _ => (1..p)
            .map(|k| {
                let at = k * n / p;
                Tied(data[at].clone(), me, at)
            })
            .collect(),
    };
    let mut samples: Vec<Tied<T>> = all_gather(ctx, &samples).concat();
    samples.sort();
    let splitters = pick_splitters(samples, p);
    // Cut this processor's sorted data at the splitters: part j holds the
    // elements above splitter j − 1 and up to splitter j.
    let cuts: Vec<usize> = splitters
        .iter()
        .map(|s| first_above(&data, me, s))
        .collect();
    let mut parts = Vec::with_capacity(p);
    let mut rest = data;
    for &cut in cuts.iter().rev() {
        parts.push(rest.split_off(cut));
    }
    parts.push(rest);
    parts.resize_with(p, Vec::new); // no splitters: no data anywhere
    parts.reverse();
    let runs = all_to_all(ctx, parts);
    merge(runs)
}

/// An element with its source pid and its position in that processor's
/// sorted data: the total order sample sort splits by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
struct Tied<T>(T, usize, usize);

/// The p − 1 splitters among the sorted `samples` (any number of them):
/// those of rank ⌊jN/p⌋ − 1 for j = 1..p − 1, N samples in all, clamped to
/// rank 0; none when there are no samples (no data anywhere).
fn pick_splitters<T: Clone>(samples: Vec<Tied<T>>, p: usize) -> Vec<Tied<T>> {
    let n = samples.len();
    if n == 0 {
        return Vec::new();
    }
    let ranks: Vec<usize> = (1..p).map(|j| (j * n / p).max(1) - 1).collect();
    let mut picked = Vec::with_capacity(p - 1);
    let mut ranks = ranks.into_iter().peekable();
    for (rank, s) in samples.into_iter().enumerate() {
        while ranks.peek() == Some(&rank) {
            ranks.next();
            picked.push(s.clone());
        }
    }
    picked
}

/// The number of elements of `sorted` (processor `me`'s sorted data) that
/// are ≤ `splitter` as [`Tied`] elements.
fn first_above<T: Ord>(sorted: &[T], me: usize, splitter: &Tied<T>) -> usize {
    let Tied(v, q, at) = splitter;
    let (mut lo, mut hi) = (0, sorted.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let le = match sorted[mid].cmp(v) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => (me, mid) <= (*q, *at),
        };
        if le {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The k-way merge of sorted `runs`, equal elements taken from the
/// lower-numbered run first.
fn merge<T: Ord>(runs: Vec<Vec<T>>) -> Vec<T> {
    let total = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut iters: Vec<_> = runs.into_iter().map(Vec::into_iter).collect();
    let mut heads: BinaryHeap<Reverse<(T, usize)>> = iters
        .iter_mut()
        .enumerate()
        .filter_map(|(j, it)| it.next().map(|x| Reverse((x, j))))
        .collect();
    while let Some(Reverse((x, j))) = heads.pop() {
        out.push(x);
        if let Some(next) = iters[j].next() {
            heads.push(Reverse((next, j)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_stable_by_run() {
        let runs = vec![vec![(1, 'a'), (3, 'b')], vec![], vec![(0, 'c'), (3, 'a')]];
        let out = merge(
            runs.into_iter()
                .map(|r| r.into_iter().map(Key).collect())
                .collect(),
        );
        let out: Vec<_> = out.into_iter().map(|k| k.0).collect();
        assert_eq!(out, [(0, 'c'), (1, 'a'), (3, 'b'), (3, 'a')]);
    }

    /// Compares by the number only, so that run order decides ties.
    #[derive(Debug, PartialEq, Eq)]
    struct Key((i32, char));

    impl PartialOrd for Key {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }

    impl Ord for Key {
        fn cmp(&self, other: &Self) -> Ordering {
            self.0 .0.cmp(&other.0 .0)
        }
    }

    #[test]
    fn cuts_break_ties_by_pid_and_position() {
        let sorted = [1, 2, 2, 2, 5];
        // Processor 1's 2s at positions 1..4: a splitter (2, pid 1, 2)
        // keeps positions 1 and 2 of processor 1.
        assert_eq!(first_above(&sorted, 1, &Tied(2, 1, 2)), 3);
        // A processor below pid 1 keeps all its 2s, one above none.
        assert_eq!(first_above(&sorted, 0, &Tied(2, 1, 2)), 4);
        assert_eq!(first_above(&sorted, 2, &Tied(2, 1, 2)), 1);
        assert_eq!(first_above(&sorted, 0, &Tied(0, 0, 0)), 0);
        assert_eq!(first_above(&sorted, 0, &Tied(9, 0, 0)), 5);
    }
}
