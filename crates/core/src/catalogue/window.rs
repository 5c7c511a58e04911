//! The entries of the tripwires that judge the load's window as a whole (T16–T27): what the
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

pub(super) const T22: Entry = Entry {
    tripwire: Tripwire::T22,
    slug: "dp-balance",
    name: "Data-parallel engines unevenly loaded",
    what: "One engine of a data-parallel server (vllm serve --data-parallel-size N) finished \
           far more than its share of the requests while the others idled: each engine counts \
           its own vllm:request_success_total and exports its own vllm:num_requests_running \
           (label engine). A routing bias, a client that pins one rank (the \
           X-data-parallel-rank header) or a coordinator that stops balancing sends the load \
           to one engine.",
    why: "The figures then describe one engine's queue, not the server's: throughput is one \
          engine's, latencies include a queue the others could have served, and a sweep's \
          curve bends where one engine, not N, is full. Reported: one engine running 27 \
          requests while the others sat at 0, and a tie-break bias that split two engines' \
          traffic 6 to 4.",
    command: "inferlint window before.json after.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T23: Entry = Entry {
    tripwire: Tripwire::T23,
    slug: "chunked-stream",
    name: "Several tokens per streamed chunk",
    what: "The streamed responses carried more than one token per chunk: the load tool's \
           per-request output lengths (--save-detailed) against the chunks it timed (its \
           itls, one gap per chunk after the first). Speculative decoding (n-gram, EAGLE, MTP) \
           hands its accepted tokens to the stream together, and a stream interval batches \
           tokens on purpose: on the real vLLM 0.32 CPU build, n-gram speculation streamed 128 \
           tokens in 45 chunks.",
    why: "The client times chunks, so its inter-token latency is the gap between chunks: 783 \
          ms mean against a time per output token of 259 ms in that run. A report that reads \
          ITL as per token overstates it by the tokens per chunk, and a comparison with a run \
          that streams one token per chunk compares different things.",
    command:
        "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T24: Entry = Entry {
    tripwire: Tripwire::T24,
    slug: "token-counts",
    name: "Prompt lengths other than asked",
    what: "The server processed another number of prompt tokens per request than the load \
           asked for (--random-input-len, aiperf's --isl, GuideLLM's prompt_tokens) or than \
           the client counted: vllm:prompt_tokens_total over the requests finished, between \
           the snapshots. A client tokenizer that is not the server's builds prompts that \
           encode to other lengths on the server; a chat template adds tokens.",
    why: "Input tokens per second, TTFT by prompt length and the prefill share then describe \
          prompts nobody asked for, and vllm bench serve reports the server's count, so the \
          client and the server agree with each other while both disagree with the command: \
          on the real vLLM 0.32 CPU build a client tokenizer with its merges cut sent \
          100-token prompts that the server processed as 26 tokens each, with every other \
          line passing.",
    command: "inferlint window before.json after.json --bench-result bench.json -- vllm bench serve --random-input-len 100 ...",
    notes: &[],
};

pub(super) const T25: Entry = Entry {
    tripwire: Tripwire::T25,
    slug: "graph-batch",
    name: "Batches beyond the captured CUDA graphs",
    what: "The server ran more requests at once than the largest decode batch it captured as \
           a CUDA graph: vLLM's max_cudagraph_capture_size in its engine config line (by \
           default twice --max-num-seqs, at most 512), SGLang's largest decode bs in \"Capture \
           target decode CUDA graph begin\", against the running requests of the recording. \
           A batch beyond the largest graph runs eager.",
    why: "Eager decode steps are several times slower: reported at 25.3 against 133.3 tokens/s, \
          and about 4× the latency with SGLang's cuda_graph_max_bs at 32 under \
          max_running_requests 4096. The figures then describe the eager path at the high \
          concurrencies of a sweep and the graphs at the low ones, and the curve bends where \
          the graphs end, not where the server saturates.",
    command: "inferlint series run.series.jsonl --boot-log boot.log",
    notes: &[],
};

pub(super) const T26: Entry = Entry {
    tripwire: Tripwire::T26,
    slug: "kv-offload",
    name: "KV offloading that never loads back",
    what: "KV offloading was on (vllm serve --kv-offloading-size, or an offloading connector in \
           --kv-transfer-config) and stored blocks in CPU memory during the load, but loaded \
           none of them back: vllm:kv_offload_store_bytes against vllm:kv_offload_load_bytes \
           (the deprecated vllm:kv_offload_total_bytes by transfer_type on older releases), or \
           SimpleCPUOffloadConnector's stored and loaded blocks, between the snapshots, with \
           the connector's lookups (vllm:external_prefix_cache_queries and _hits).",
    why: "Every prompt the GPU's cache had lost was then prefilled again while the \
          configuration says offloading is on: the figures show the stores' cost without the \
          loads' benefit, and a comparison with and without offloading compares two servers \
          that did the same work. A load whose prompts never return cannot use offloading; one \
          whose prompts do points to a lookup that never hits.",
    command: "inferlint window before.json after.json -- vllm bench serve ...",
    notes: &[],
};

pub(super) const T27: Entry = Entry {
    tripwire: Tripwire::T27,
    slug: "gpu-clocks",
    name: "GPU clocks throttled during the load",
    what: "A card of the run lowered its clocks for power or heat while the load ran: the \
           driver's clock event reasons (NVML, or nvidia-smi's clocks_event_reasons.active) \
           showed SwPowerCap, HwSlowdown, SwThermalSlowdown, HwThermalSlowdown or \
           HwPowerBrakeSlowdown on a tenth of the card's busy readings or more, read every \
           second during the load, with the SM clock against its maximum, the power draw \
           against its limit and the temperature.",
    why: "The figures then describe a throttled card: reported, the SM clock fell from 1965 to \
          about 1580 MHz at about 1000 W (15 % fewer TFLOPS), and a 13 % regression in CI could \
          not be explained without the clocks. A run compared with another on a cooler or less \
          loaded node compares two clock speeds.",
    command: "inferlint report run/  (the clocks run.json recorded during the load)",
    notes: &[],
};
