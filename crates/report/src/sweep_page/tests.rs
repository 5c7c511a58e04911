use super::*;

#[test]
fn a_relative_base_climbs_to_the_common_folder() {
    let b = |a: &str, c: &str| relative_base(Path::new(a), Path::new(c));
    assert_eq!(b("/w/sw", "/w/sw"), "");
    assert_eq!(b("/w", "/w/sw"), "sw/");
    assert_eq!(b("/w/out", "/w/a b#1"), "../a%20b%231/");
    assert_eq!(
        href(&b("/w", "/w/sw"), "points/01-max-concurrency-1"),
        "sw/points/01-max-concurrency-1/report.html"
    );
}
