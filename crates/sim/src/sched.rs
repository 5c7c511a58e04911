//! The engine's scheduler: vLLM V1's paged KV cache and FCFS scheduling with recompute
//! preemption, stepped by the engine's clock.
//!
//! One step computes, for each scheduled request, the tokens it has that are not yet in the KV
//! cache (the whole prompt — chunked by the token budget — on admission or after a preemption,
//! else the one token sampled last step) and samples one new token when the request is fully
//! computed. A request holds ceil(computed tokens / block size) blocks. One block of the pool is
//! vLLM's null block, so `usable` blocks = num_gpu_blocks − 1 and the usage gauge is
//! used / usable. When a running request needs a block and none is free, the newest running
//! request is preempted: its blocks are freed, its computed tokens reset, it goes back to the
//! head of the waiting queue and the preemption counter moves. vLLM logs nothing when that
//! happens; neither does this.

use std::collections::{HashMap, VecDeque};

/// Why a request finished (the `finished_reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Finish {
    Stop,
    Length,
    Abort,
}

impl Finish {
    pub fn label(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Abort => "abort",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct SchedConfig {
    /// num_gpu_blocks − 1 (the null block is never handed out).
    pub usable_blocks: u32,
    pub block_size: u32,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
}

#[derive(Clone, Debug)]
pub struct NewRequest {
    pub id: u64,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    /// End-of-sequence after this many tokens (None: only `max_tokens` ends the request).
    pub eos_after: Option<u32>,
    /// Leading prompt tokens the prefix cache holds: computed already at first admission.
    pub cached: u32,
}

/// A finished request and the engine-side timestamps of its life (monotonic seconds).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finished {
    pub id: u64,
    pub reason: Finish,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub num_preemptions: u32,
    pub queued_ts: f64,
    /// None when the request never ran (aborted while waiting).
    pub scheduled_ts: Option<f64>,
    pub first_token_ts: Option<f64>,
    pub last_token_ts: Option<f64>,
}

/// What one or more steps produced, accumulated until the engine sends it.
#[derive(Debug, Default)]
pub struct Outputs {
    /// (request id, new tokens) in first-produced order.
    pub tokens: Vec<(u64, u32)>,
    index: HashMap<u64, usize>,
    pub finished: Vec<Finished>,
    /// Ids of the requests preempted, one entry per preemption.
    pub preempted: Vec<u64>,
    /// Tokens computed in each step (prompt + generated).
    pub iteration_tokens: Vec<u32>,
}

impl Outputs {
    fn token(&mut self, id: u64) {
        match self.index.get(&id) {
            Some(&i) => self.tokens[i].1 += 1,
            None => {
                self.index.insert(id, self.tokens.len());
                self.tokens.push((id, 1));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.finished.is_empty() && self.preempted.is_empty()
    }
}

#[derive(Debug)]
struct Req {
    id: u64,
    prompt: u32,
    max_tokens: u32,
    eos_after: Option<u32>,
    cached: u32,
    output: u32,
    computed: u32,
    blocks: u32,
    preemptions: u32,
    queued_ts: f64,
    scheduled_ts: Option<f64>,
    first_token_ts: Option<f64>,
    last_token_ts: Option<f64>,
}

impl Req {
    /// Tokens the request has: its prompt and what it generated so far.
    fn num_tokens(&self) -> u32 {
        self.prompt + self.output
    }

    fn finish_reason(&self) -> Option<Finish> {
        if self.eos_after.is_some_and(|n| self.output >= n) && self.output < self.max_tokens {
            return Some(Finish::Stop);
        }
        (self.output >= self.max_tokens).then_some(Finish::Length)
    }

    fn finished(&self, reason: Finish) -> Finished {
        Finished {
            id: self.id,
            reason,
            prompt_tokens: self.prompt,
            output_tokens: self.output,
            num_preemptions: self.preemptions,
            queued_ts: self.queued_ts,
            scheduled_ts: self.scheduled_ts,
            first_token_ts: self.first_token_ts,
            last_token_ts: self.last_token_ts,
        }
    }
}

#[derive(Debug)]
pub struct Scheduler {
    cfg: SchedConfig,
    free_blocks: u32,
    /// In scheduling order: the last one is the newest, the first to be preempted.
    running: Vec<Req>,
    waiting: VecDeque<Req>,
    preemptions_total: u64,
}

impl Scheduler {
    pub fn new(cfg: SchedConfig) -> Scheduler {
        Scheduler {
            cfg,
            free_blocks: cfg.usable_blocks,
            running: Vec::new(),
            waiting: VecDeque::new(),
            preemptions_total: 0,
        }
    }

    pub fn add(&mut self, r: NewRequest, now: f64) {
        self.waiting.push_back(Req {
            id: r.id,
            prompt: r.prompt_tokens,
            max_tokens: r.max_tokens,
            eos_after: r.eos_after,
            cached: r.cached.min(r.prompt_tokens.saturating_sub(1)),
            output: 0,
            computed: 0,
            blocks: 0,
            preemptions: 0,
            queued_ts: now,
            scheduled_ts: None,
            first_token_ts: None,
            last_token_ts: None,
        });
    }

    /// Removes a request wherever it is (the client went away) and reports it finished.
    pub fn abort(&mut self, id: u64, out: &mut Outputs) {
        let req = if let Some(i) = self.running.iter().position(|r| r.id == id) {
            let r = self.running.remove(i);
            self.free_blocks += r.blocks;
            r
        } else if let Some(r) = self
            .waiting
            .iter()
            .position(|r| r.id == id)
            .and_then(|i| self.waiting.remove(i))
        {
            r
        } else {
            return;
        };
        out.finished.push(req.finished(Finish::Abort));
    }

    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }

    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn preemptions_total(&self) -> u64 {
        self.preemptions_total
    }

    pub fn used_blocks(&self) -> u32 {
        self.cfg.usable_blocks - self.free_blocks
    }

    /// vLLM's `BlockPool.get_usage()`: 1 − free / (num_gpu_blocks − 1).
    pub fn kv_usage(&self) -> f64 {
        if self.cfg.usable_blocks == 0 {
            return 0.0;
        }
        1.0 - self.free_blocks as f64 / self.cfg.usable_blocks as f64
    }

    /// Blocks held by each running request, oldest first.
    pub fn running_blocks(&self) -> Vec<u32> {
        self.running.iter().map(|r| r.blocks).collect()
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.block_size)
    }

    /// Takes the blocks `req` needs to hold `tokens` computed tokens; false when too few are free.
    fn grow(free_blocks: &mut u32, req: &mut Req, need: u32) -> bool {
        let extra = need.saturating_sub(req.blocks);
        if extra > *free_blocks {
            return false;
        }
        *free_blocks -= extra;
        req.blocks += extra;
        true
    }

    /// Preempts every running request, newest first, so they wait again in their old order
    /// (vLLM's `reset_prefix_cache(reset_running_requests=True)`).
    pub fn preempt_all(&mut self, out: &mut Outputs) {
        while !self.running.is_empty() {
            self.preempt_newest(out);
        }
    }

    fn preempt_newest(&mut self, out: &mut Outputs) -> u64 {
        let Some(mut r) = self.running.pop() else {
            return 0;
        };
        self.free_blocks += r.blocks;
        r.blocks = 0;
        r.computed = 0;
        r.preemptions += 1;
        self.preemptions_total += 1;
        out.preempted.push(r.id);
        let id = r.id;
        self.waiting.push_front(r);
        id
    }

    /// One engine step at time `now`.
    pub fn step(&mut self, now: f64, out: &mut Outputs) {
        let mut budget = self.cfg.max_num_batched_tokens;
        let (mut scheduled, preempted_any) = self.schedule_running(&mut budget, out);
        // vLLM admits waiting requests only in steps without a preemption.
        if !preempted_any {
            self.admit_waiting(now, &mut budget, &mut scheduled);
        }
        self.execute(now, scheduled, out);
    }

    /// The running requests' tokens this step, oldest first, within `budget`: a request that
    /// needs blocks the pool lacks preempts the newest (itself, last). Returns (request id,
    /// tokens to compute) and whether anything was preempted.
    fn schedule_running(&mut self, budget: &mut u32, out: &mut Outputs) -> (Vec<(u64, u32)>, bool) {
        let mut scheduled: Vec<(u64, u32)> = Vec::with_capacity(self.running.len());
        let mut preempted_any = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let (id, want) = {
                let r = &self.running[i];
                (r.id, (r.num_tokens() - r.computed).min(*budget))
            };
            let need = self.blocks_for(self.running[i].computed + want);
            let mut schedulable = true;
            loop {
                if Self::grow(&mut self.free_blocks, &mut self.running[i], need) {
                    break;
                }
                preempted_any = true;
                let victim = self.preempt_newest(out);
                if victim == id {
                    schedulable = false;
                    break;
                }
            }
            if !schedulable {
                break;
            }
            scheduled.push((id, want));
            *budget -= want;
            i += 1;
        }

        (scheduled, preempted_any)
    }

    /// Waiting requests admitted, first come first served, while the budget, `max_num_seqs`
    /// and the pool allow.
    fn admit_waiting(&mut self, now: f64, budget: &mut u32, scheduled: &mut Vec<(u64, u32)>) {
        while *budget > 0 && (self.running.len() as u32) < self.cfg.max_num_seqs {
            let Some(front) = self.waiting.front() else {
                break;
            };
            // A first admission starts after the prompt's cached blocks (vLLM counts them as
            // computed); after a preemption the request computes everything again.
            let start = if front.scheduled_ts.is_none() {
                front.cached
            } else {
                front.computed
            };
            let want = (front.num_tokens() - start).min(*budget);
            let need = self.blocks_for(start + want);
            let Some(mut r) = self.waiting.pop_front() else {
                break;
            };
            r.computed = start;
            if !Self::grow(&mut self.free_blocks, &mut r, need) {
                self.waiting.push_front(r);
                break;
            }
            // Steps run on the engine's own clock, which falls behind the wall clock when the
            // process waits for a core and then catches up in a burst; a request that arrived
            // meanwhile carries the wall clock, so its stamps are kept in order (a latency
            // histogram's `_sum` never goes down on a real server).
            r.scheduled_ts.get_or_insert(now.max(r.queued_ts));
            scheduled.push((r.id, want));
            *budget -= want;
            self.running.push(r);
        }
    }

    /// Computes the scheduled tokens; a fully computed request samples one token.
    fn execute(&mut self, now: f64, scheduled: Vec<(u64, u32)>, out: &mut Outputs) {
        let mut step_tokens = 0;
        let mut done = Vec::new();
        for (id, want) in scheduled {
            let Some(pos) = self.running.iter().position(|r| r.id == id) else {
                continue;
            };
            let r = &mut self.running[pos];
            r.computed += want;
            step_tokens += want;
            if r.computed == r.num_tokens() {
                r.output += 1;
                let at = now.max(r.scheduled_ts.unwrap_or(r.queued_ts));
                r.first_token_ts.get_or_insert(at);
                r.last_token_ts = Some(at);
                out.token(id);
                if let Some(reason) = r.finish_reason() {
                    done.push((pos, reason));
                }
            }
        }
        out.iteration_tokens.push(step_tokens);
        done.sort_by_key(|&(pos, _)| std::cmp::Reverse(pos));
        let mut finished: Vec<Finished> = Vec::with_capacity(done.len());
        for (pos, reason) in done {
            let r = self.running.remove(pos);
            self.free_blocks += r.blocks;
            finished.push(r.finished(reason));
        }
        finished.reverse();
        out.finished.extend(finished);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(blocks: u32, bs: u32, seqs: u32) -> Scheduler {
        Scheduler::new(SchedConfig {
            usable_blocks: blocks - 1,
            block_size: bs,
            max_num_seqs: seqs,
            max_num_batched_tokens: 8192,
        })
    }

    fn add(s: &mut Scheduler, id: u64, prompt: u32, max: u32) {
        s.add(
            NewRequest {
                id,
                prompt_tokens: prompt,
                max_tokens: max,
                eos_after: None,
                cached: 0,
            },
            0.0,
        );
    }

    #[test]
    fn preempting_all_frees_every_block_and_keeps_the_order() {
        let mut s = sched(11, 16, 8);
        add(&mut s, 1, 20, 40);
        add(&mut s, 2, 20, 40);
        let mut out = Outputs::default();
        s.step(0.0, &mut out);
        assert_eq!(s.running_blocks(), vec![2, 2]);
        let mut out = Outputs::default();
        s.preempt_all(&mut out);
        assert_eq!(out.preempted, vec![2, 1], "newest first");
        assert_eq!(
            (s.used_blocks(), s.num_running(), s.num_waiting()),
            (0, 0, 2)
        );
        s.step(0.1, &mut out);
        assert_eq!(
            s.running.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn a_request_holds_ceil_tokens_over_block_size_and_grows_at_each_boundary() {
        let mut s = sched(11, 16, 8); // 10 usable blocks
        add(&mut s, 1, 16, 40);
        let mut out = Outputs::default();
        s.step(0.0, &mut out); // prefill 16 tokens → 1 block, first token sampled
        assert_eq!(s.running_blocks(), vec![1]);
        s.step(0.1, &mut out); // computes token 17 → 2 blocks
        assert_eq!(s.running_blocks(), vec![2]);
        for _ in 0..15 {
            s.step(0.2, &mut out);
        }
        assert_eq!(s.running_blocks(), vec![2]); // 32 computed tokens
        s.step(0.3, &mut out);
        assert_eq!(s.running_blocks(), vec![3]); // 33rd token
                                                 // Usage counts out of num_gpu_blocks − 1.
        assert!((s.kv_usage() - 3.0 / 10.0).abs() < 1e-12);
    }

    #[test]
    fn max_num_seqs_limits_running() {
        let mut s = sched(1000, 16, 3);
        for id in 0..5 {
            add(&mut s, id, 10, 100);
        }
        let mut out = Outputs::default();
        s.step(0.0, &mut out);
        assert_eq!((s.num_running(), s.num_waiting()), (3, 2));
    }

    #[test]
    fn the_newest_running_request_is_preempted_when_no_block_is_free() {
        // 4 usable blocks of 4 tokens; two requests of 7 prompt tokens hold 2 blocks each.
        let mut s = sched(5, 4, 8);
        add(&mut s, 1, 7, 10);
        add(&mut s, 2, 7, 10);
        let mut out = Outputs::default();
        s.step(0.0, &mut out);
        assert_eq!(s.running_blocks(), vec![2, 2]);
        assert_eq!(s.kv_usage(), 1.0);
        // Request 1 needs a third block for token 9: request 2 (newest) is preempted.
        s.step(0.1, &mut out); // token 8 fits in block 2 for both
        s.step(0.2, &mut out);
        assert_eq!(out.preempted, vec![2]);
        assert_eq!(s.preemptions_total(), 1);
        assert_eq!(s.running_blocks(), vec![3]);
        assert_eq!((s.num_running(), s.num_waiting()), (1, 1));
        // No admission in a step with a preemption; the victim waits at the head of the queue.
        add(&mut s, 3, 1, 1);
        s.step(0.3, &mut out);
        assert_eq!(s.num_waiting(), 2);
    }

    #[test]
    fn a_preempted_request_recomputes_its_output_and_keeps_its_tokens() {
        let mut s = sched(5, 4, 8);
        add(&mut s, 1, 7, 6);
        add(&mut s, 2, 7, 6);
        let mut out = Outputs::default();
        let mut t = 0.0;
        while s.has_work() {
            s.step(t, &mut out);
            t += 0.1;
            assert!(t < 100.0, "scheduler made no progress");
        }
        let total: u32 = out.tokens.iter().map(|&(_, n)| n).sum();
        assert_eq!(total, 12, "each request generates exactly max_tokens");
        assert_eq!(out.finished.len(), 2);
        assert!(out
            .finished
            .iter()
            .all(|f| f.reason == Finish::Length && f.output_tokens == 6));
        let preempted: u32 = out.finished.iter().map(|f| f.num_preemptions).sum();
        assert_eq!(preempted as usize, out.preempted.len());
        assert!(!out.preempted.is_empty());
        assert_eq!(s.used_blocks(), 0);
    }

    #[test]
    fn the_ceiling_falls_as_outputs_grow() {
        // 42 usable blocks of 784; prompts of 2,400 tokens hold 4 blocks → 10 fit; after
        // 737 output tokens they need a fifth block → 8 fit.
        let mut s = sched(43, 784, 256);
        for id in 0..32 {
            add(&mut s, id, 2400, 1000);
        }
        let mut out = Outputs::default();
        s.step(0.0, &mut out); // the token budget of 8,192 admits 3 prompts per step
        for k in 1..4 {
            s.step(k as f64, &mut out);
        }
        assert_eq!(s.num_running(), 10);
        assert_eq!(s.used_blocks(), 40);
        let mut peak_blocks = 0;
        for k in 4..800 {
            s.step(k as f64, &mut out);
            peak_blocks = peak_blocks.max(*s.running_blocks().iter().max().unwrap());
        }
        assert_eq!(peak_blocks, 5);
        assert!(s.num_running() <= 8);
        assert!(s.preemptions_total() > 0);
    }

    #[test]
    fn eos_ends_a_request_with_stop() {
        let mut s = sched(100, 16, 8);
        s.add(
            NewRequest {
                id: 7,
                prompt_tokens: 3,
                max_tokens: 10,
                eos_after: Some(4),
                cached: 0,
            },
            0.0,
        );
        let mut out = Outputs::default();
        for k in 0..10 {
            s.step(k as f64, &mut out);
        }
        assert_eq!(out.finished.len(), 1);
        assert_eq!(out.finished[0].reason, Finish::Stop);
        assert_eq!(out.finished[0].output_tokens, 4);
    }

    #[test]
    fn abort_frees_blocks_and_reports_abort() {
        let mut s = sched(100, 16, 8);
        add(&mut s, 1, 40, 100);
        let mut out = Outputs::default();
        s.step(0.0, &mut out);
        assert_eq!(s.used_blocks(), 3);
        s.abort(1, &mut out);
        assert_eq!(s.used_blocks(), 0);
        assert_eq!(out.finished.last().unwrap().reason, Finish::Abort);
        assert!(!s.has_work());
    }

    #[test]
    fn long_prompts_are_prefilled_in_chunks_of_the_token_budget() {
        let mut s = Scheduler::new(SchedConfig {
            usable_blocks: 100,
            block_size: 16,
            max_num_seqs: 8,
            max_num_batched_tokens: 64,
        });
        add(&mut s, 1, 150, 2);
        let mut out = Outputs::default();
        s.step(0.0, &mut out);
        s.step(0.1, &mut out);
        assert!(
            out.tokens.is_empty(),
            "no token before the prompt is computed"
        );
        assert_eq!(s.used_blocks(), 8); // 128 tokens
        s.step(0.2, &mut out);
        assert_eq!(out.tokens, vec![(1, 1)]);
        assert_eq!(out.iteration_tokens, vec![64, 64, 22]);
    }

    #[test]
    fn a_request_that_arrives_while_the_steps_lag_keeps_its_stamps_in_order() {
        let mut s = sched(11, 16, 8);
        s.add(
            NewRequest {
                id: 1,
                prompt_tokens: 4,
                max_tokens: 2,
                eos_after: None,
                cached: 0,
            },
            10.0,
        );
        let mut out = Outputs::default();
        // The engine's clock is behind the arrival's wall-clock stamp.
        s.step(9.9, &mut out);
        s.step(9.95, &mut out);
        let f = &out.finished[0];
        let (sched, first, last) = (
            f.scheduled_ts.unwrap(),
            f.first_token_ts.unwrap(),
            f.last_token_ts.unwrap(),
        );
        assert!(
            f.queued_ts <= sched && sched <= first && first <= last,
            "{f:?}"
        );
    }
}
