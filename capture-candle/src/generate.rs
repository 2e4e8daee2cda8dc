//! Generation, end to end: prompts prefilled eagerly, then decoded by graph replay in batch
//! buckets until each sequence stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::decode::SamplingParams;
use crate::error::{Error, Result};
use crate::graph::CandleFamily;
use crate::model::{DecodeState, Model};
use crate::stream::CandleStream;

/// Why a sequence stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// It drew one of the stop tokens (kept as its last token).
    StopToken(u32),
    /// It reached the token limit.
    Limit,
    /// Its position reached the end of the KV cache: nothing was written past it, and the
    /// token of the step that overflowed was discarded.
    CacheFull,
}

/// One sequence's request.
#[derive(Clone, Debug)]
pub struct Request {
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// How to draw.
    pub sampling: SamplingParams,
    /// The generator's seed.
    pub seed: u64,
    /// At most this many new tokens (the prefill's token counts).
    pub max_new_tokens: usize,
}

/// One sequence's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    /// The new tokens.
    pub tokens: Vec<u32>,
    /// Why it stopped.
    pub stop: StopReason,
}

/// Progress after each step of a [`Generator::generate`] call.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Progress {
    /// Steps replayed so far.
    pub steps: usize,
    /// New tokens so far, all sequences.
    pub tokens: usize,
    /// Sequences still decoding.
    pub active: usize,
    /// Time since decoding (after the prefill) began.
    pub elapsed: Duration,
}

/// The resources of the decode graphs: the model and the full-batch state.
#[derive(crate::Resources)]
pub struct Decoder {
    /// The model.
    pub model: Arc<Model>,
    /// The state of the largest bucket; bucket `b` uses its rows `0..b`.
    pub state: DecodeState,
}

/// A model with one decode graph per batch bucket, which own it.
pub struct Generator {
    family: CandleFamily<Decoder>,
    stop_tokens: Vec<u32>,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").field("buckets", &self.family.buckets()).finish()
    }
}

impl Generator {
    /// The buckets of batch sizes captured by default.
    pub const BUCKETS: [usize; 6] = [1, 2, 4, 8, 16, 32];

    /// Captures `model`'s decode step for each of `buckets` on candle's stream `cs`. Stop
    /// tokens default to the config's `eos_token_id`.
    ///
    /// # Errors
    /// As [`CandleStream::capture_family`].
    pub fn new(cs: &mut CandleStream, model: Arc<Model>, buckets: &[usize]) -> Result<Self> {
        let largest = buckets.iter().copied().max().unwrap_or(0);
        let state = model.new_state(largest.max(1))?;
        let stop_tokens = model.config().eos_token_ids.clone();
        let dec = Arc::new(Decoder { model, state });
        let family = cs.capture_family(buckets, dec, |d: &Decoder, bucket| d.model.step(&d.state.rows(0, bucket)?))?;
        // The warm-ups and replays advanced rows: start clean.
        let d = family.resources();
        for row in 0..d.state.batch() {
            d.state.set_row(row, 0, false)?;
        }
        Ok(Self { family, stop_tokens })
    }

    /// Replaces the stop tokens.
    pub fn with_stop_tokens(mut self, tokens: Vec<u32>) -> Self {
        self.stop_tokens = tokens;
        self
    }

    /// The graphs.
    pub fn family(&self) -> &CandleFamily<Decoder> {
        &self.family
    }

    /// The model and state.
    pub fn decoder(&self) -> &Decoder {
        self.family.resources()
    }

    /// Generates for each request: prefills every prompt eagerly, then replays the graph of
    /// the smallest bucket that holds them all (rows past the requests are inert) until every
    /// sequence has stopped. `progress` is called after every step.
    ///
    /// # Errors
    /// [`Error::BatchTooLarge`] above the largest bucket; [`Error::PromptTooLong`] for a prompt
    /// longer than the cache; [`Error::InvalidArgument`] for bad sampling parameters, an empty
    /// prompt or a zero token limit — all before any work.
    pub fn generate(
        &mut self,
        cs: &mut CandleStream,
        requests: &[Request],
        mut progress: impl FnMut(&Progress),
    ) -> Result<Vec<Generation>> {
        let bucket = self.family.select(requests.len())?;
        let d = self.family.resources().clone();
        let max_seq = d.model.max_seq();
        for r in requests {
            r.sampling.validate()?;
            if r.prompt.len() > max_seq {
                return Err(Error::PromptTooLong { len: r.prompt.len(), max_seq });
            }
            if r.prompt.is_empty() {
                return Err(Error::invalid("prompt length", 0, "at least 1 token"));
            }
            if r.max_new_tokens == 0 {
                return Err(Error::invalid("max_new_tokens", 0, "at least 1"));
            }
        }
        let state = d.state.rows(0, bucket)?;
        for row in 0..bucket {
            state.set_row(row, 0, false)?;
        }
        for (row, r) in requests.iter().enumerate() {
            state.sampler().set(row, &r.sampling, r.seed)?;
            d.model.prefill(&state, row, &r.prompt)?;
        }
        let mut out: Vec<Generation> =
            requests.iter().map(|_| Generation { tokens: Vec::new(), stop: StopReason::Limit }).collect();
        let mut done = vec![false; requests.len()];
        let first = state.read_tokens()?;
        let over = state.read_overflow()?;
        for (row, r) in requests.iter().enumerate() {
            self.accept(row, first[row], over[row], r, &mut out, &mut done, &state)?;
        }
        let started = Instant::now();
        let mut steps = 0;
        while done.iter().any(|d| !d) {
            self.family.launch(cs, bucket)?;
            steps += 1;
            let toks = state.read_tokens()?;
            let over = state.read_overflow()?;
            for (row, r) in requests.iter().enumerate() {
                if !done[row] {
                    self.accept(row, toks[row], over[row], r, &mut out, &mut done, &state)?;
                }
            }
            progress(&Progress {
                steps,
                tokens: out.iter().map(|g| g.tokens.len()).sum(),
                active: done.iter().filter(|d| !**d).count(),
                elapsed: started.elapsed(),
            });
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn accept(
        &self,
        row: usize,
        token: u32,
        overflow: bool,
        r: &Request,
        out: &mut [Generation],
        done: &mut [bool],
        state: &DecodeState,
    ) -> Result<()> {
        let g = &mut out[row];
        if overflow {
            g.stop = StopReason::CacheFull;
        } else {
            g.tokens.push(token);
            if self.stop_tokens.contains(&token) {
                g.stop = StopReason::StopToken(token);
            } else if g.tokens.len() >= r.max_new_tokens {
                g.stop = StopReason::Limit;
            } else {
                return Ok(());
            }
        }
        done[row] = true;
        let pos = state.read_pos()?[row];
        state.set_row(row, pos, false)
    }
}
