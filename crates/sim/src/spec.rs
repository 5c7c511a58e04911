//! Speculative decoding with vLLM's n-gram drafter (`--speculative-config '{"method": "ngram",
//! "num_speculative_tokens": 3, …}'`), as the real vLLM 0.32 CPU build recorded it
//! (`tests/fixtures/vllm-0.32-cpu/field/spec-ngram`): the drafter copies tokens from the context,
//! so what it proposes is accepted only when the model goes on repeating its prompt. On the
//! random dataset it proposed 21 drafts in 512 generated tokens and none was accepted; on
//! periodic prompts (`a b c d e f g a b c …`) 87 of its 111 draft tokens were.
//!
//! The simulated model continues a periodic prompt and writes fresh text after any other, so a
//! request's prompt decides its drafter's numbers. Only the counters are simulated: accepted
//! drafts do not make a request faster.

use serde::{Deserialize, Serialize};

/// Draft proposals per generated token on a prompt that does not repeat (21 of 512 recorded).
pub const FRESH_DRAFTS_PER_TOKEN: f64 = 21.0 / 512.0;
/// The share of draft tokens accepted on a periodic prompt (87 of 111 recorded).
pub const PERIODIC_ACCEPTED_SHARE: f64 = 87.0 / 111.0;
/// A prompt is periodic when this share of its words repeats the word one period earlier.
const PERIODIC_MATCH: f64 = 0.9;
/// The longest period looked for: bounds the cost on long prompts.
const MAX_PERIOD: usize = 256;

/// The drafter's settings, with vLLM's key names and defaults (`vllm/config/speculative.py`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecConfig {
    pub num_speculative_tokens: u32,
    pub prompt_lookup_max: u32,
    pub prompt_lookup_min: u32,
}

impl SpecConfig {
    /// `--speculative-config`'s JSON. Only the n-gram drafter is simulated: it needs no model.
    pub fn parse(json: &str) -> Result<SpecConfig, String> {
        let v: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| format!("--speculative-config is not JSON: {e}"))?;
        let method = v.get("method").and_then(|m| m.as_str()).unwrap_or("");
        if method != "ngram" {
            return Err(format!(
                "--speculative-config: the simulator drafts only with method \"ngram\", not {method:?}"
            ));
        }
        let int = |key: &str| v.get(key).and_then(serde_json::Value::as_u64);
        let k = int("num_speculative_tokens")
            .filter(|k| *k > 0)
            .ok_or("--speculative-config needs num_speculative_tokens of 1 or more")?;
        let max = int("prompt_lookup_max").unwrap_or(k);
        let min = int("prompt_lookup_min").unwrap_or(max.min(1));
        let fit = |x: u64| {
            u32::try_from(x).map_err(|_| format!("--speculative-config: {x} is too large"))
        };
        Ok(SpecConfig {
            num_speculative_tokens: fit(k)?,
            prompt_lookup_max: fit(max)?,
            prompt_lookup_min: fit(min)?,
        })
    }

    /// The dict `non-default args` shows, as vLLM prints the user's JSON.
    pub fn py_dict(&self) -> String {
        format!(
            "{{'method': 'ngram', 'num_speculative_tokens': {}, 'prompt_lookup_max': {}, 'prompt_lookup_min': {}}}",
            self.num_speculative_tokens, self.prompt_lookup_max, self.prompt_lookup_min
        )
    }

    /// The engine's `speculative_config=` in its "Initializing a V1 LLM engine" line.
    pub fn engine_repr(&self) -> String {
        format!(
            "SpeculativeConfig(method='ngram', model=None, num_spec_tokens={})",
            self.num_speculative_tokens
        )
    }
}

/// Whether a prompt's words repeat with some period, so that the model continues it.
pub fn periodic<S: AsRef<str>>(words: &[S]) -> bool {
    let n = words.len();
    (1..=(n / 2).min(MAX_PERIOD)).any(|p| {
        let same = (p..n)
            .filter(|&i| words[i].as_ref() == words[i - p].as_ref())
            .count();
        same as f64 >= PERIODIC_MATCH * (n - p) as f64
    })
}

/// The drafter's counters, added up over requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecCounts {
    pub drafts: u64,
    pub draft_tokens: u64,
    pub accepted: u64,
    /// Accepted tokens by their position in the draft.
    pub per_pos: Vec<u64>,
}

/// One request's drafter: its prompt's kind, the tokens it has left to generate, the fractions
/// carried from one token to the next (so the counts come out whole and the same on every
/// run), and how many of the tokens still to come were accepted drafts of an earlier step.
#[derive(Clone, Debug, Default)]
pub struct Drafter {
    periodic: bool,
    left: u64,
    proposals: f64,
    accepted: f64,
    owed: u64,
}

impl Drafter {
    /// A request that will generate `length` tokens.
    pub fn new(periodic: bool, length: u32) -> Drafter {
        // Half a proposal to start with: a request's count is its share rounded, not cut.
        Drafter {
            periodic,
            left: u64::from(length),
            proposals: 0.5,
            ..Drafter::default()
        }
    }

    /// Counts the drafts behind `n` new tokens. Each engine step yields one token and the
    /// draft tokens it accepted (they arrive as the next tokens); `k` tokens are drafted
    /// whenever the drafter proposes.
    pub fn tokens(&mut self, n: u32, k: u32, out: &mut SpecCounts) {
        if out.per_pos.len() < k as usize {
            out.per_pos.resize(k as usize, 0);
        }
        for _ in 0..n {
            self.left = self.left.saturating_sub(1);
            if self.owed > 0 {
                self.owed -= 1;
                continue;
            }
            let propose = self.periodic || {
                self.proposals += FRESH_DRAFTS_PER_TOKEN;
                let due = self.proposals >= 1.0;
                if due {
                    self.proposals -= 1.0;
                }
                due
            };
            if !propose {
                continue;
            }
            out.drafts += 1;
            out.draft_tokens += u64::from(k);
            if self.periodic {
                self.accepted += f64::from(k) * PERIODIC_ACCEPTED_SHARE;
                let a = (self.accepted.floor() as u64)
                    .min(u64::from(k))
                    .min(self.left);
                self.accepted -= a as f64;
                out.accepted += a;
                for p in out.per_pos.iter_mut().take(a as usize) {
                    *p += 1;
                }
                self.owed = a;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_config_parses_and_prints_as_vllm_does() {
        let c = SpecConfig::parse(
            r#"{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}"#,
        )
        .unwrap();
        assert_eq!(
            c.py_dict(),
            "{'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 3, 'prompt_lookup_min': 1}"
        );
        assert_eq!(
            c.engine_repr(),
            "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)"
        );
        assert!(
            SpecConfig::parse(r#"{"method": "eagle", "num_speculative_tokens": 3}"#)
                .unwrap_err()
                .contains("only with method \"ngram\"")
        );
        assert!(SpecConfig::parse("{")
            .unwrap_err()
            .starts_with("--speculative-config is not JSON"));
    }

    #[test]
    fn a_periodic_prompt_is_told_from_random_words() {
        let cycle: Vec<&str> = "a b c d e f g".split(' ').cycle().take(70).collect();
        assert!(periodic(&cycle));
        let random = "delta alpha golf echo india bravo hotel juliet charlie foxtrot alpha echo golf delta india hotel bravo";
        assert!(!periodic(&random.split(' ').collect::<Vec<_>>()));
        assert!(!periodic::<&str>(&[]));
    }

    #[test]
    fn the_counts_follow_the_recording() {
        // 8 requests of 64 tokens on random prompts: 21 drafts, none accepted.
        let mut fresh = SpecCounts::default();
        for _ in 0..8 {
            let mut d = Drafter::new(false, 64);
            for _ in 0..64 {
                d.tokens(1, 3, &mut fresh);
            }
        }
        assert!((18..=24).contains(&fresh.drafts), "{fresh:?}");
        assert_eq!((fresh.draft_tokens, fresh.accepted), (fresh.drafts * 3, 0));
        // Periodic prompts: about 78 % of the draft tokens accepted, never more tokens
        // accepted than generated.
        let mut rep = SpecCounts::default();
        let mut d = Drafter::new(true, 128);
        for _ in 0..128 {
            d.tokens(1, 3, &mut rep);
        }
        let share = rep.accepted as f64 / rep.draft_tokens as f64;
        assert!((0.7..0.85).contains(&share), "{rep:?}");
        assert!(rep.accepted < 128);
        assert_eq!(rep.per_pos.iter().sum::<u64>(), rep.accepted);
        assert!(rep.per_pos[0] >= rep.per_pos[2]);
    }
}
