//! Sub-machines at the transport level: who belongs to a group formed by
//! a split, and how an error raised inside a group is reported in the
//! numbering of the whole run.

use std::sync::Arc;

use crate::error::Error;

/// One processor's group after a split: the processors (by parent pid) of
/// its color, ordered by key and then by parent pid, and its place among
/// them. Every member computes the same group from the gathered colors
/// and keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    /// The color the members chose.
    pub(crate) color: u64,
    /// The rank of `color` among the distinct colors of the split, from
    /// 0: a small number every member knows (MPI needs colors in `int`).
    pub(crate) color_rank: usize,
    /// The members' pids in the parent, in the group's pid order.
    pub(crate) members: Vec<usize>,
    /// This processor's pid in the group.
    pub(crate) me: usize,
}

impl Group {
    /// The group of processor `me` (a parent pid) when processor q chose
    /// `choices[q] = (color, key)`.
    pub(crate) fn of(choices: &[(u64, u64)], me: usize) -> Group {
        let color = choices[me].0;
        let mut members: Vec<usize> = (0..choices.len())
            .filter(|&q| choices[q].0 == color)
            .collect();
        members.sort_by_key(|&q| (choices[q].1, q));
        let mut colors: Vec<u64> = choices.iter().map(|&(c, _)| c).collect();
        colors.sort_unstable();
        colors.dedup();
        let color_rank = colors.partition_point(|&c| c < color);
        let me = members.iter().position(|&q| q == me).unwrap_or(0);
        Group {
            color,
            color_rank,
            members,
            me,
        }
    }
}

/// Where a sub-machine sits in the run: its group, the superstep its
/// parent was in when it was formed, and the parent's own frame (`None`
/// for the whole run). Errors raised inside the sub-machine are
/// translated through the chain, so that the run's error names the
/// processor and superstep in the numbering of the whole run.
#[derive(Debug)]
pub(crate) struct Frame {
    color: u64,
    /// Sub-machine pid → parent pid.
    members: Vec<usize>,
    parent_superstep: usize,
    outer: Option<Arc<Frame>>,
}

impl Frame {
    /// The frame of a sub-machine formed as `group` while the parent (in
    /// `outer`'s frame) was at `parent_superstep`.
    pub(crate) fn nested(
        outer: Option<&Arc<Frame>>,
        group: &Group,
        parent_superstep: usize,
    ) -> Arc<Frame> {
        Arc::new(Frame {
            color: group.color,
            members: group.members.clone(),
            parent_superstep,
            outer: outer.cloned(),
        })
    }

    /// `error`, raised in this sub-machine (its pids and supersteps), as
    /// the whole run sees it: the blamed processor becomes its run-wide
    /// pid, the superstep the run's, and the message says where in which
    /// sub-machine it happened.
    pub(crate) fn translate(&self, error: Error) -> Error {
        let inner_pid = error.pid();
        let who = match inner_pid {
            Some(q) => format!("its processor {q}, "),
            None => String::new(),
        };
        let step = error
            .superstep()
            .map_or(String::new(), |s| format!("at its superstep {s}"));
        let note = format!(
            "[in the sub-machine of color {} ({} processors): {who}{step}]",
            self.color,
            self.members.len()
        );
        let pid = inner_pid.and_then(|q| self.members.get(q).copied());
        let error = error.relocated(pid, self.parent_superstep, &note);
        match &self.outer {
            Some(outer) => outer.translate(error),
            None => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn groups_order_members_by_key_then_pid() {
        let choices = [(5, 1), (2, 0), (5, 0), (5, 1), (2, 0)];
        assert_eq!(
            Group::of(&choices, 3),
            Group {
                color: 5,
                color_rank: 1,
                members: vec![2, 0, 3],
                me: 2
            }
        );
        let g = Group::of(&choices, 4);
        assert_eq!((g.color_rank, g.members, g.me), (0, vec![1, 4], 1));
    }

    #[test]
    fn errors_are_translated_through_every_level() {
        let top = Group::of(&[(0, 0), (1, 0), (1, 0), (1, 0)], 2);
        let outer = Frame::nested(None, &top, 7);
        let inner_group = Group::of(&[(9, 1), (9, 0), (3, 0)], 0);
        let inner = Frame::nested(Some(&outer), &inner_group, 2);
        let e = inner.translate(Error::at(ErrorKind::Abort, 1, 4, "boom"));
        // Inner pid 1 is the inner group's member 0, which is the outer
        // group's processor 0, the run's processor 1.
        assert_eq!((e.pid(), e.superstep()), (Some(1), Some(7)));
        assert!(e
            .message()
            .starts_with("boom [in the sub-machine of color 9"));
        assert!(e.message().contains("its processor 1, at its superstep 4"));
        assert!(e
            .message()
            .contains("color 1 (3 processors): its processor 0, at its superstep 2"));
    }
}
