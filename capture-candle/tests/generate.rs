//! The generate loop on a GPU (issue #21 part 3, and the bad-input lists of #21 and #22):
//! batch buckets with padded rows that stay inert, buckets replayed alternately, requests out
//! of length order (also eagerly, on the CPU), a sequence that reaches the end of its cache
//! (also eagerly), and requests refused before any work.

mod common;

use std::sync::Arc;

use candle_core::DType;
use capture_candle::decode::SamplingParams;
use capture_candle::generate::{Generation, Generator, Request, StopReason};
use capture_candle::model::{Config, Family, Model};
use capture_candle::{CandleStream, Error};
use common::gpu;

fn request(i: u32, max_new: usize, sampling: SamplingParams) -> Request {
    Request {
        prompt: (0..3 + i).map(|t| (t * 7 + i * 13) % 97).collect(),
        sampling,
        seed: 40 + i as u64,
        max_new_tokens: max_new,
    }
}

fn generator(max_seq: usize) -> Option<(CandleStream, Generator)> {
    let dev = gpu()?;
    let model = Model::random(&Config::tiny(Family::Qwen2), DType::F32, max_seq, &dev, 3).unwrap();
    let mut cs = CandleStream::new(&dev).unwrap();
    let gen = Generator::new(&mut cs, Arc::new(model), &[1, 2, 4, 8]).unwrap().with_stop_tokens(Vec::new());
    Some((cs, gen))
}

/// A model made on another candle device than the stream's (each `new_cuda_with_stream`
/// call is a new device, with its own stream) decodes on a stream the capture does not
/// record. `Generator::new` refuses it, naming the fix, before any work.
#[test]
#[ignore = "needs a CUDA device"]
fn a_model_on_another_candle_device_is_refused() {
    let Some(dev) = gpu() else { return };
    let other = candle_core::Device::new_cuda_with_stream(0).unwrap();
    let model = Model::random(&Config::tiny(Family::Qwen2), DType::F32, 32, &other, 3).unwrap();
    let mut cs = CandleStream::new(&dev).unwrap();
    match Generator::new(&mut cs, Arc::new(model), &[1, 2]) {
        Err(Error::OtherDevice { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn padded_rows_are_inert_and_buckets_alternate_safely() {
    let Some((mut cs, mut gen)) = generator(128) else { return };
    for sampling in [SamplingParams::GREEDY, SamplingParams::new(1.0, 20, 0.9).unwrap()] {
        let alone: Vec<Generation> =
            (0..3).map(|i| gen.generate(&mut cs, &[request(i, 24, sampling)], |_| {}).unwrap().remove(0)).collect();
        // Three sequences in the bucket of 4: row 3 is padding, made inactive even where a
        // sequence was left there.
        gen.decoder().state.set_row(3, 5, true).unwrap();
        let together =
            gen.generate(&mut cs, &(0..3).map(|i| request(i, 24, sampling)).collect::<Vec<_>>(), |_| {}).unwrap();
        assert_eq!(together, alone, "a row decodes the same alone and in a padded batch ({sampling:?})");
        // And the same as eager decode with the same layers, no graph.
        let model = gen.decoder().model.clone();
        for (i, want) in alone.iter().enumerate() {
            let r = request(i as u32, 24, sampling);
            let st = model.new_state(1).unwrap();
            st.sampler().set(0, &r.sampling, r.seed).unwrap();
            model.prefill(&st, 0, &r.prompt).unwrap();
            let mut eager = vec![st.read_tokens().unwrap()[0]];
            while eager.len() < 24 {
                model.step(&st).unwrap();
                eager.push(st.read_tokens().unwrap()[0]);
            }
            assert_eq!(eager, want.tokens, "request {i}: replayed buckets give eager's tokens ({sampling:?})");
        }
        // The requests in reverse order (longest prompt first) take the rows shortest first;
        // the results come back in the requests' order.
        let reversed: Vec<Request> = (0..3).rev().map(|i| request(i, 24, sampling)).collect();
        let mut back = gen.generate(&mut cs, &reversed, |_| {}).unwrap();
        back.reverse();
        assert_eq!(back, alone, "requests given longest first ({sampling:?})");
        let state = &gen.decoder().state;
        // Placed by length: request i (prompt 3 + i, seed 40 + i) in row i, whatever the order
        // given. Column 0 of a row's generator state is its seed's low word.
        let seeds: Vec<u32> = state.sampler_state().to_vec2::<u32>().unwrap().iter().map(|r| r[0]).collect();
        assert_eq!(seeds[..3], [40, 41, 42], "rows by prompt length");
        assert_eq!(state.read_pos().unwrap()[3], 0, "the padded row never moved");
        // Buckets 1, 4, 2, 1 one after another: each gives the same as before.
        for n in [1u32, 3, 2, 1] {
            let out =
                gen.generate(&mut cs, &(0..n).map(|i| request(i, 24, sampling)).collect::<Vec<_>>(), |_| {}).unwrap();
            assert_eq!(out, alone[..n as usize], "bucket for {n}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_sequence_that_fills_its_cache_stops_with_a_typed_reason() {
    let Some((mut cs, mut gen)) = generator(16) else { return };
    let mut r = request(0, 100, SamplingParams::GREEDY);
    r.prompt = vec![5; 10];
    let out = gen.generate(&mut cs, &[r, request(1, 3, SamplingParams::GREEDY)], |_| {}).unwrap();
    // The prefill draws the token for position 10; steps write positions 10..=15; the step
    // at 16 overflows and its token is discarded.
    assert_eq!(out[0].stop, StopReason::CacheFull);
    assert_eq!(out[0].tokens.len(), 7);
    assert_eq!((out[1].stop, out[1].tokens.len()), (StopReason::Limit, 3));
}

/// The eager loop (the CPU here) stops a sequence at its cache's end with the same reason and
/// the same count as the graphs above. The flags are read only near the end (`run`): a prompt
/// that fills the cache overflows at the first step, one a token shorter at the second, and a
/// sequence that stops by its limit just before the end never reads a set flag. The first two
/// requests (prompts of 10 and 4) take the rows in reverse (by length), so a flag or a
/// position read from the request's index instead of its row would stop the wrong one.
#[test]
fn the_eager_loop_stops_at_the_cache_end_however_near_it_starts() {
    use capture_candle::generate::generate_eager;
    let dev = candle_core::Device::Cpu;
    let model = Model::random(&Config::tiny(Family::Qwen2), DType::F32, 16, &dev, 3).unwrap();
    let mut r = request(0, 100, SamplingParams::GREEDY);
    r.prompt = vec![5; 10];
    let out = generate_eager(&model, &[], &[r.clone(), request(1, 3, SamplingParams::GREEDY)], |_| {}).unwrap();
    assert_eq!((out[0].stop, out[0].tokens.len()), (StopReason::CacheFull, 7));
    assert_eq!((out[1].stop, out[1].tokens.len()), (StopReason::Limit, 3));
    for (len, tokens) in [(16, 1), (15, 2)] {
        r.prompt = vec![5; len];
        let out = generate_eager(&model, &[], &[r.clone()], |_| {}).unwrap();
        assert_eq!((out[0].stop, out[0].tokens.len()), (StopReason::CacheFull, tokens), "prompt of {len}");
    }
    // 10 + 6 tokens: the last one drawn by the step at position 15, inside the cache.
    r.prompt = vec![5; 10];
    r.max_new_tokens = 7;
    let out = generate_eager(&model, &[], &[r], |_| {}).unwrap();
    assert_eq!((out[0].stop, out[0].tokens.len()), (StopReason::Limit, 7));
}

/// Requests whose prompts are not in order of length (the loop places them by length, `run`)
/// give, each, what it gives alone, in the order given: their results, their stop reasons, and
/// the tokens the callback hands out for each request step by step. On the CPU, eagerly.
#[test]
fn requests_out_of_length_order_each_get_their_own_results() {
    use capture_candle::generate::generate_eager;
    let dev = candle_core::Device::Cpu;
    let model = Model::random(&Config::tiny(Family::Qwen2), DType::F32, 64, &dev, 3).unwrap();
    let topk = SamplingParams::new(0.8, 20, 0.9).unwrap();
    let mut reqs: Vec<Request> =
        [(6, 9, SamplingParams::GREEDY), (0, 5, topk), (9, 12, topk), (1, 7, SamplingParams::GREEDY)]
            .into_iter()
            .map(|(i, n, s)| request(i, n, s))
            .collect();
    // Two prompts of one length, apart.
    reqs.push(Request { seed: 77, ..request(6, 4, topk) });
    let alone: Vec<Generation> =
        reqs.iter().map(|r| generate_eager(&model, &[], std::slice::from_ref(r), |_| {}).unwrap().remove(0)).collect();
    // A stop token that one of them draws, for every request.
    let stop = alone[2].tokens[3];
    let mut seen: Vec<Vec<u32>> = vec![Vec::new(); reqs.len()];
    let mut last_done = vec![false; reqs.len()];
    let together = generate_eager(&model, &[stop], &reqs, |t| {
        for (i, tok) in t.tokens.iter().enumerate() {
            seen[i].extend(tok);
            assert!(!last_done[i] || tok.is_none(), "request {i} got a token after it stopped");
        }
        last_done.copy_from_slice(t.done);
    })
    .unwrap();
    assert!(last_done.iter().all(|d| *d));
    for (i, (got, want)) in together.iter().zip(&alone).enumerate() {
        let cut = want.tokens.iter().position(|&t| t == stop);
        match cut {
            Some(at) => {
                assert_eq!(got.tokens, want.tokens[..=at], "request {i}");
                assert_eq!(got.stop, StopReason::StopToken(stop), "request {i}");
            }
            None => assert_eq!(got, want, "request {i}"),
        }
        assert_eq!(seen[i], got.tokens, "request {i}: the callback's tokens");
    }
    assert!(together.iter().any(|g| g.stop == StopReason::Limit), "a request ends by its limit too");
}

#[test]
#[ignore = "needs a CUDA device"]
fn bad_requests_are_refused_before_any_work() {
    let Some((mut cs, mut gen)) = generator(16) else { return };
    let many: Vec<Request> = (0..9).map(|i| request(i, 4, SamplingParams::GREEDY)).collect();
    assert!(matches!(gen.generate(&mut cs, &many, |_| {}), Err(Error::BatchTooLarge { size: 9, largest: 8 })));
    let mut long = request(0, 4, SamplingParams::GREEDY);
    long.prompt = vec![1; 17];
    assert!(matches!(gen.generate(&mut cs, &[long], |_| {}), Err(Error::PromptTooLong { len: 17, max_seq: 16 })));
    let mut bad = request(0, 4, SamplingParams::GREEDY);
    bad.sampling.temperature = f32::NAN;
    assert!(matches!(gen.generate(&mut cs, &[bad], |_| {}), Err(Error::InvalidArgument { .. })));
    assert!(matches!(gen.generate(&mut cs, &[], |_| {}), Err(Error::InvalidArgument { .. })));
    // And the generator still works.
    let ok = gen.generate(&mut cs, &[request(0, 4, SamplingParams::GREEDY)], |_| {}).unwrap();
    assert_eq!(ok[0].tokens.len(), 4);
}
