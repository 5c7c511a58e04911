//! The entries of the tripwires that judge the load's window as a whole (T16–T21): what the
//! server's counters and the load's own command and result say about the requests it measured.

use super::Entry;
use crate::result::Tripwire;

pub(super) const T16: Entry = Entry {
    tripwire: Tripwire::T16,
    slug: "cached-prompts",
    name: "Prompts served from the prefix cache",
    what: "Prompt tokens of the load were served from the server's prefix cache instead of \
           being computed. vLLM counts them in vllm:prefix_cache_hits_total against \
           vllm:prefix_cache_queries_total (SGLang: sglang:cached_tokens_total, TensorRT-LLM: \
           trtllm_prompt_cached_tokens_total, against their prompt-token counters). A random \
           dataset sent twice with one --seed, or to a server that kept an earlier run's \
           prompts, hits the cache while every line of the benchmark looks normal.",
    why: "A hit skips the prompt's prefill, so time to first token and throughput are those of \
          prompts the server had already seen: a fixed-seed random load re-run against a warm \
          server has been measured up to 86% faster. For a dataset that shares prefixes on \
          purpose the hits are part of the workload; for random or synthetic prompts they are an \
          accident.",
    command: "inferlint window before.json after.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T17: Entry = Entry {
    tripwire: Tripwire::T17,
    slug: "failed-requests",
    name: "Requests that did not finish",
    what: "Requests of the measured window failed: the load tool counted them as failed, the \
           server aborted them or ended them with an error (vllm:request_success_total with \
           finished_reason abort or error), or the API server refused them before the engine \
           saw them (http_requests_total with status 4xx or 5xx on an inference endpoint: a \
           prompt longer than --max-model-len never reaches the engine). A stream that ends \
           with an in-band error is counted as a success by some clients.",
    why: "Latency and throughput are computed over the requests that succeeded, so a server \
          that refuses or drops requests looks faster than one that serves them all, and a run \
          in which nothing succeeded still prints numbers (0.00 tokens/s, 0 requests that agree).",
    command:
        "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T18: Entry = Entry {
    tripwire: Tripwire::T18,
    slug: "short-outputs",
    name: "Outputs shorter than asked",
    what: "Requests ended at end-of-sequence before the output length the load asked for: \
           vllm:request_success_total{finished_reason=\"stop\"} moved while the load set an \
           output length (--random-output-len, max_tokens) or --ignore-eos, and the load tool's \
           output_lens fall short of it. A client that does not pass ignore_eos through, or a \
           dataset or endpoint where it is not the default, lets the model stop early.",
    why: "Tokens per second and time per output token then compare runs of different lengths: \
          shorter outputs hold less KV cache, fit more requests at once and finish sooner, so \
          two runs with the same settings disagree for a reason neither reports.",
    command:
        "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T19: Entry = Entry {
    tripwire: Tripwire::T19,
    slug: "spec-decode-synthetic",
    name: "Speculative decoding measured on random prompts",
    what: "Speculative decoding ran while the load sent random or synthetic prompts. vLLM \
           counts the draft tokens it proposed and accepted \
           (vllm:spec_decode_num_draft_tokens_total, vllm:spec_decode_num_accepted_tokens_total); \
           on random tokens the drafter has nothing to predict: on the real vLLM 0.32 CPU build \
           the n-gram drafter had 0 of 59 draft tokens accepted on random prompts and 87 of 111 \
           on repetitive text.",
    why: "The speed-up of speculative decoding is its acceptance rate: a benchmark on random \
          tokens measures a rate no real workload has, so its throughput and latency, better or \
          worse, do not transfer to real text.",
    command: "inferlint window before.json after.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T20: Entry = Entry {
    tripwire: Tripwire::T20,
    slug: "warm-up-in-window",
    name: "Warm-up inside the measured window",
    what: "The first requests of the measured window paid for the server's warm-up: the server \
           logged warm-up work while the load ran (vLLM's \"Compiling a graph for ...\", \
           \"torch.compile takes ...\", a CUDA graph capture), or the first requests' time to \
           first token, from the load tool's per-request ttfts (--save-detailed), is several \
           times the rest's, more than sharing one prefill explains. A first load right after \
           boot, without --num-warmups, measures compilation, graph capture and cold caches.",
    why: "The mean and the tail of time to first token then include a cost the server pays once: \
          a first run's mean TTFT has been reported at 361.76 ms with the second much lower, and \
          cold against warm p99 TTFT at 33,592 against 30,294 ms. Two runs with the same \
          settings disagree depending on which ran first.",
    command:
        "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T21: Entry = Entry {
    tripwire: Tripwire::T21,
    slug: "client-pace",
    name: "The client set the pace",
    what: "The load's own client could not send what it asked for: it sent fewer requests per \
           second than --request-rate (vllm bench serve spreads its requests over exactly \
           requests / rate seconds, so a longer send span is the client falling behind), or \
           one of its processes used nearly a whole core, or the tree nearly all of its \
           cgroup's CPU quota, while the server ran fewer requests than asked with none \
           waiting.",
    why: "The result then describes the client, not the server: a concurrency or rate that was \
          never offered, and latencies that include the client's own delays. At high \
          concurrency one Python process cannot keep a fast server busy, and the result still \
          says \"concurrency 256\".",
    command: "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve --request-rate 100 ...",
    notes: &[],
};
