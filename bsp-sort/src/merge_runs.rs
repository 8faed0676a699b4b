//! The receiver's kernel of the staged delivery: merging digit-sorted runs.

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
    fn merge_is_stable() {
        let runs: [&[(i32, char)]; 3] = [&[(0, 'a'), (2, 'b')], &[], &[(0, 'c'), (1, 'd')]];
        let mut out = [(0, ' '); 4];
        merge_runs(&runs, &mut out, |x| x.0 as usize);
        assert_eq!(out, [(0, 'a'), (0, 'c'), (1, 'd'), (2, 'b')]);
    }
}
