//! The local kernels of a counting-sort pass: reading the current local
//! sequence, scattering it by digit into target buffers, and merging
//! digit-sorted runs.

/// A range of the current local sequence, held either in an owned buffer
/// ("mine") or in the receive coarray, where the previous pass's remote
/// puts landed. A pass's local sequence is the concatenation of its spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) in_recv: bool,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    /// The whole of an owned buffer of length `n`.
    pub(crate) fn mine(n: usize) -> Vec<Span> {
        vec![Span {
            in_recv: false,
            start: 0,
            end: n,
        }]
    }
}

/// Calls `f` on every element of the sequence described by `spans`, in order.
#[inline(always)]
pub(crate) fn each<T>(mine: &[T], recv: &[T], spans: &[Span], mut f: impl FnMut(&T)) {
    for s in spans {
        let part = if s.in_recv { recv } else { mine };
        part[s.start..s.end].iter().for_each(&mut f);
    }
}

/// A run of consecutive positions of one target buffer that receives the
/// elements of one digit, in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub(crate) target: usize,
    pub(crate) pos: usize,
    pub(crate) len: usize,
}

#[derive(Clone, Copy, Default)]
struct Cursor {
    target: usize,
    pos: usize,
    left: usize,
    seg: usize,
}

/// Stable scatter: the elements of digit d fill the segments
/// `segs[first[d]..]` in order (a digit's segments are consecutive in
/// `segs`, and together exactly as long as the digit's count).
pub(crate) fn scatter<T: Copy>(
    mine: &[T],
    recv: &[T],
    spans: &[Span],
    digit: impl Fn(&T) -> usize,
    segs: &[Seg],
    first: &[usize],
    targets: &mut [&mut [T]],
) {
    let mut cursors: Vec<Cursor> = first
        .iter()
        .map(|&i| match segs.get(i) {
            Some(s) => Cursor {
                target: s.target,
                pos: s.pos,
                left: s.len,
                seg: i,
            },
            None => Cursor::default(),
        })
        .collect();
    each(mine, recv, spans, |x| {
        let c = &mut cursors[digit(x)];
        targets[c.target][c.pos] = *x;
        c.pos += 1;
        c.left -= 1;
        if c.left == 0 {
            // Move on to the digit's next segment; past its last one this
            // lands on another digit's segment, which is never used.
            c.seg += 1;
            if let Some(s) = segs.get(c.seg) {
                (c.target, c.pos, c.left) = (s.target, s.pos, s.len);
            }
        }
    });
}

/// Stable merge of runs that are each sorted by digit: equal digits are
/// taken from the lower-numbered run first. `out` must be exactly as long
/// as the runs together.
pub(crate) fn merge_runs<T: Copy>(runs: &[&[T]], out: &mut [T], digit: impl Fn(&T) -> usize) {
    let live: Vec<usize> = (0..runs.len()).filter(|&j| !runs[j].is_empty()).collect();
    if let [only] = live[..] {
        out.copy_from_slice(runs[only]);
        return;
    }
    let mut heads = vec![0usize; runs.len()];
    let mut head_digit: Vec<usize> = runs
        .iter()
        .map(|r| r.first().map_or(usize::MAX, &digit))
        .collect();
    for slot in out.iter_mut() {
        let mut best = 0;
        for j in 1..runs.len() {
            if head_digit[j] < head_digit[best] {
                best = j;
            }
        }
        let run = runs[best];
        *slot = run[heads[best]];
        heads[best] += 1;
        head_digit[best] = run.get(heads[best]).map_or(usize::MAX, &digit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_follows_segments_and_merge_is_stable() {
        // Digits 0 and 1; digit 0 split over two targets.
        let data = [(1, 'a'), (0, 'b'), (0, 'c'), (1, 'd'), (0, 'e')];
        let segs = [
            Seg {
                target: 0,
                pos: 0,
                len: 2,
            },
            Seg {
                target: 1,
                pos: 0,
                len: 1,
            },
            Seg {
                target: 1,
                pos: 1,
                len: 2,
            },
        ];
        let (mut t0, mut t1) = ([(9, 'x'); 2], [(9, 'x'); 3]);
        let mut targets: Vec<&mut [(i32, char)]> = vec![&mut t0, &mut t1];
        let spans = Span::mine(data.len());
        scatter(
            &data,
            &[],
            &spans,
            |x| x.0 as usize,
            &segs,
            &[0, 2],
            &mut targets,
        );
        assert_eq!(t0, [(0, 'b'), (0, 'c')]);
        assert_eq!(t1, [(0, 'e'), (1, 'a'), (1, 'd')]);

        let runs: [&[(i32, char)]; 3] = [&[(0, 'a'), (2, 'b')], &[], &[(0, 'c'), (1, 'd')]];
        let mut out = [(0, ' '); 4];
        merge_runs(&runs, &mut out, |x| x.0 as usize);
        assert_eq!(out, [(0, 'a'), (0, 'c'), (1, 'd'), (2, 'b')]);
    }
}
