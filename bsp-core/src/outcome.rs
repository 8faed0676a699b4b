//! What a run returns: the results of the processors this process ran, by
//! pid, with the same meaning on every transport.

use std::fmt;
use std::ops::Range;

/// The results of a BSP run held by this process, by processor id.
///
/// On threads one process runs every processor, so it holds all p results;
/// under MPI each rank holds its own. The methods mean the same on both:
///
/// * [`local`](Outcome::local): the result of the first processor this
///   process ran — processor 0 on threads, this rank under MPI;
/// * [`root`](Outcome::root): processor 0's result, in the process that
///   ran it (the one that should print);
/// * [`get`](Outcome::get)`(pid)`: processor `pid`'s result, where this
///   process holds it;
/// * [`all`](Outcome::all): every processor's result, where this process
///   holds them all. To have every result on every MPI rank as well, ask
///   for it: [`Runtime::run_all`](crate::Runtime::run_all) gathers them.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| ctx.pid() * 10)?;
/// assert_eq!(out.nprocs(), 3);
/// if let Some(first) = out.root() {
///     assert_eq!(*first, 0); // processor 0's result, where it ran
/// }
/// for (pid, r) in out.iter_with_pids() {
///     assert_eq!(*r, pid * 10);
/// }
/// # Ok::<(), bsp_core::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Outcome<R> {
    nprocs: usize,
    /// The pid of the first result held.
    first: usize,
    /// The first processor this process ran (`first`, except for a
    /// gathered outcome, which holds every result in every process).
    ran: usize,
    results: Vec<R>,
}

impl<R> Outcome<R> {
    /// The results of processors `first..first + results.len()` of
    /// `nprocs`, which this process ran.
    pub(crate) fn new(nprocs: usize, first: usize, results: Vec<R>) -> Self {
        assert!(
            !results.is_empty() && first + results.len() <= nprocs,
            "bsp: an outcome holds the results of some of the run's processors"
        );
        Outcome {
            nprocs,
            first,
            ran: first,
            results,
        }
    }

    /// Every processor's result, gathered into a process whose first
    /// processor was `ran`.
    pub(crate) fn gathered(ran: usize, results: Vec<R>) -> Self {
        assert!(
            ran < results.len(),
            "bsp: a gathered outcome holds its own result"
        );
        Outcome {
            nprocs: results.len(),
            first: 0,
            ran,
            results,
        }
    }

    /// The number of processors p of the run.
    pub fn nprocs(&self) -> usize {
        self.nprocs
    }

    /// The processors whose results this process holds: `0..p` on
    /// threads, this rank alone under MPI.
    pub fn pids(&self) -> Range<usize> {
        self.first..self.first + self.results.len()
    }

    /// The result of this process's first processor: processor 0 on
    /// threads, this rank's under MPI.
    pub fn local(&self) -> &R {
        &self.results[self.ran - self.first]
    }

    /// Like [`local`](Outcome::local), by value.
    pub fn into_local(self) -> R {
        self.results
            .into_iter()
            .nth(self.ran - self.first)
            .expect("an outcome holds its own result")
    }

    /// Processor 0's result, if this process ran processor 0 (always on
    /// threads; rank 0 under MPI). The process that gets `Some` is the one
    /// that should print a program's answer.
    pub fn root(&self) -> Option<&R> {
        self.is_root().then(|| &self.results[0])
    }

    /// Whether this process ran processor 0 (always on threads; rank 0
    /// under MPI): the process that should print a program's answer, on
    /// every transport alike.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| ctx.pid() * 10)?;
    /// if out.is_root() {
    ///     println!("processor 0 says {:?}", out.root());
    /// }
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    pub fn is_root(&self) -> bool {
        self.ran == 0
    }

    /// Processor `pid`'s result, if this process holds it.
    pub fn get(&self, pid: usize) -> Option<&R> {
        pid.checked_sub(self.first)
            .and_then(|k| self.results.get(k))
    }

    /// Every processor's result in pid order, if this process holds them
    /// all (threads, or an MPI job of one rank).
    pub fn all(&self) -> Option<&[R]> {
        (self.results.len() == self.nprocs).then_some(self.results.as_slice())
    }

    /// Like [`all`](Outcome::all), by value; `Err(self)` where this process
    /// does not hold every result.
    pub fn into_all(self) -> Result<Vec<R>, Self> {
        if self.results.len() == self.nprocs {
            Ok(self.results)
        } else {
            Err(self)
        }
    }

    /// The held results, in pid order.
    pub fn iter(&self) -> std::slice::Iter<'_, R> {
        self.results.iter()
    }

    /// The held results with their pids, in pid order.
    pub fn iter_with_pids(&self) -> impl ExactSizeIterator<Item = (usize, &R)> + '_ {
        let first = self.first;
        self.results
            .iter()
            .enumerate()
            .map(move |(k, r)| (first + k, r))
    }

    /// The held results with their pids, in pid order, by value.
    pub fn into_iter_with_pids(self) -> impl ExactSizeIterator<Item = (usize, R)> {
        let first = self.first;
        self.results
            .into_iter()
            .enumerate()
            .map(move |(k, r)| (first + k, r))
    }

    /// The held results, in pid order, without their pids.
    pub fn into_vec(self) -> Vec<R> {
        self.results
    }
}

impl<T: Clone> Outcome<Vec<T>> {
    /// The held parts concatenated in pid order: on threads, the whole
    /// distributed sequence; under MPI, this rank's part.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| vec![ctx.pid(); 2])?;
    /// assert_eq!(out.concat(), [0, 0, 1, 1, 2, 2]);
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    pub fn concat(&self) -> Vec<T> {
        self.results.concat()
    }
}

impl<R> IntoIterator for Outcome<R> {
    type Item = R;
    type IntoIter = std::vec::IntoIter<R>;

    /// The held results, in pid order.
    fn into_iter(self) -> Self::IntoIter {
        self.results.into_iter()
    }
}

impl<'a, R> IntoIterator for &'a Outcome<R> {
    type Item = &'a R;
    type IntoIter = std::slice::Iter<'a, R>;

    /// The held results, in pid order.
    fn into_iter(self) -> Self::IntoIter {
        self.results.iter()
    }
}

impl<R: fmt::Debug> fmt::Debug for Outcome<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.results.len() == self.nprocs {
            f.debug_list().entries(&self.results).finish()
        } else {
            f.debug_map().entries(self.iter_with_pids()).finish()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_holds_its_own_result_by_pid() {
        let out = Outcome::new(4, 2, vec!["two"]);
        assert_eq!(out.pids(), 2..3);
        assert_eq!(*out.local(), "two");
        assert_eq!(out.get(2), Some(&"two"));
        assert_eq!(out.get(0), None);
        assert!(out.root().is_none() && out.all().is_none());
        assert_eq!(format!("{out:?}"), r#"{2: "two"}"#);
        assert!(out.into_all().is_err());
    }

    #[test]
    fn a_gathered_outcome_holds_all_and_knows_its_own() {
        let out = Outcome::gathered(2, vec![10, 11, 12]);
        assert_eq!((out.pids(), out.all()), (0..3, Some(&[10, 11, 12][..])));
        assert_eq!((*out.local(), out.is_root(), out.root()), (12, false, None));
        assert_eq!(out.into_local(), 12);
        let root = Outcome::gathered(0, vec![10, 11]);
        assert_eq!((root.is_root(), root.root()), (true, Some(&10)));
    }

    #[test]
    fn threads_hold_every_result() {
        let out = Outcome::new(3, 0, vec![5, 6, 7]);
        assert_eq!(out.all(), Some(&[5, 6, 7][..]));
        assert_eq!(out.root(), Some(&5));
        assert_eq!(
            out.iter_with_pids().map(|(p, r)| p + r).sum::<usize>(),
            5 + 7 + 9
        );
        assert_eq!(out.iter().sum::<usize>(), 18);
        assert_eq!(format!("{out:?}"), "[5, 6, 7]");
        assert_eq!(out.into_all(), Ok(vec![5, 6, 7]));
    }
}
