//! Loops decided on the device: `while_loop` and `while_loop_unrolled`, recorded as a
//! conditional WHILE node.

#[allow(unused_imports)]
use super::*;

impl<'a> Stream<Capturing<'a>> {
    /// Records a loop run on the device: `body` is recorded once, into a WHILE node, and each
    /// launch of the graph runs it until `until` says stop, at most `max_steps` times. The
    /// counter is reset at the start of the loop; [`LoopCounter::steps`] reads how many steps
    /// ran. The body runs at least once.
    ///
    /// Each iteration of a WHILE node costs a few microseconds on the GPU (2.7–3.5 µs more
    /// than a graph launch per step, measured on an H100 with the test kernel): for short
    /// steps, [`while_loop_unrolled`](Self::while_loop_unrolled) records several steps per
    /// iteration. On the simulated device a WHILE node stops with `CUDA_ERROR_LAUNCH_TIMEOUT`
    /// at the launch after 2^22 iterations (its guard against runaway loops).
    ///
    /// # Errors
    /// [`Error::InvalidLoop`] for a bound of 0; [`Error::ContextMismatch`] for a counter,
    /// token or flag of another device; [`Error::InvalidLoop`] as well for a counter already
    /// counting a loop being recorded (this loop's enclosing one, or one on another thread),
    /// and for a body that swapped its stream for another; [`Error::NotInConditionalBody`]
    /// for a memory node in the body; the body's own errors; [`Error::Driver`] (e.g.
    /// `CUDA_ERROR_NOT_SUPPORTED` where the driver refuses what the body recorded). A body
    /// that fails, panics or swaps its stream still gets its test kernel (the loop stays
    /// bounded) and its recording is ended, but the capture is then lost:
    /// [`CaptureGuard::finish`](crate::CaptureGuard::finish) returns
    /// [`Error::CaptureInvalidated`] naming this loop, and the stream is idle and usable
    /// again once the guard is gone. A panic in the body goes on to the caller.
    #[track_caller]
    pub fn while_loop<F>(&mut self, counter: &'a LoopCounter, max_steps: u32, until: Until<'a>, body: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let mut body = Some(body);
        // One step per iteration and no remainder: the body is recorded exactly once.
        self.record_loop(site, "Stream::while_loop", counter, max_steps, 1, until, &mut |s| match body.take() {
            Some(f) => f(s),
            None => Ok(()),
        })
    }

    /// Records a loop of `per_iteration` steps per WHILE iteration: `body` is recorded
    /// `per_iteration` times into the node's body (and `max_steps % per_iteration` times
    /// more after it, under an IF when the loop can stop early), so the node's cost per
    /// iteration is shared by that many steps. With [`Until::Bound`] the body runs exactly
    /// `max_steps` times, as with [`while_loop`](Self::while_loop).
    ///
    /// **Stopping early is tested once per iteration.** With [`Until::Token`] the library
    /// raises [`LoopCounter::stop_flag`] after the step that wrote the stop token (a
    /// one-thread kernel after each step); with [`Until::Flag`] the body's own kernel
    /// raises the flag. Either way the steps left in that iteration still run: kernels
    /// whose effects must stop with the loop read the flag and return early — then every
    /// state the loop leaves is the state at its stop, as with one step per iteration.
    ///
    /// # Errors
    /// As [`while_loop`](Self::while_loop); [`Error::InvalidLoop`] for `per_iteration` of 0.
    /// A `per_iteration` above `max_steps` is taken as `max_steps`.
    #[track_caller]
    pub fn while_loop_unrolled<F>(
        &mut self,
        counter: &'a LoopCounter,
        max_steps: u32,
        per_iteration: u32,
        until: Until<'a>,
        mut body: F,
    ) -> Result<()>
    where
        F: FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        if per_iteration == 0 {
            return Err(Error::InvalidLoop {
                reason: "0 steps per iteration: give 1 (one step per WHILE iteration) or more".into(),
            });
        }
        self.record_loop(site, "Stream::while_loop_unrolled", counter, max_steps, per_iteration, until, &mut body)
    }

    /// The loop of [`while_loop`](Self::while_loop) and
    /// [`while_loop_unrolled`](Self::while_loop_unrolled).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_loop(
        &mut self,
        site: CallSite,
        op: &'static str,
        counter: &'a LoopCounter,
        max_steps: u32,
        per_iteration: u32,
        until: Until<'a>,
        body: &mut dyn FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
    ) -> Result<()> {
        Capturing::check_live(&self.ext, op)?;
        if max_steps == 0 {
            return Err(Error::InvalidLoop {
                reason: "a bound of 0 steps: the body runs at least once; give 1 or more".into(),
            });
        }
        if !counter.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "loop counter" });
        }
        match until {
            Until::Token { token, .. } if !token.ctx.same(&self.ctx.h) => {
                return Err(Error::ContextMismatch { op, what: "token buffer" })
            }
            Until::Flag { flag } if !flag.ctx.same(&self.ctx.h) => {
                return Err(Error::ContextMismatch { op, what: "stop flag" })
            }
            _ => {}
        }
        if per_iteration > MAX_PER_ITERATION {
            return Err(Error::InvalidLoop {
                reason: format!(
                    "{per_iteration} steps per iteration: the body is recorded that many times; give at most \
                     {MAX_PER_ITERATION} (past a few dozen, the node's cost per step no longer shrinks)"
                ),
            });
        }
        if counter.recording.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Err(Error::InvalidLoop {
                reason: "this counter is already counting a loop being recorded — the loop this one is nested in, \
                         or one on another thread: give each loop that can run at once a LoopCounter of its own \
                         (resetting another loop's count would keep that loop from its bound)"
                    .into(),
            });
        }
        let _recording = Recording(&counter.recording);
        let k = &counter.k;
        let per = per_iteration.min(max_steps);
        // The tests of unrolled loops and of flag loops add a step count to the bound in 32
        // bits (`s + per <= limit`): keep that sum from wrapping.
        let adds = per > 1 || matches!(until, Until::Flag { .. });
        if adds && u64::from(max_steps) + u64::from(per) > u64::from(u32::MAX) {
            return Err(Error::InvalidLoop {
                reason: format!(
                    "a bound of {max_steps} steps with {per} per iteration (or a stop flag): give at most {} \
                     (u32::MAX - steps per iteration)",
                    u32::MAX - per
                ),
            });
        }
        // The steps the WHILE node runs at most, and the rest, recorded once after it.
        let (whole, rest) = (max_steps - max_steps % per, max_steps % per);
        // The flag an early stop raises, tested after each iteration.
        let flag = match until {
            Until::Bound => None,
            Until::Token { .. } => Some(&counter.stopped),
            Until::Flag { flag } => Some(flag),
        };
        // A loop nested in another must not share its stop flag: its start would lower the
        // outer loop's raised flag, and the outer loop would miss its stop.
        let _flag_in_use = match flag {
            Some(f) => Some(FlagInUse::take(&self.ext, f.ptr)?),
            None => None,
        };
        // One step, then (stopping on a token, several steps per iteration) the library's
        // flag raised if the step wrote the stop token.
        let mut one_step = |s: &mut Stream<Capturing<'a>>| -> Result<()> {
            body(s)?;
            match until {
                Until::Token { token, stop } if per > 1 => {
                    s.launch(&k.stop_on_token, ONE, (token, stop, &counter.stopped))
                }
                _ => Ok(()),
            }
        };
        // The loop's start sets the condition to 1 (and zeroes the counter, lowers the flag)
        // every time the graph reaches it: the body runs once before the first test, and a
        // loop nested in another's body runs again in each of its iterations.
        let handle = self.new_cond_handle(op, site)?;
        match flag {
            Some(f) => self.launch(&k.start_flag, ONE, (&counter.step, f, handle))?,
            None => self.launch(&k.start, ONE, (&counter.step, handle))?,
        }
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::While, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(self.broken(
                op,
                site,
                Error::InvalidLoop { reason: "the driver gave the loop no body graph".into() },
            ));
        };
        self.record_body(
            op,
            site,
            graph,
            |inner| (0..per).try_for_each(|_| one_step(inner)),
            |inner| match (until, flag) {
                (Until::Token { token, stop }, Some(f)) if per == 1 => {
                    inner.launch(&k.until_token, ONE, (token, stop, f, &counter.step, whole, handle))
                }
                (_, Some(f)) => inner.launch(&k.steps_until, ONE, (f, &counter.step, per, whole, handle)),
                (_, None) if per == 1 => inner.launch(&k.step_below, ONE, (&counter.step, whole, handle)),
                (_, None) => inner.launch(&k.steps, ONE, (&counter.step, per, whole, handle)),
            },
        )?;
        if rest == 0 {
            return Ok(());
        }
        // The remainder: after a loop that cannot stop early, plainly; else under an IF
        // that runs only if nothing raised the flag.
        let mut tail = |s: &mut Stream<Capturing<'a>>| -> Result<()> {
            (0..rest).try_for_each(|_| one_step(s))?;
            s.launch(&k.add, ONE, (&counter.step, rest))
        };
        // A failure here leaves the loop short of its steps: the capture is lost too.
        let Some(f) = flag else {
            return tail(self).map_err(|e| self.broken(op, site, e));
        };
        let made = self.new_cond_handle(op, site).and_then(|handle| {
            self.launch(&k.from_zero_flag, ONE, (f, handle))?;
            self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, 1))
        });
        let graph = match made.map(|graphs| graphs.first().copied()) {
            Ok(Some(graph)) => graph,
            Ok(None) => {
                let e = Error::InvalidLoop { reason: "the driver gave the loop's remainder no body graph".into() };
                return Err(self.broken(op, site, e));
            }
            Err(e) => return Err(self.broken(op, site, e)),
        };
        self.record_body(op, site, graph, tail, |_| Ok(()))
    }

    /// Joins into `side` every fork made since the book held `since` forks that was not
    /// joined back; `Err(UnjoinedFork)` naming the first, if any.
    pub(super) fn join_forks_since(&self, since: usize, side: crate::device::RawStream) -> Result<()> {
        let unjoined: Vec<(CallSite, crate::device::RawStream)> =
            self.ext.borrow().forks.iter().skip(since).filter(|f| !f.2).map(|f| (f.0, f.1)).collect();
        let Some(&(first, _)) = unjoined.first() else {
            return Ok(());
        };
        let b = self.ctx.b();
        for (_, fork) in unjoined {
            let ev = crate::event::Event::new(&self.ctx)?;
            let joined = b.event_record(ev.raw, fork).and_then(|()| b.stream_wait_event(side, ev.raw));
            let mut book = self.ext.borrow_mut();
            book.events.push(ev);
            if let Some(f) = book.forks.iter_mut().find(|f| f.1 == fork && !f.2) {
                f.2 = joined.is_ok();
            }
            if let Err(code) = joined {
                log::error!("capture-core: joining a fork left open in a loop or branch body failed: {code}");
            }
        }
        Err(Error::UnjoinedFork { fork_site: first })
    }

    /// Marks the capture as holding a conditional node whose body failed to record (so
    /// `finish` refuses it: a WHILE body without its test would never end), and returns `e`.
    pub(super) fn broken(&self, op: &'static str, site: CallSite, e: Error) -> Error {
        self.mark_broken(op, site);
        e
    }

    /// Marks the capture lost by a failed body of the loop or branch `op` at `site`.
    pub(super) fn mark_broken(&self, op: &'static str, site: CallSite) {
        let mut book = self.ext.borrow_mut();
        book.broken = true;
        if book.invalidated_by.is_none() {
            book.invalidated_by = Some(crate::error::OpSite { op, site });
        }
    }
}
