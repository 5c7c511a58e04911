use super::*;
use proptest::prelude::*;

fn chart(values: Vec<Vec<Option<f64>>>, kind: LineKind) -> TimeChart {
    let n = values[0].len();
    TimeChart {
        t: (0..n).map(|i| i as f64 * 0.25).collect(),
        lines: values
            .into_iter()
            .enumerate()
            .map(|(i, v)| Line {
                name: format!("series {i}"),
                class: ["s1", "s2", "s3"][i % 3],
                kind,
                values: v,
            })
            .collect(),
        refs: vec![],
        events: vec![],
        event_words: ("preemption".into(), "preemptions".into()),
        y_max: None,
        y_suffix: "",
        height: 240.0,
        label: "test chart".into(),
    }
}

fn paths_of(svg: &str, class: &str) -> Vec<String> {
    let needle = format!("class=\"{class}\" d=\"");
    svg.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &svg[i + needle.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// Every number pair of a path, as absolute points (H and V moves carry the other coordinate).
fn path_points(d: &str) -> Vec<(f64, f64)> {
    let mut pts = Vec::new();
    let (mut x, mut y) = (0.0, 0.0);
    let mut cmd = ' ';
    let mut nums: Vec<f64> = Vec::new();
    let flush =
        |cmd: char, nums: &mut Vec<f64>, x: &mut f64, y: &mut f64, pts: &mut Vec<(f64, f64)>| {
            match cmd {
                'M' | 'L' => {
                    for p in nums.chunks(2) {
                        (*x, *y) = (p[0], p[1]);
                        pts.push((*x, *y));
                    }
                }
                'Q' => {
                    for p in nums.chunks(2) {
                        pts.push((p[0], p[1]));
                    }
                    if nums.len() >= 2 {
                        (*x, *y) = (nums[nums.len() - 2], nums[nums.len() - 1]);
                    }
                }
                'H' => {
                    for v in nums.iter() {
                        *x = *v;
                        pts.push((*x, *y));
                    }
                }
                'V' => {
                    for v in nums.iter() {
                        *y = *v;
                        pts.push((*x, *y));
                    }
                }
                _ => {}
            }
            nums.clear();
        };
    let mut num = String::new();
    for ch in d.chars() {
        if ch.is_ascii_alphabetic() {
            if !num.is_empty() {
                nums.push(num.parse().unwrap());
                num.clear();
            }
            flush(cmd, &mut nums, &mut x, &mut y, &mut pts);
            cmd = ch;
        } else if ch == ' ' || ch == ',' {
            if !num.is_empty() {
                nums.push(num.parse().unwrap());
                num.clear();
            }
        } else {
            num.push(ch);
        }
    }
    if !num.is_empty() {
        nums.push(num.parse().unwrap());
    }
    flush(cmd, &mut nums, &mut x, &mut y, &mut pts);
    pts
}

#[test]
fn nice_ticks_of_the_spec() {
    assert_eq!(nice_ticks(0.0, 32.0), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
    assert_eq!(nice_ticks(0.0, 100.0), vec![0.0, 25.0, 50.0, 75.0, 100.0]);
    assert_eq!(nice_ticks(0.0, 10.0), vec![0.0, 2.5, 5.0, 7.5, 10.0]);
    assert_eq!(nice_ticks(0.0, 0.93), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(nice_ticks(5.0, 5.0), vec![5.0, 5.25, 5.5, 5.75, 6.0]);
    assert_eq!(nice_ticks(0.0, 0.3), vec![0.0, 0.1, 0.2, 0.3]);
    assert_eq!(tick_label(2.5), "2.5");
    assert_eq!(tick_label(25000.0), "25,000");
    assert_eq!(tick_label(0.25), "0.25");
}

proptest! {
    #[test]
    fn nice_ticks_cover_the_range_in_at_most_seven(lo in -1e6f64..1e6, span in 0.0f64..1e6) {
        let hi = lo + span;
        let t = nice_ticks(lo, hi);
        prop_assert!(t.len() >= 2 && t.len() <= 7, "{lo}..{hi}: {t:?}");
        prop_assert!(t[0] <= lo + 1e-9 * lo.abs().max(1.0));
        prop_assert!(*t.last().unwrap() >= hi - 1e-9 * hi.abs().max(1.0));
        prop_assert!(t.windows(2).all(|w| w[1] > w[0]));
    }
}

#[test]
fn a_missing_value_breaks_the_line() {
    let d = chart(
        vec![vec![Some(1.0), Some(2.0), None, Some(3.0), Some(4.0)]],
        LineKind::Line,
    )
    .render()
    .unwrap();
    let svg = d.svg.into_string();
    let path = &paths_of(&svg, "line s1")[0];
    assert_eq!(path.matches('M').count(), 2, "{path}");
    assert_eq!(path.matches('L').count(), 2, "{path}");
    // Without the gap it is one stroke.
    let d = chart(vec![vec![Some(1.0), Some(2.0), Some(3.0)]], LineKind::Line)
        .render()
        .unwrap();
    let path = paths_of(&d.svg.into_string(), "line s1")[0].clone();
    assert_eq!(path.matches('M').count(), 1);
}

#[test]
fn a_step_line_moves_horizontally_then_vertically() {
    let d = chart(
        vec![vec![Some(10.0), Some(10.0), Some(7.0), Some(8.0)]],
        LineKind::Step,
    )
    .render()
    .unwrap();
    let path = paths_of(&d.svg.into_string(), "line s1")[0].clone();
    assert!(path.starts_with('M'));
    assert!(!path.contains('L'), "{path}");
    assert_eq!(path.matches('H').count(), 3);
    assert_eq!(path.matches('V').count(), 3);
    let pts = path_points(&path);
    // Every move changes one coordinate only.
    for w in pts.windows(2) {
        assert!(w[0].0 == w[1].0 || w[0].1 == w[1].1, "{w:?}");
    }
}

#[test]
fn marks_stay_inside_the_margins() {
    let mut ch = chart(
        vec![
            vec![
                Some(0.0),
                Some(32.0),
                Some(12.5),
                None,
                Some(40.0),
                Some(0.0),
            ],
            vec![
                Some(22.0),
                Some(0.0),
                Some(1.0),
                Some(3.0),
                Some(4.0),
                Some(5.0),
            ],
        ],
        LineKind::Area,
    );
    ch.refs.push(RefLine {
        label: "asked for 50".into(),
        y: 50.0,
    });
    ch.events = vec![
        Event { t: 0.0, count: 2.0 },
        Event {
            t: 1.25,
            count: 1.0,
        },
    ];
    let svg = ch.render().unwrap().svg.into_string();
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, TOP, ch.height - BOTTOM);
    let mut n = 0;
    for class in ["line s1", "line s2", "area s1", "area s2", "ev"] {
        for d in paths_of(&svg, class) {
            for (x, y) in path_points(&d) {
                n += 1;
                assert!(
                    x >= x0 && x <= x1 && y >= y0 && y <= y1,
                    "{class}: ({x}, {y}) outside"
                );
            }
        }
    }
    assert!(n > 20);
    assert_eq!(LEFT, 48.0);
    assert_eq!(RIGHT, 92.0);
    assert_eq!(TOP, 18.0);
    assert_eq!(BOTTOM, 34.0);
}

#[test]
fn labels_are_escaped() {
    let mut ch = chart(vec![vec![Some(1.0), Some(2.0)]], LineKind::Line);
    ch.label = "</script><img src=x onerror=alert(1)>".into();
    ch.refs.push(RefLine {
        label: "<b>asked</b> & more".into(),
        y: 1.0,
    });
    let svg = ch.render().unwrap().svg.into_string();
    assert!(!svg.contains("<img"));
    assert!(!svg.contains("<b>"));
    assert!(svg.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(svg.contains("&lt;b&gt;asked&lt;/b&gt; &amp; more"));
    let bars = BarChart {
        bars: vec![Bar {
            label: "<x>".into(),
            value: 1.0,
            text: "\"q\"".into(),
            class: "s1",
        }],
        label: "b".into(),
    }
    .render()
    .into_string();
    assert!(bars.contains("&lt;x&gt;") && !bars.contains("<x>"));
    assert!(bars.contains("data-tip=\"&lt;x&gt;: &quot;q&quot;\""));
}

#[test]
fn event_markers_carry_their_count_and_title() {
    let mut ch = chart(vec![vec![Some(1.0); 8]], LineKind::Line);
    ch.events = vec![
        Event { t: 0.5, count: 1.0 },
        Event { t: 1.0, count: 3.0 },
        Event {
            t: 1.25,
            count: 0.0,
        },
    ];
    let d = ch.render().unwrap();
    let svg = d.svg.into_string();
    assert_eq!(svg.matches("class=\"ev\"").count(), 2);
    assert!(svg.contains("data-count=\"3\""));
    assert!(svg.contains("<title>1 preemption at 0.5 s</title>"));
    assert!(svg.contains("<title>3 preemptions at 1.0 s</title>"));
    assert_eq!(d.events.len(), 2);
}

#[test]
fn a_series_of_the_wrong_length_is_an_error() {
    let mut ch = chart(vec![vec![Some(1.0), Some(2.0), Some(3.0)]], LineKind::Line);
    ch.lines.push(Line {
        name: "short".into(),
        class: "s2",
        kind: LineKind::Line,
        values: vec![Some(1.0)],
    });
    assert_eq!(
        ch.render().unwrap_err(),
        ChartError::LengthMismatch {
            name: "short".into(),
            len: 1,
            expected: 3
        }
    );
    assert_eq!(
        ch.render().unwrap_err().to_string(),
        "series 'short' has 1 values for 3 times"
    );
    let one = chart(vec![vec![Some(1.0)]], LineKind::Line);
    assert_eq!(one.render().unwrap_err(), ChartError::TooFewReadings);
}

#[test]
fn bars_are_proportional_from_x_120_with_a_square_baseline() {
    let chart = BarChart {
        bars: vec![
            Bar {
                label: "KV cache".into(),
                value: 26093.0,
                text: "26,093".into(),
                class: "s1",
            },
            Bar {
                label: "32 requests".into(),
                value: 52186.0,
                text: "52,186".into(),
                class: "s2",
            },
            Bar {
                label: "none".into(),
                value: 0.0,
                text: "0".into(),
                class: "s3",
            },
        ],
        label: "cache".into(),
    };
    let svg = chart.render().into_string();
    let widths: Vec<f64> = ["s1", "s2"]
        .iter()
        .map(|cl| {
            let d = &paths_of(&svg, cl)[0];
            let pts = path_points(d);
            // Starts at the baseline, and the edge at the baseline is straight (square).
            assert_eq!(pts[0].0, BAR_X, "{d}");
            assert!(d.ends_with(&format!("H{}Z", BAR_X as i64)), "{d}");
            pts.iter().map(|p| p.0).fold(0.0, f64::max) - BAR_X
        })
        .collect();
    assert!((widths[1] - (WIDTH - BAR_X - RIGHT)).abs() < 0.11);
    assert!((widths[0] * 2.0 - widths[1]).abs() < 0.3, "{widths:?}");
    assert!(svg.contains("class=\"baseline\" x1=\"120\" x2=\"120\""));
}

#[test]
fn a_long_recording_is_thinned_and_keeps_its_extremes() {
    let n = 345_600;
    let mut running: Vec<Option<f64>> = (0..n).map(|i| Some((i % 7) as f64)).collect();
    running[200_001] = Some(32.0);
    let mut ceiling: Vec<Option<f64>> = vec![Some(10.0); n];
    ceiling[123_457] = Some(5.0);
    let mut ch = chart(vec![running, ceiling], LineKind::Line);
    ch.lines[1].kind = LineKind::Step;
    ch.events = (0..22)
        .map(|i| Event {
            t: i as f64 * 3000.0 + 0.25,
            count: 1.0,
        })
        .collect();
    let d = ch.render().unwrap();
    assert_eq!(d.thinned, Some((n, PLOT_WIDTH as usize)));
    assert!(d.rows.len() <= PLOT_WIDTH as usize);
    let max_running = d
        .rows
        .iter()
        .filter_map(|r| r.cells[0].max())
        .fold(0.0, f64::max);
    let min_ceiling = d
        .rows
        .iter()
        .filter_map(|r| r.cells[1].min())
        .fold(f64::MAX, f64::min);
    assert_eq!(max_running, 32.0);
    assert_eq!(min_ceiling, 5.0);
    assert_eq!(d.events.iter().map(|e| e.2).sum::<f64>(), 22.0);
    let svg = d.svg.into_string();
    assert!(svg.contains("thinned"));
    assert!(svg.len() < 200_000, "{}", svg.len());
}

#[test]
fn long_bar_labels_sit_above_their_bars() {
    let chart = BarChart {
        bars: vec![
            Bar {
                label: "KV cache".into(),
                value: 1.0,
                text: "1".into(),
                class: "s1",
            },
            Bar {
                label: "32 requests at full length".into(),
                value: 2.0,
                text: "2".into(),
                class: "s2",
            },
        ],
        label: "cache".into(),
    };
    let svg = chart.render().into_string();
    assert!(!svg.contains("text-anchor=\"end\""), "{svg}");
    assert!(svg.contains("class=\"label\" x=\"120\""));
    let short = BarChart {
        bars: vec![chart.bars[0].clone()],
        label: "c".into(),
    }
    .render()
    .into_string();
    assert!(short.contains("class=\"label\" x=\"112\"") && short.contains("text-anchor=\"end\""));
}

#[test]
fn a_thinned_series_is_drawn_as_its_band_inside_the_margins() {
    let n = 20_000;
    let v: Vec<Option<f64>> = (0..n).map(|i| Some(((i * 7919) % 13) as f64)).collect();
    let d = chart(vec![v], LineKind::Step).render().unwrap();
    let svg = d.svg.into_string();
    let bands = paths_of(&svg, "band s1");
    assert_eq!(bands.len(), 1);
    assert!(paths_of(&svg, "line s1").is_empty());
    let pts = path_points(&bands[0]);
    let top = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    let bottom = pts.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    // The band reaches the highest (12) and lowest (0) values.
    let y = |v: f64| TOP + (1.0 - v / 15.0) * (240.0 - BOTTOM - TOP);
    assert!((top - y(12.0)).abs() < 0.11, "{top}");
    assert!((bottom - y(0.0)).abs() < 0.11, "{bottom}");
    for (x, yy) in pts {
        assert!((LEFT..=WIDTH - RIGHT).contains(&x) && (TOP..=240.0 - BOTTOM).contains(&yy));
    }
}
