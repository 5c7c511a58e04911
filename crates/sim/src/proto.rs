//! The API server ↔ engine channel: one JSON object per line over a Unix socket pair that the
//! API server creates and passes to the engine process as fd 3. The engine answers with a
//! batch per loop iteration, so a step's tokens, finishes and gauges arrive together.

use serde::{Deserialize, Serialize};

use super::sched::Finished;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ToEngine {
    Add {
        id: u64,
        prompt: u32,
        max_tokens: u32,
        eos_after: Option<u32>,
        /// Leading prompt tokens served from the prefix cache: not computed again.
        #[serde(default)]
        cached: u32,
    },
    Abort {
        id: u64,
    },
    /// Empty the prefix cache (vLLM's `/reset_prefix_cache`, SGLang's `/flush_cache`); with
    /// `reset_running` the running requests are preempted first. Answered by
    /// [`ToApi::CacheReset`], in the order asked.
    ResetPrefixCache {
        #[serde(default)]
        reset_running: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ToApi {
    /// Sent first: the engine's own pid (it differs from the spawned child's with double-fork).
    Hello {
        pid: u32,
    },
    /// The engine has sized its KV pool and is serving.
    Ready {
        num_gpu_blocks: u32,
    },
    Out(Batch),
    /// The answer to [`ToEngine::ResetPrefixCache`]: whether the cache was emptied.
    CacheReset {
        success: bool,
    },
}

/// What the engine's steps since the last batch produced, and its gauges after the last one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    pub tokens: Vec<(u64, u32)>,
    pub finished: Vec<Finished>,
    pub preemptions: u64,
    pub iteration_tokens: Vec<u32>,
    pub running: u32,
    pub waiting: u32,
    pub kv_usage: f64,
}

/// One message as a line.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    #[allow(
        clippy::expect_used,
        reason = "the messages are plain structs with string keys, serialized to memory"
    )]
    let mut v = serde_json::to_vec(msg).expect("protocol messages serialise");
    v.push(b'\n');
    v
}

/// Splits complete lines off the front of `buf`, leaving a partial line in place.
pub fn drain_lines(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(p) = buf[start..].iter().position(|&b| b == b'\n') {
        out.push(buf[start..start + p].to_vec());
        start += p + 1;
    }
    buf.drain(..start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_partial_lines_wait() {
        let a = ToEngine::Add {
            id: 3,
            prompt: 88,
            max_tokens: 1000,
            eos_after: None,
            cached: 0,
        };
        let mut buf = encode(&a);
        buf.extend_from_slice(b"{\"t\":\"abo");
        let lines = drain_lines(&mut buf);
        assert_eq!(lines.len(), 1);
        assert_eq!(serde_json::from_slice::<ToEngine>(&lines[0]).unwrap(), a);
        assert_eq!(buf, b"{\"t\":\"abo");
        buf.extend_from_slice(b"rt\",\"id\":3}\n");
        let lines = drain_lines(&mut buf);
        assert_eq!(
            serde_json::from_slice::<ToEngine>(&lines[0]).unwrap(),
            ToEngine::Abort { id: 3 }
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn a_reset_and_its_answer_round_trip() {
        let ask = ToEngine::ResetPrefixCache {
            reset_running: true,
        };
        let line = encode(&ask);
        assert_eq!(serde_json::from_slice::<ToEngine>(&line).unwrap(), ask);
        let answer: ToApi = serde_json::from_str(r#"{"t":"cache_reset","success":false}"#).unwrap();
        assert_eq!(answer, ToApi::CacheReset { success: false });
    }
}
