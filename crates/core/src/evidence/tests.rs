use serde_json::json;

use super::*;
use crate::checks::t14;
use crate::result::CheckResult;

fn read(tripwire: &str, status: &str, evidence: Value) -> CheckResult {
    serde_json::from_value(json!({
        "tripwire": tripwire, "status": status, "message": "m", "evidence": evidence
    }))
    .unwrap()
}

fn written(r: &CheckResult) -> Value {
    serde_json::to_value(r).unwrap()["evidence"].clone()
}

#[test]
fn reading_back_picks_the_struct_by_tripwire() {
    let e = json!({"reported_num_gpu_blocks": 43, "inferred_usable_blocks": 42, "distinct_readings": 9});
    let r = read("T14", "pass", e.clone());
    assert_eq!(
        r.evidence,
        Evidence::T14(T14Evidence {
            reported_num_gpu_blocks: Some(Some(43)),
            inferred_usable_blocks: Some(Some(42)),
            distinct_readings: Some(9),
            ..Default::default()
        })
    );
    assert_eq!(written(&r), e);
    // The same keys under another tripwire are not T14's: kept as read.
    let r = read("T7", "pass", e.clone());
    assert!(
        matches!(r.evidence, Evidence::Unread(_)),
        "{:?}",
        r.evidence
    );
    assert_eq!(written(&r), e);
}

#[test]
fn empty_and_missing_input_have_their_own_variants() {
    assert_eq!(read("T1", "pass", json!({})).evidence, Evidence::None);
    let r: CheckResult =
        serde_json::from_value(json!({"tripwire": "T1", "status": "pass", "message": "m"}))
            .unwrap();
    assert_eq!(r.evidence, Evidence::None);
    assert_eq!(written(&r), json!({}));
    let r = read("T9", "unknown", json!({"missing_input": true}));
    assert_eq!(r.evidence, Evidence::MissingInput);
    assert_eq!(written(&r), json!({"missing_input": true}));
}

#[test]
fn absent_null_and_value_stay_apart() {
    let absent = read("T1", "fail", json!({"engine": "vllm"}));
    let null = read("T1", "fail", json!({"engine": "vllm", "preemptions": null}));
    let whole = read("T1", "fail", json!({"engine": "vllm", "preemptions": 22}));
    let float = read("T1", "fail", json!({"engine": "vllm", "preemptions": 22.0}));
    let p = |r: &CheckResult| r.evidence.t1().unwrap().preemptions;
    assert_eq!(p(&absent), None);
    assert_eq!(p(&null), Some(None));
    assert_eq!(p(&whole), Some(Some(Count::Whole(22))));
    assert_eq!(p(&float), Some(Some(Count::Float(22.0))));
    // Written back as read, down to the number's format.
    let text = |r: &CheckResult| serde_json::to_string(&r.evidence).unwrap();
    assert_eq!(text(&absent), r#"{"engine":"vllm"}"#);
    assert_eq!(text(&null), r#"{"engine":"vllm","preemptions":null}"#);
    assert_eq!(text(&whole), r#"{"engine":"vllm","preemptions":22}"#);
    assert_eq!(text(&float), r#"{"engine":"vllm","preemptions":22.0}"#);
}

#[test]
fn non_finite_floats_are_written_by_name_and_read_back() {
    let e = T9Evidence {
        share_min: Some(JsonF64(f64::INFINITY)),
        share_max: Some(JsonF64(f64::NEG_INFINITY)),
        blocks_per_request_min: Some(Some(JsonF64(f64::NAN))),
        ..Default::default()
    };
    let r = CheckResult::warn(Tripwire::T9, "m").with_evidence(e.clone());
    let v = written(&r);
    assert_eq!(
        v,
        json!({"share_min": "inf", "share_max": "-inf", "blocks_per_request_min": "NaN"})
    );
    let back = read("T9", "warn", v);
    assert_eq!(back.evidence, Evidence::T9(e));
}

#[test]
fn a_shape_no_struct_holds_is_kept_as_read() {
    // An older file: a key this version does not write, and one of another type.
    let e = json!({"preemptions": 3, "counter_name": "vllm:num_preemptions_total"});
    let r = read("T1", "fail", e.clone());
    assert!(matches!(r.evidence, Evidence::Unread(_)));
    assert_eq!(written(&r), e);
    assert!(r.evidence.t1().is_none());
    let e = json!({"requested": "thirty-two"});
    let r = read("T8", "fail", e.clone());
    assert!(matches!(r.evidence, Evidence::Unread(_)));
    assert_eq!(written(&r), e);
}

#[test]
fn the_log_label_goes_last_on_any_log_result() {
    let r = CheckResult::pass(Tripwire::T12, "no failure in log").with_log("a");
    assert_eq!(written(&r), json!({"log": "a"}));
    let r = CheckResult::pass(Tripwire::T5, "block size 16")
        .with_evidence(T5Evidence {
            block_size: Some(16),
            requested: Some(16),
            mamba_page_padding_pct: Some(None),
            pool_blocks: Some(Some(33)),
            ..Default::default()
        })
        .with_log("b");
    assert_eq!(
        serde_json::to_string(&r.evidence).unwrap(),
        r#"{"block_size":16,"requested":16,"mamba_page_padding_pct":null,"pool_blocks":33,"log":"b"}"#
    );
}

fn t14_pass(blocks: Option<u64>) -> CheckResult {
    CheckResult::pass(Tripwire::T14, "m").with_evidence(T14Evidence {
        reported_num_gpu_blocks: Some(blocks.map(|b| b + 1)),
        inferred_usable_blocks: Some(blocks),
        distinct_readings: Some(7),
        ..Default::default()
    })
}

#[test]
fn t9_takes_the_block_count_only_from_a_t14_pass() {
    assert_eq!(t14::usable_blocks(&t14_pass(Some(42))), Some(42));
    assert_eq!(t14::usable_blocks(&t14_pass(None)), None);
    let mut failed = t14_pass(Some(42));
    failed.status = Status::Fail;
    assert_eq!(t14::usable_blocks(&failed), None);
    // T14's keys on another tripwire's result are not T14's count.
    let mut other = t14_pass(Some(42));
    other.tripwire = Tripwire::T9;
    assert_eq!(t14::usable_blocks(&other), None);
    // Read back from results.json or a saved page: the same count.
    let text = serde_json::to_string(&t14_pass(Some(42))).unwrap();
    let back: CheckResult = serde_json::from_str(&text).unwrap();
    assert_eq!(t14::usable_blocks(&back), Some(42));
    // A count written as a float by some other tool is no block count.
    let r = read("T14", "pass", json!({"inferred_usable_blocks": 42.0}));
    assert_eq!(t14::usable_blocks(&r), None);
}

#[test]
fn engines_share_a_count_only_when_each_has_it() {
    let combined = |counts: &[Option<u64>]| {
        let per = counts
            .iter()
            .enumerate()
            .map(|(i, c)| (i.to_string(), t14_pass(*c)))
            .collect();
        crate::checks::per_engine::combine::<T14Evidence>(Tripwire::T14, per)
    };
    let same = combined(&[Some(5), Some(5)]);
    assert_eq!(t14::usable_blocks(&same), Some(5));
    let v = written(&same);
    assert_eq!(v["inferred_usable_blocks"], 5);
    assert_eq!(v["engines"]["1"]["status"], "pass");
    assert_eq!(v["engines"]["1"]["inferred_usable_blocks"], 5);
    // Read back, the engines' verdicts are typed too.
    let back = read("T14", "pass", v.clone());
    let engines = back.evidence.t14().unwrap().engines.as_ref().unwrap();
    assert_eq!(engines["0"].evidence.inferred_usable_blocks, Some(Some(5)));
    assert_eq!(written(&back), v);

    let differ = combined(&[Some(5), Some(6)]);
    assert_eq!(t14::usable_blocks(&differ), None);
    let v = written(&differ);
    assert!(v.get("inferred_usable_blocks").is_none(), "{v}");
    // The counts the engines share stay at the top: distinct_readings is 7 for both.
    assert_eq!(v["distinct_readings"], 7);
}
