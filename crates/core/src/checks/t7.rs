//! T7 crash-after-ready, from a probe's outcome: the model list, one completion, a burst of
//! concurrent completions, then `/health`. A server that is "ready" but dies on its first real
//! request fails here, before a benchmark's numbers are trusted (docs/design/tripwires.md#t7). The
//! requests themselves are inferlint-run's `probe`; the boot-log side of T7 is T12's classifier.

use crate::evidence::{ProbeBurst, ProbeReply, T7Evidence};
use crate::result::{CheckResult, Tripwire};

/// One request's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub ok: bool,
    pub seconds: f64,
    pub error: Option<String>,
}

/// What a probe found.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeOutcome {
    /// `/v1/models` could not be read (why).
    NoModel(String),
    /// The requests were sent: the first one, the burst (None when the first failed, so no
    /// burst was sent) and whether `/health` answered afterwards.
    Served {
        model: String,
        first: Reply,
        burst: Option<Vec<Reply>>,
        alive_after: bool,
    },
}

fn reply_json(r: &Reply) -> ProbeReply {
    ProbeReply {
        ok: r.ok,
        seconds: (r.seconds * 1000.0).round() / 1000.0,
        error: r.error.clone(),
    }
}

/// T7's verdict on a probe: PASS when the first request and the whole burst were served and the
/// server still answers; else FAIL naming what broke.
pub fn check(outcome: &ProbeOutcome) -> CheckResult {
    let (model, first, burst, alive) = match outcome {
        ProbeOutcome::NoModel(e) => {
            return CheckResult::fail(Tripwire::T7, format!("cannot list models: {e}"))
                .with_evidence(T7Evidence {
                    model: Some(None),
                    ..Default::default()
                })
        }
        ProbeOutcome::Served {
            model,
            first,
            burst,
            alive_after,
        } => (model, first, burst, *alive_after),
    };
    let Some(burst) = burst.as_ref().filter(|_| first.ok) else {
        return CheckResult::fail(
            Tripwire::T7,
            format!(
                "first request failed: {}",
                first.error.clone().unwrap_or_default()
            ),
        )
        .with_evidence(T7Evidence {
            model: Some(Some(model.clone())),
            first: Some(reply_json(first)),
            alive_after: Some(alive),
            ..Default::default()
        });
    };
    let n = burst.len();
    let failed = burst.iter().filter(|r| !r.ok).count();
    let max_seconds = burst.iter().map(|r| r.seconds).fold(0.0_f64, f64::max);
    let errors: Vec<&str> = burst.iter().filter_map(|r| r.error.as_deref()).collect();
    let burst_json = ProbeBurst {
        concurrency: n as u64,
        failed: failed as u64,
        max_seconds: (max_seconds * 1000.0).round() / 1000.0,
        errors: errors.iter().take(3).map(|e| e.to_string()).collect(),
    };
    let result = if failed > 0 {
        CheckResult::fail(Tripwire::T7, format!("{failed}/{n} burst requests failed"))
    } else if !alive {
        CheckResult::fail(Tripwire::T7, "server died after burst")
    } else {
        CheckResult::pass(
            Tripwire::T7,
            format!("1 + {n} concurrent requests served, server alive"),
        )
    };
    result.with_evidence(T7Evidence {
        model: Some(Some(model.clone())),
        first: Some(reply_json(first)),
        burst: Some(burst_json),
        alive_after: Some(alive),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use serde_json::{json, Value};

    fn ok(seconds: f64) -> Reply {
        Reply {
            ok: true,
            seconds,
            error: None,
        }
    }

    fn served(first: Reply, burst: Option<Vec<Reply>>, alive_after: bool) -> ProbeOutcome {
        ProbeOutcome::Served {
            model: "m".into(),
            first,
            burst,
            alive_after,
        }
    }

    #[test]
    fn a_served_burst_passes_and_one_failure_or_a_dead_server_fails() {
        let pass = check(&served(ok(0.1), Some(vec![ok(0.2); 8]), true));
        assert_eq!(pass.status, Status::Pass);
        assert_eq!(
            pass.message,
            "1 + 8 concurrent requests served, server alive"
        );
        assert_eq!(pass.evidence_json()["burst"]["max_seconds"], json!(0.2));
        let mut burst = vec![ok(0.2); 8];
        burst[3] = Reply {
            ok: false,
            seconds: 1.0,
            error: Some("HTTP 500".into()),
        };
        let one_failed = check(&served(ok(0.1), Some(burst), true));
        assert_eq!(
            (one_failed.status, one_failed.message.as_str()),
            (Status::Fail, "1/8 burst requests failed")
        );
        assert_eq!(
            one_failed.evidence_json()["burst"]["errors"],
            json!(["HTTP 500"])
        );
        let died = check(&served(ok(0.1), Some(vec![ok(0.2); 8]), false));
        assert_eq!(
            (died.status, died.message.as_str()),
            (Status::Fail, "server died after burst")
        );
    }

    #[test]
    fn a_failed_first_request_or_no_model_list_fails() {
        let first = Reply {
            ok: false,
            seconds: 0.5,
            error: Some("cannot connect".into()),
        };
        let r = check(&served(first, None, false));
        assert_eq!(r.message, "first request failed: cannot connect");
        assert!(r.evidence_json().get("burst").is_none());
        let r = check(&ProbeOutcome::NoModel("HTTP 404 Not Found".into()));
        assert_eq!(
            (r.status, r.message.as_str()),
            (Status::Fail, "cannot list models: HTTP 404 Not Found")
        );
        assert_eq!(r.evidence_json()["model"], Value::Null);
    }
}
