//! The tripwire catalogue: what each tripwire catches, why it matters, how to check it, and
//! where SGLang and TensorRT-LLM differ from vLLM (docs/design/tripwires.md,
//! docs/design/engines.md#where-the-tripwires-differ).
//!
//! The texts are vLLM-centred; the per-engine notes say what changes on the other engines.
//! `docs/tripwires.md` repeats every note verbatim (a test holds it to that).

use crate::engine::Engine;
use crate::result::Tripwire;

mod window;

/// The engine releases the catalogue's vLLM texts were checked against.
pub const VERIFIED: &str = "verified on vLLM 0.28, 0.29 and 0.30";

/// One tripwire's catalogue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tripwire: Tripwire,
    /// Permanent, lower-case, hyphenated: `silent-preemption`.
    pub slug: &'static str,
    /// Display name: `Silent preemption`.
    pub name: &'static str,
    /// What happens.
    pub what: &'static str,
    /// Why it matters for a benchmark's numbers.
    pub why: &'static str,
    /// The command that checks it, as `explain` prints it.
    pub command: &'static str,
    /// Where another engine differs (SGLang and TensorRT-LLM only).
    pub notes: &'static [(Engine, &'static str)],
}

impl Entry {
    /// `T8`.
    pub fn id(&self) -> String {
        self.tripwire.code()
    }

    /// The note for one engine, if this tripwire has one.
    pub fn note(&self, engine: Engine) -> Option<&'static str> {
        self.notes
            .iter()
            .find(|(e, _)| *e == engine)
            .map(|(_, n)| *n)
    }
}

/// Every tripwire in code order.
pub fn all() -> &'static [Entry] {
    &CATALOGUE
}

/// A tripwire's entry.
pub fn entry(t: Tripwire) -> &'static Entry {
    &CATALOGUE[usize::from(t.number()) - 1]
}

/// Looks a tripwire up by code (`T1`, `t1`) or slug (`silent-preemption`), case-insensitively.
pub fn lookup(key: &str) -> Option<&'static Entry> {
    let key = key.trim();
    if let Ok(t) = key.parse::<Tripwire>() {
        return Some(entry(t));
    }
    CATALOGUE.iter().find(|e| e.slug.eq_ignore_ascii_case(key))
}

/// The error for a name that is no tripwire.
pub fn unknown_message(key: &str) -> String {
    format!("unknown tripwire: {key} (known: T1-T27, or a name such as silent-preemption)")
}

static CATALOGUE: [Entry; 27] = [
    Entry {
        tripwire: Tripwire::T1,
        slug: "silent-preemption",
        name: "Silent preemption",
        what: "Requests were evicted from the KV cache while running and recomputed later. vLLM \
               counts these preemptions in vllm:num_preemptions_total but logs none of them at \
               its default log level, so the server log of such a run looks clean.",
        why: "A preempted request throws its KV cache away and computes it again, so the run's \
              latency and throughput include work the load never asked for. Without the counter \
              the benchmark reports them as the server's normal speed.",
        command: "inferlint preemption before.json after.json",
        notes: &[
            (
                Engine::Sglang,
                "An eviction is called a retraction. SGLang counts them in \
                 sglang:num_retracted_requests_total, which it exports only after the first \
                 retraction (inferlint reads 0 until then, through the sglang:num_retracted_reqs \
                 gauge), and logs a WARNING for each one (KV cache pool is full. Retract \
                 requests.).",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM counts nothing: a request is paused for recompute and the only \
                 trace is an INFO log line (request ID 72 -> pause), so the server log, kept at \
                 INFO and saved until after the run, is where the pauses are counted. Its \
                 default policy GUARANTEED_NO_EVICT admits a request only when its whole output \
                 fits and pauses none; with MAX_UTILIZATION and a 20,960-token pool it paused 13 \
                 requests while its paused gauge showed none of them in 171 readings.",
            ),
            (
                Engine::Llamacpp,
                "llama.cpp never evicts: each slot (--parallel) runs its request to the end, and \
                 a request with no free slot waits in llamacpp:requests_deferred. T1 does not \
                 apply.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T2,
        slug: "orphaned-engine",
        name: "Orphaned engine process",
        what: "An engine process outlived the API server and kept the GPU's memory. vLLM runs \
               its engine in a child process renamed VLLM::EngineCore, which pkill -f \"vllm \
               serve\" does not match; killing the API server alone leaves it running.",
        why: "The next server on that GPU starts with less free memory: a smaller KV pool, or an \
              out-of-memory failure at start-up. Later runs of a campaign then measure a \
              different configuration than the first one.",
        command: "inferlint teardown  |  inferlint gpu-inspect",
        notes: &[
            (
                Engine::Sglang,
                "SGLang's scheduler (sglang::scheduler) and detokenizer (sglang::detokenizer) \
                 exited when the launcher was SIGKILLed in the recorded runs; teardown still \
                 finds them, because it counts a server's descendants as server processes.",
            ),
            (
                Engine::Trtllm,
                "trtllm-serve starts prte and python -m mpi4py.futures.server workers; they \
                 exited when the launcher was SIGKILLed in the recorded runs, and teardown still \
                 finds them as the server's descendants.",
            ),
            (
                Engine::Llamacpp,
                "llama-server is one process, with no engine child to outlive it; teardown finds \
                 a llama-server left holding a GPU by its name, and the run's own by its process \
                 group and cgroup.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T3,
        slug: "cleanup-self-kill",
        name: "Cleanup kills its own shell",
        what: "A cleanup step such as bash -lc '...; pkill -f \"vllm serve\"' matches its own \
               shell's command line, which contains the pattern, and kills that shell (exit \
               143): the rest of the script never runs. It is a rule for shell scripts, with no \
               check of its own.",
        why: "The job dies at clean-up and looks like a server crash; whatever came after (the \
              next run, copying results) is lost. Write pkill -f \"vllm[ ]serve\" (fixes this, \
              not T2), or use inferlint teardown, which matches processes by structure and never \
              itself or its parents. inferlint lint-script finds the pattern in campaign \
              scripts.",
        command: "inferlint teardown",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T4,
        slug: "pool-size-jump",
        name: "KV pool size jumps between starts",
        what: "Starts with identical flags sized different KV cache pools. The pool moves in \
               discrete steps: the recorded pair drew 13,575 and 12,405 tokens, 9.43% apart.",
        why: "The pool decides how many requests fit at once, so two runs of one configuration \
              differ in throughput and preemptions for a reason that is in no flag. Compare \
              results only between starts that drew the same pool.",
        command: "inferlint check-log boot1.log boot2.log",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T5,
        slug: "large-kv-blocks",
        name: "Large KV block size",
        what: "vLLM raised the attention block size for a hybrid attention/Mamba model and said \
               so once at start-up: 784 tokens in every live run, 400 to 1,568 in recorded logs, \
               against a default of 16.",
        why: "Each request's KV cache is allocated in whole blocks, so even a short request \
              holds 784 tokens: fewer requests fit than the pool size in tokens suggests, and \
              prefix caching works at that granularity.",
        command: "inferlint check-log boot.log",
        notes: &[
            (
                Engine::Sglang,
                "SGLang allocates per token (page size 1), so there are no large blocks; hybrid \
                 models keep a fixed state slot per running request instead, which limits \
                 concurrency (T8 reports it).",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM allocates in blocks of tokens_per_block tokens, 32 by default; T5 \
                 reports the page size it printed.",
            ),
            (
                Engine::Llamacpp,
                "Does not apply: llama.cpp keeps its KV cache in cells of one token, not blocks.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T6,
        slug: "backend-ignored",
        name: "Requested attention backend ignored",
        what: "--attention-backend X was honoured by the target model but not by the \
               speculative-decoding draft model, which chose its own backend (recorded: \
               TRITON_ATTN requested, the drafter picked FLASHINFER). Backend lines after \
               Loading drafter model belong to the drafter.",
        why: "The run measures another kernel mix than the one asked for, so a comparison of \
              backends compares the wrong thing.",
        command: "inferlint check-log boot.log",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T7,
        slug: "crash-after-ready",
        name: "Crash after ready",
        what: "The server printed Application startup complete and then failed while serving, \
               typically on the first real request (a kernel compiled at first use, a CUDA \
               error under load).",
        why: "A readiness check passes and the benchmark starts, but its requests fail or hang: \
              the numbers measure error handling, not serving. One request and a burst before \
              the load catch it.",
        command: "inferlint probe http://127.0.0.1:8000",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T8,
        slug: "concurrency-not-reached",
        name: "Concurrency not reached",
        what: "The load tool kept N requests open but the server never ran N at once; the rest \
               waited in its queue, held back by the KV cache, its running limit \
               (--max-num-seqs) or admission control (--max-num-queued-reqs).",
        why: "A result labelled concurrency 32 then describes a server running 10: latency \
              includes queueing, and throughput does not belong to the concurrency the \
              benchmark reports.",
        command: "inferlint series run.series.jsonl --requested 32",
        notes: &[
            (
                Engine::Sglang,
                "SGLang can lower its running limit below --max-running-requests (hybrid models' \
                 state slots) and says so once in its log (max_running_requests is capped to 1 \
                 by the mamba state cache), while /get_server_info still reports the original \
                 value and the client reports a peak of 32 concurrent; T8 names the lowered \
                 limit when the run reached it.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM updates its running gauge only when a request completes, so a \
                 shortfall in the recording is Can't tell, not a failure: the server may have \
                 run more in between.",
            ),
            (
                Engine::Llamacpp,
                "The running gauge is llamacpp:requests_processing and the queue \
                 llamacpp:requests_deferred; the ceiling is the server's slots (--parallel, \
                 n_slots in its log). A load that asks for more than the slots runs at most that \
                 many at once.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T9,
        slug: "falling-ceiling",
        name: "Concurrency ceiling falls as sequences grow",
        what: "The number of requests that fit in the KV cache, floor(1/share) where share is \
               one request's part of the cache, changed during the run as requests grew: on \
               live vLLM 0.28 a fresh request held 4 of 42 blocks (10 fit) and a grown one 6 \
               (7 fit).",
        why: "Concurrency was not a constant of the run: the steady state a benchmark assumes \
              did not exist, and the end of the run measured a smaller batch than its start.",
        command: "inferlint series run.series.jsonl",
        notes: &[
            (
                Engine::Sglang,
                "sglang:token_usage is SGLang's fullest memory pool (KV cache or request state \
                 slots), rounded to 2 decimals, so the ceiling belongs to whichever pool filled \
                 first and is coarse.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM updates its gauges only when a request completes, so the ceiling \
                 may rest on a few readings; the message says how many.",
            ),
            (
                Engine::Llamacpp,
                "llama.cpp exports no KV-usage gauge (llamacpp:n_busy_slots_per_decode is not \
                 one), so the ceiling cannot be told from it.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T10,
        slug: "integer-second-timer",
        name: "Integer-second timing",
        what: "A run timed with whole-second stamps ($(date +%s)) is off by up to 1 s at each \
               end: up to 3.5% on a 29 s run.",
        why: "Throughput from such a span moves by percents between identical runs, the size of \
              the differences benchmarks are run to find. inferlint takes the span from the \
              monotonic clocks of its snapshots and shows what a whole-second timer would have \
              said.",
        command: "inferlint rate before.json after.json",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T11,
        slug: "kv-memory-drift",
        name: "KV memory budget drifts between starts",
        what: "Starts with identical flags gave the KV cache different amounts of memory \
               (recorded: 1.44 and 1.59 GiB), for example because one start compiled the model \
               from scratch and its activations peaked higher.",
        why: "The pool follows the memory, so throughput and preemptions differ between runs of \
              one configuration for a reason that is in no flag.",
        command: "inferlint check-log boot1.log boot2.log",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T12,
        slug: "unexplained-failure",
        name: "Start-up failure without a cause",
        what: "The server failed to start and the last lines of its log (Engine core \
               initialization failed) do not say why; the cause, such as a CUDA error, a JIT \
               toolchain mismatch or too little memory, sits far above them.",
        why: "A failed start costs a GPU slot and a queue wait; naming the root cause line makes \
              the fix one step instead of a search through thousands of lines.",
        command: "inferlint check-log boot.log",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T13,
        slug: "stale-waiter",
        name: "Stale waiter adopts the next server",
        what: "A campaign script killed while its wait_ready loop polls /health defers its trap \
               cleanup EXIT (bash runs no trap while a foreground child runs). The loop then sees \
               the next campaign's server on the same port, reports ready, and the deferred \
               cleanup kills that server. It is a documented rule for scripts, with no check of \
               its own.",
        why: "One campaign measures another's server, which then dies mid-run. Confirm the \
              script process is gone (or kill -9 it), match scripts by bare name, use one port \
              per campaign or check the server's PID or a unique --served-model-name. inferlint \
              lint-script finds such wait loops in campaign scripts.",
        command: "see docs/orchestration.md",
        notes: &[],
    },
    Entry {
        tripwire: Tripwire::T14,
        slug: "null-block",
        name: "Reserved null block",
        what: "vllm:kv_cache_usage_perc counts out of num_gpu_blocks - 1, because one block is \
               reserved as the null block, so a capacity computed from the exported block count \
               is one block too high.",
        why: "With few large blocks one block matters: 1 of 43 is 2.3% of the cache, enough to \
              change how many requests are predicted to fit. inferlint infers the gauge's \
              denominator from its readings and checks it against the exported count.",
        command: "inferlint series run.series.jsonl --snapshot after.json",
        notes: &[
            (
                Engine::Sglang,
                "Does not apply: T14 is about vLLM's reserved null block, and SGLang exports no \
                 block count (its pool gauges are sglang:max_total_num_tokens and \
                 sglang:page_size).",
            ),
            (
                Engine::Trtllm,
                "Does not apply: T14 is about vLLM's reserved null block, and TensorRT-LLM \
                 exports no cache-info series to check its gauge against.",
            ),
            (
                Engine::Llamacpp,
                "Does not apply: T14 is about vLLM's reserved null block.",
            ),
        ],
    },
    Entry {
        tripwire: Tripwire::T15,
        slug: "client-server-mismatch",
        name: "Client and server counts disagree",
        what: "The load tool's result file and the server's counters disagree on how many \
               requests finished or how many tokens were generated, after allowing for the \
               untimed test and warm-up requests the client leaves out.",
        why: "Either other traffic shared the server during the run, so its numbers include \
              someone else's load, or the client counted requests the server never finished.",
        command: "inferlint xray -o results/ -- vllm bench serve ...",
        notes: &[],
    },
    window::T16,
    window::T17,
    window::T18,
    window::T19,
    window::T20,
    window::T21,
    window::T22,
    window::T23,
    window::T24,
    window::T25,
    window::T26,
    window::T27,
];

/// Wraps `text` to lines of at most `width` characters, each starting with `indent`; a word
/// longer than the line stays whole, and so does a command (`inferlint lint-script`), so it can
/// be searched for and copied.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match words.last_mut() {
            Some(prev) if prev == "inferlint" => {
                prev.push(' ');
                prev.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
    }
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    for word in &words {
        let empty = line.len() == indent.len();
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, String::from(indent)));
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.len() > indent.len() {
        lines.push(line);
    }
    lines
}

/// `explain`'s text for one tripwire: `{id}  {name}  ({slug})`, the wrapped "what",
/// `Why it matters: …`, `On {Engine}: …` for each note (only `engine`'s when one is named),
/// and `    Check: {command}`.
pub fn explain_text(e: &Entry, engine: Option<Engine>) -> String {
    const WIDTH: usize = 92;
    const INDENT: &str = "    ";
    let mut out = format!("{}  {}  ({})\n", e.id(), e.name, e.slug);
    let mut para = |text: String| {
        for l in wrap(&text, WIDTH, INDENT) {
            out.push_str(&l);
            out.push('\n');
        }
    };
    para(e.what.to_string());
    para(format!("Why it matters: {}", e.why));
    for (eng, note) in e.notes {
        if engine.is_none_or(|named| named == *eng) {
            para(format!("On {}: {note}", eng.name()));
        }
    }
    out.push_str(&format!("{INDENT}Check: {}\n", e.command));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tripwire_in_order_with_the_spec_commands() {
        let ids: Vec<String> = all().iter().map(Entry::id).collect();
        let expected: Vec<String> = (1..=27).map(|n| format!("T{n}")).collect();
        assert_eq!(ids, expected);
        let cmd = |t| entry(t).command;
        assert_eq!(
            cmd(Tripwire::T1),
            "inferlint preemption before.json after.json"
        );
        assert_eq!(
            cmd(Tripwire::T2),
            "inferlint teardown  |  inferlint gpu-inspect"
        );
        assert_eq!(
            cmd(Tripwire::T8),
            "inferlint series run.series.jsonl --requested 32"
        );
        assert_eq!(cmd(Tripwire::T13), "see docs/orchestration.md");
        assert_eq!(
            cmd(Tripwire::T15),
            "inferlint xray -o results/ -- vllm bench serve ..."
        );
        assert_eq!(
            entry(Tripwire::T9).name,
            "Concurrency ceiling falls as sequences grow"
        );
    }

    #[test]
    fn lookup_by_code_or_slug_ignoring_case() {
        assert_eq!(lookup("t1").unwrap().slug, "silent-preemption");
        assert_eq!(lookup("T15").unwrap().slug, "client-server-mismatch");
        assert_eq!(lookup("Null-Block").unwrap().tripwire, Tripwire::T14);
        assert_eq!(lookup("T16").unwrap().slug, "cached-prompts");
        assert_eq!(lookup("dp-balance").unwrap().tripwire, Tripwire::T22);
        assert_eq!(lookup("kv-offload").unwrap().tripwire, Tripwire::T26);
        assert!(lookup("T28").is_none());
        assert!(lookup("preemption").is_none());
        assert_eq!(
            unknown_message("T99"),
            "unknown tripwire: T99 (known: T1-T27, or a name such as silent-preemption)"
        );
    }

    #[test]
    fn per_engine_notes_exactly_where_the_spec_has_them() {
        let with_notes = [
            Tripwire::T1,
            Tripwire::T2,
            Tripwire::T5,
            Tripwire::T8,
            Tripwire::T9,
            Tripwire::T14,
        ];
        for e in all() {
            let expected = with_notes.contains(&e.tripwire);
            for eng in [Engine::Sglang, Engine::Trtllm, Engine::Llamacpp] {
                assert_eq!(e.note(eng).is_some(), expected, "{} {eng}", e.id());
            }
            assert!(e.note(Engine::Vllm).is_none());
        }
        // The report quotes these phrases from the notes.
        assert!(entry(Tripwire::T1)
            .note(Engine::Sglang)
            .unwrap()
            .contains("called a retraction"));
        assert!(entry(Tripwire::T1)
            .note(Engine::Trtllm)
            .unwrap()
            .contains("a request is paused for recompute"));
    }

    #[test]
    fn the_reference_documentation_repeats_every_note_verbatim() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tripwires.md");
        let doc = std::fs::read_to_string(path).expect("docs/tripwires.md");
        for e in all() {
            assert!(
                doc.contains(&format!("## {} {}\n", e.id(), e.slug)),
                "no section for {}",
                e.id()
            );
            for (eng, note) in e.notes {
                let line = format!("**On {}:** {note}", eng.name());
                assert!(doc.contains(&line), "docs/tripwires.md lacks: {line}");
            }
        }
        assert!(doc.contains(VERIFIED));
    }

    #[test]
    fn script_rules_point_to_lint_script() {
        for t in [Tripwire::T3, Tripwire::T13] {
            assert!(explain_text(entry(t), None).contains("inferlint lint-script"));
        }
    }

    #[test]
    fn explain_layout_and_engine_filter() {
        let text = explain_text(entry(Tripwire::T1), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "T1  Silent preemption  (silent-preemption)");
        assert!(text.contains("    Why it matters: "));
        assert!(text.contains("    On SGLang: An eviction"));
        assert!(text.contains("    On TensorRT-LLM: "));
        assert_eq!(
            *lines.last().unwrap(),
            "    Check: inferlint preemption before.json after.json"
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 92));
        let sglang = explain_text(entry(Tripwire::T1), Some(Engine::Sglang));
        assert!(sglang.contains("On SGLang:"));
        assert!(!sglang.contains("On TensorRT-LLM:"));
        let vllm = explain_text(entry(Tripwire::T1), Some(Engine::Vllm));
        assert!(!vllm.contains("On "));
    }

    #[test]
    fn wrapping_keeps_every_word_once() {
        let text = "a bb ccc dddd eeeee ffffff ggggggg";
        let lines = wrap(text, 10, "  ");
        assert!(lines.iter().all(|l| l.len() <= 10 && l.starts_with("  ")));
        let rejoined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(rejoined.join(" "), text);
        assert_eq!(
            wrap("averyveryverylongword", 5, " "),
            vec![" averyveryverylongword"]
        );
    }
}
