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
    /// [`Error::OtherDevice`] for a model on another candle device than `cs`'s, before
    /// anything is allocated; [`Model::new_state`]'s for the largest bucket; as
    /// [`CandleStream::capture_family`].
    pub fn new(cs: &mut CandleStream, model: Arc<Model>, buckets: &[usize]) -> Result<Self> {
        cs.check_devices(&*model)?;
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

    /// Generates for each request: prefills every prompt eagerly (all in the same launches:
    /// [`Model::prefill_rows`]), then replays the graph of the smallest bucket that holds them
    /// all (rows past the requests are inert) until every sequence has stopped. `progress` is
    /// called after every step.
    ///
    /// To see each new token as it is drawn (to print text as it is made, say), use
    /// [`generate_stream`](Self::generate_stream), which this calls.
    ///
    /// # Errors
    /// [`Error::BatchTooLarge`] above the largest bucket; [`Error::PromptTooLong`] for a prompt
    /// longer than the cache; [`Error::InvalidArgument`] for bad sampling parameters, an empty
    /// prompt, a token id outside the vocabulary or a zero token limit — all before any work.
    pub fn generate(
        &mut self,
        cs: &mut CandleStream,
        requests: &[Request],
        mut progress: impl FnMut(&Progress),
    ) -> Result<Vec<Generation>> {
        self.generate_stream(cs, requests, |t| {
            if t.progress.steps > 0 {
                progress(&t.progress)
            }
        })
    }

    /// As [`generate`](Self::generate), and `on_tokens` is given each request's new token:
    /// once after the prefill (the first token of every sequence, with `progress.steps == 0`),
    /// then after every replayed step. Feed them to a
    /// [`TextStream`](crate::text::TextStream) to print text as it is made.
    ///
    /// # Errors
    /// As [`generate`](Self::generate).
    pub fn generate_stream(
        &mut self,
        cs: &mut CandleStream,
        requests: &[Request],
        on_tokens: impl FnMut(&NewTokens<'_>),
    ) -> Result<Vec<Generation>> {
        let bucket = self.family.select(requests.len())?;
        let d = self.family.resources().clone();
        check(&d.model, requests)?;
        let state = d.state.rows(0, bucket)?;
        let family = &self.family;
        run(&d.model, &state, &self.stop_tokens, requests, || family.launch(cs, bucket).map(|_| ()), on_tokens)
    }
}

/// The new tokens of one step of [`Generator::generate_stream`] or [`generate_eager`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct NewTokens<'a> {
    /// Progress so far (`steps` is 0 for the tokens the prefill drew).
    pub progress: Progress,
    /// For each request, in order, the token it drew at this step, or `None` where it had
    /// already stopped or stopped now without a token ([`StopReason::CacheFull`]). A stop
    /// token is given too (it ends its sequence, which then gets `None`).
    pub tokens: &'a [Option<u32>],
    /// For each request, whether it has stopped (at this step or before).
    pub done: &'a [bool],
}

/// Generates for each request without graphs: the same layers, prefill and stop rules as
/// [`Generator`], each step run eagerly with [`Model::step`] on whatever device the model is
/// on (the CPU included). Slower than graph replay on a GPU, but it needs no CUDA: the text
/// tests and the `generate` example use it on the CPU. `stop_tokens` end a sequence (pass
/// the model's, e.g. [`TextIo::stop_tokens`](crate::text::TextIo::stop_tokens) or the
/// config's `eos_token_ids`). `on_tokens` is called as in [`Generator::generate_stream`].
///
/// # Errors
/// As [`Generator::generate`] (with no batch limit), and candle's errors.
pub fn generate_eager(
    model: &Model,
    stop_tokens: &[u32],
    requests: &[Request],
    on_tokens: impl FnMut(&NewTokens<'_>),
) -> Result<Vec<Generation>> {
    if requests.is_empty() {
        return Err(Error::invalid("batch rows", 0, "at least 1"));
    }
    check(model, requests)?;
    let state = model.new_state(requests.len())?;
    run(model, &state, stop_tokens, requests, || model.step(&state), on_tokens)
}

/// The requests' checks, before any work.
fn check(model: &Model, requests: &[Request]) -> Result<()> {
    let max_seq = model.max_seq();
    let vocab = model.config().vocab_size;
    for r in requests {
        r.sampling.validate()?;
        if r.prompt.len() > max_seq {
            return Err(Error::PromptTooLong { len: r.prompt.len(), max_seq });
        }
        if r.prompt.is_empty() {
            return Err(Error::invalid("prompt length", 0, "at least 1 token"));
        }
        if let Some(&t) = r.prompt.iter().find(|&&t| t as usize >= vocab) {
            return Err(Error::invalid("token id", t, format!("below the vocabulary size {vocab}")));
        }
        if r.max_new_tokens == 0 {
            return Err(Error::invalid("max_new_tokens", 0, "at least 1"));
        }
    }
    Ok(())
}

/// Prefills every request into a row of `state` (together: [`Model::prefill_rows`]), then
/// calls `advance` (one decode step of every row: a graph replay or an eager step) until every
/// sequence has stopped.
///
/// The requests take the rows in order of prompt length (the shortest in row 0; equal lengths
/// in the requests' order). The prefill's rounds take a contiguous span of rows, and rows in
/// it that have no tokens left sit the round out at full cost; in this order the rows with
/// tokens left are always the last ones, so no round computes a finished row. A row's seed
/// and counter do not depend on its place; its prefill's rounds depend on the other prompts
/// (as they did before), so in bf16 or f16 its logits can differ from the same request's
/// alone in the last bits. Results and callbacks are in the requests' order.
///
/// After each step the host reads the rows' tokens, and their overflow flags only where a flag
/// can have been set: a step sets a row's flag when the row's position is at or past the
/// cache's end, and an active row's position grows by one a step from where the prefill left
/// it. Until some active row can reach the end, a step costs one read from the device, not two.
fn run(
    model: &Model,
    state: &DecodeState,
    stop_tokens: &[u32],
    requests: &[Request],
    mut advance: impl FnMut() -> Result<()>,
    mut on_tokens: impl FnMut(&NewTokens<'_>),
) -> Result<Vec<Generation>> {
    // `order[row]`: the request in `row`.
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| requests[i].prompt.len());
    // The rows past the requests (a bucket's padding) inactive, at position 0.
    let pad = state.batch().saturating_sub(requests.len());
    if pad > 0 {
        state.rows(requests.len(), pad)?.set_rows(&vec![0; pad], &vec![false; pad])?;
    }
    for (row, &i) in order.iter().enumerate() {
        state.sampler().set(row, &requests[i].sampling, requests[i].seed)?;
    }
    // Every prompt in the same launches.
    let prompts: Vec<&[u32]> = order.iter().map(|&i| requests[i].prompt.as_slice()).collect();
    model.prefill_rows(state, &prompts)?;
    // By request, as given.
    let mut out: Vec<Generation> =
        requests.iter().map(|_| Generation { tokens: Vec::new(), stop: StopReason::Limit }).collect();
    let mut done = vec![false; requests.len()];
    let mut new = vec![None; requests.len()];
    // Each row's position after its prefill (one read), and the cache's end.
    let start = state.read_pos()?;
    let end = state.max_seq();
    let mut started = Instant::now();
    let mut steps = 0usize;
    loop {
        let toks = state.read_tokens()?;
        // The last step ran at `start + steps - 1` in every active row: a flag can be set only
        // where that reached the end (read at `start + steps >= end`, a step early). The
        // prefill's own step ran below the end (a prompt fits the cache), so it set none.
        let may_overflow = order.iter().enumerate().any(|(row, &i)| !done[i] && start[row] as usize + steps >= end);
        let over = if may_overflow { state.read_overflow()? } else { vec![false; state.batch()] };
        for (row, &i) in order.iter().enumerate() {
            new[i] = None;
            if !done[i] {
                let seq = Sequence { row, request: &requests[i], out: &mut out[i], done: &mut done[i] };
                new[i] = seq.accept(stop_tokens, toks[row], over[row], state)?;
            }
        }
        on_tokens(&NewTokens {
            progress: Progress {
                steps,
                tokens: out.iter().map(|g| g.tokens.len()).sum(),
                active: done.iter().filter(|d| !**d).count(),
                elapsed: started.elapsed(),
            },
            tokens: &new,
            done: &done,
        });
        if done.iter().all(|d| *d) {
            return Ok(out);
        }
        if steps == 0 {
            // Decoding (after the prefill) begins.
            started = Instant::now();
        }
        advance()?;
        steps += 1;
    }
}

/// One request's sequence, decoding in row `row`.
struct Sequence<'a> {
    row: usize,
    request: &'a Request,
    out: &'a mut Generation,
    done: &'a mut bool,
}

impl Sequence<'_> {
    /// Takes the row's token into the generation, and stops the row (inactive from then on)
    /// where the token ends it. Returns the token kept, if any.
    fn accept(self, stop_tokens: &[u32], token: u32, overflow: bool, state: &DecodeState) -> Result<Option<u32>> {
        let g = self.out;
        let kept = if overflow {
            g.stop = StopReason::CacheFull;
            None
        } else {
            g.tokens.push(token);
            if stop_tokens.contains(&token) {
                g.stop = StopReason::StopToken(token);
            } else if g.tokens.len() >= self.request.max_new_tokens {
                g.stop = StopReason::Limit;
            } else {
                return Ok(Some(token));
            }
            Some(token)
        };
        *self.done = true;
        let pos = state.read_pos()?[self.row];
        state.set_row(self.row, pos, false)?;
        Ok(kept)
    }
}
