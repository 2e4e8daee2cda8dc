//! The capture watchdog: an optional deadline per capture. One background thread (started
//! on first use) sleeps until the nearest deadline; a capture still open then is reported —
//! a log warning naming the capture, how long it has been open, and the last operation it
//! recorded — even if the capturing thread is stuck inside a driver call.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use crate::error::{CallSite, OpSite};

/// What the watchdog knows of one capture; shared with the capturing thread.
#[derive(Default)]
pub(crate) struct Watch {
    pub(crate) last_op: Mutex<Option<OpSite>>,
    pub(crate) fired_after: Mutex<Option<Duration>>,
}

impl Watch {
    pub(crate) fn note(&self, op: OpSite) {
        *self.last_op.lock().unwrap_or_else(|p| p.into_inner()) = Some(op);
    }
    pub(crate) fn last_op(&self) -> Option<OpSite> {
        self.last_op.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    pub(crate) fn fired_after(&self) -> Option<Duration> {
        *self.fired_after.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Entry {
    capture: u64,
    began_at: CallSite,
    started: Instant,
    deadline: Instant,
    watch: Arc<Watch>,
}

static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static WAKE: Condvar = Condvar::new();
static START: Once = Once::new();

fn lock() -> MutexGuard<'static, Vec<Entry>> {
    ENTRIES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Watches a capture; returns the handle its streams update.
pub(crate) fn watch(capture: u64, began_at: CallSite, deadline: Duration) -> Arc<Watch> {
    START.call_once(|| {
        let spawned = std::thread::Builder::new().name("capture-watchdog".into()).spawn(run);
        if let Err(e) = spawned {
            log::error!("capture-core: the capture watchdog thread could not start: {e}");
        }
    });
    let watch = Arc::new(Watch::default());
    let started = Instant::now();
    lock().push(Entry { capture, began_at, started, deadline: started + deadline, watch: watch.clone() });
    WAKE.notify_one();
    watch
}

/// Stops watching (the capture ended).
pub(crate) fn unwatch(watch: &Arc<Watch>) {
    lock().retain(|e| !Arc::ptr_eq(&e.watch, watch));
}

fn run() {
    let mut entries = lock();
    loop {
        let now = Instant::now();
        let mut fired = Vec::new();
        entries.retain(|e| {
            if e.deadline <= now {
                fired.push((e.capture, e.began_at, now - e.started, e.watch.clone()));
                false
            } else {
                true
            }
        });
        for (capture, began_at, open_for, watch) in fired {
            *watch.fired_after.lock().unwrap_or_else(|p| p.into_inner()) = Some(open_for);
            match watch.last_op() {
                Some(op) => log::warn!(
                    "capture-core watchdog: capture #{capture} (begun at {began_at}) has been open for {open_for:.2?}, past its deadline; the last operation it recorded was {op}"
                ),
                None => log::warn!(
                    "capture-core watchdog: capture #{capture} (begun at {began_at}) has been open for {open_for:.2?}, past its deadline, and has recorded nothing"
                ),
            }
        }
        entries = match entries.iter().map(|e| e.deadline).min() {
            None => WAKE.wait(entries).unwrap_or_else(|p| p.into_inner()),
            Some(d) => {
                let wait = d.saturating_duration_since(Instant::now());
                WAKE.wait_timeout(entries, wait).unwrap_or_else(|p| p.into_inner()).0
            }
        };
    }
}
