//! Time on a processor (BSPlib's `bsp_time`), and names for supersteps.

use std::borrow::Cow;

use super::Ctx;

impl Ctx {
    /// Seconds since this processor started the run (BSPlib's `bsp_time`,
    /// MPI's `MPI_Wtime` from the start of the run), from a monotonic
    /// clock. Each processor has its own clock; compare times across
    /// processors only after a sync, or through a collective such as
    /// `bsp::algos::all_reduce` with `Max`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let start = ctx.time();
    ///     ctx.sync();
    ///     ctx.time() - start
    /// })?;
    /// assert!(out.iter().all(|&dt| dt >= 0.0));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, one read of the clock.
    pub fn time(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Names the current superstep: the profile (`BSP_PROFILE=1` or
    /// `trace`) and [`Stats`](crate::Stats) show the name beside its
    /// figures. A later label in the same superstep replaces an earlier one;
    /// processor 0's labels are the ones the profile prints.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     ctx.label("exchange");
    ///     ctx.sync();
    ///     ctx.label("compute");
    ///     ctx.sync(); // superstep 0's figures are complete after the next sync
    ///     ctx.stats()
    /// })?;
    /// let names: Vec<_> = out.get(0).unwrap().supersteps.iter().map(|s| s.label.clone()).collect();
    /// assert_eq!(names, [Some("exchange".to_string())]); // the first superstep is complete
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local: stores the name (no copy for a `&'static str`).
    pub fn label(&mut self, name: impl Into<Cow<'static, str>>) {
        self.stats.label(self.superstep, name.into());
    }
}
