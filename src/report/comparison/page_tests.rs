//! The comparison page from a hand-made `ComparisonReport`: exact Markdown, and the HTML's
//! charts with every run as a data point.

use super::*;
use crate::artifacts::ToolInfo;
use crate::compare::checklist::{Check, CheckStatus, Difference};
use crate::compare::metrics::Normalisation;
use crate::compare::{MetricRow, RunId, SystemSummary, SystemValues, Versus};
use crate::stats::compare::{Comparison, GroupSummary, WelchTest};

fn ids(system: &str, runs: usize) -> Vec<RunId> {
    (1..=runs as u64)
        .map(|seed| RunId {
            path: format!("runs/{system}-{seed}"),
            started_at: format!("2026-11-20T10:0{seed}:00Z"),
            seed,
            model: "m".into(),
            engine: Some("sim".into()),
        })
        .collect()
}

fn values(v: &[f64], ci: Option<(f64, f64)>) -> SystemValues {
    SystemValues {
        values: v.iter().map(|x| Some(*x)).collect(),
        n: v.len(),
        mean: Some(v.iter().sum::<f64>() / v.len() as f64),
        ci,
    }
}

/// A system's mean and its interval.
type Group = (f64, (f64, f64));

fn compared(
    (base, cand): (Group, Group),
    difference: f64,
    difference_ci: (f64, f64),
    p_value: f64,
    g: f64,
    verdict: Verdict,
    summary: &str,
) -> Versus {
    Versus {
        system: 1,
        difference_of_means: Some(difference),
        outcome: Outcome::Compared(Comparison {
            baseline: GroupSummary {
                runs: 3,
                mean: base.0,
                ci: base.1,
            },
            candidate: GroupSummary {
                runs: 3,
                mean: cand.0,
                ci: cand.1,
            },
            difference,
            difference_ci,
            relative_difference: Some(difference / base.0),
            welch: WelchTest {
                t: 0.0,
                df: 4.0,
                p_value,
            },
            hedges_g: Some(g),
            tolerance: 0.05,
            verdict,
        }),
        summary: summary.into(),
    }
}

fn row(metric: Metric, systems: Vec<SystemValues>, versus: Versus) -> MetricRow {
    MetricRow {
        metric,
        label: metric.label().into(),
        unit: metric.unit().into(),
        direction: metric.direction(),
        systems,
        versus_baseline: vec![versus],
    }
}

fn system(name: &str, runs: usize, norm: Normalisation) -> SystemSummary {
    SystemSummary {
        name: name.into(),
        runs: ids(name, runs),
        norm,
    }
}

fn checks(fail: bool) -> Vec<Check> {
    vec![
        Check {
            id: "workload".into(),
            section: "6.1, 6.4".into(),
            requirement: "Identical workload specification".into(),
            status: if fail {
                CheckStatus::Fail
            } else {
                CheckStatus::Pass
            },
            detail: "workload sha256:0123 in every run".into(),
        },
        Check {
            id: "production".into(),
            section: "6.4".into(),
            requirement: "Production-representative configuration".into(),
            status: CheckStatus::Manual,
            detail: "not in the records".into(),
        },
    ]
}

/// Two systems with 3 runs each: TTFT P50 worse by 30 ms, throughput no different.
fn three_runs() -> ComparisonReport {
    ComparisonReport {
        schema_version: 1,
        tool: ToolInfo {
            name: "servebench".into(),
            version: "9.9.9".into(),
        },
        confidence: 0.95,
        tolerance: 0.05,
        min_runs: 3,
        enough_runs: true,
        note:
            "95 % intervals by bootstrap over run-level values; verdicts against a ±5 % tolerance"
                .into(),
        systems: vec![
            system("a", 3, Normalisation::default()),
            system("b", 3, Normalisation::default()),
        ],
        metrics: vec![
            row(
                Metric::OutputTokensPerS,
                vec![
                    values(&[1000.0, 1010.0, 990.0], Some((990.0, 1010.0))),
                    values(&[1003.0, 998.0, 1005.0], Some((998.0, 1005.0))),
                ],
                compared(
                    ((1000.0, (990.0, 1010.0)), (1002.0, (998.0, 1005.0))),
                    2.0,
                    (-9.0, 13.0),
                    0.712,
                    0.3,
                    Verdict::NoDifference,
                    "no difference: +2.00 tok/s (+0.2 %)",
                ),
            ),
            row(
                Metric::TtftP50Ms,
                vec![
                    values(&[100.0, 102.0, 98.0], Some((98.0, 102.0))),
                    values(&[130.0, 128.0, 132.0], Some((128.0, 132.0))),
                ],
                compared(
                    ((100.0, (98.0, 102.0)), (130.0, (128.0, 132.0))),
                    30.0,
                    (27.0, 33.0),
                    0.0004,
                    11.52,
                    Verdict::Worse,
                    "worse: +30.0 ms (+30.0 %)",
                ),
            ),
        ],
        checklist: checks(false),
        differences: vec![Difference {
            setting: "/server/version".into(),
            values: vec!["\"0.6.1\"".into(), "\"0.7.0\"".into()],
        }],
        normalisation: Vec::new(),
    }
}

fn command() -> Vec<String> {
    [
        "/usr/local/bin/servebench",
        "compare",
        "label:a",
        "label:b",
        "--html",
        "cmp page.html",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn three_runs_each_make_claims_with_intervals() {
    let md = page(&three_runs(), &command())
        .html_file("compare.html")
        .to_markdown();
    let expected = "# servebench comparison: a vs b\n\
\n\
Comparison of 2 systems: a, baseline (3 runs) · b (3 runs)  \n\
95 % intervals by bootstrap over run-level values; verdicts against a ±5 % tolerance  \n\
b against a: worse on TTFT P50; no difference on Output throughput  \n\
\n\
## Key metrics\n\
\n\
One value per run (its P50, its throughput): the run is the unit of evidence. With at least 3 runs per system, each cell is the mean over runs with its interval (the hull of a percentile bootstrap and Student's t), and each system is compared with the baseline (the first) by the difference of the means with its interval, Welch's t-test and Hedges' g. The verdict reads the interval against the tolerance, not the p-value.\n\
\n\
**Key metrics: mean over runs \\[95 % interval, bootstrap and Student's t\\]**\n\
\n\
| Metric | Unit | a | b |\n\
|---|---:|---:|---:|\n\
| Output throughput | tok/s | 1000 \\[990.0, 1010\\] | 1002 \\[998.0, 1005\\] |\n\
| TTFT P50 | ms | 100.0 \\[98.0, 102.0\\] | 130.0 \\[128.0, 132.0\\] |\n\
\n\
**b against a**\n\
\n\
| Metric | Change | 95 % CI of change | Relative | Welch p | Hedges g | Verdict |\n\
|---|---:|---:|---:|---:|---:|---:|\n\
| Output throughput | +2.00 tok/s | -9.00 to +13.0 | +0.2 % | 0.712 | +0.30 | no difference |\n\
| TTFT P50 | +30.0 ms | +27.0 to +33.0 | +30.0 % | \\< 0.001 | +11.52 | worse |\n\
\n\
## Run-level values\n\
\n\
Each small dot is one run; the large dot beside them is the system's mean and the bar its 95 % interval (bootstrap and Student's t; drawn with at least 3 runs). The value axes do not start at zero, so that the spread between runs stays visible: a break on each axis marks the cut. Read differences from the tables.\n\
\n\
**Figure: Output throughput per run** (chart `compare-output-tokens-per-s` in compare.html, 8 data points). Output throughput (higher is better). b: no difference: +2.00 tok/s (+0.2 %).\n\
\n\
**Figure: TTFT P50 per run** (chart `compare-ttft-p50-ms` in compare.html, 8 data points). TTFT P50 (lower is better). b: worse: +30.0 ms (+30.0 %).\n\
\n\
## Fair-comparison checklist\n\
\n\
> **PASS:** Fair-comparison checklist (draft 6.1, 6.3, 6.4): nothing in the records makes the comparison unfair\n\
\n\
| Requirement | Draft | Met? | Evidence from the records |\n\
|---|---|---|---|\n\
| Identical workload specification | 6.1, 6.4 | met | workload sha256:0123 in every run |\n\
| Production-representative configuration | 6.4 | check by hand | not in the records |\n\
\n\
met / NOT MET: what the run records show; check by hand: what no record can show (the person comparing must confirm it); n/a: does not apply to these runs.\n\
\n\
## Configuration differences\n\
\n\
Settings whose recorded values differ, as JSON pointers into each run's configuration; `varies: a | b` when one system's runs disagree among themselves.\n\
\n\
| Setting | a | b |\n\
|---|---|---|\n\
| `/server/version` | \"0.6.1\" | \"0.7.0\" |\n\
\n\
## How to reproduce\n\
\n\
The comparison, from the same runs (servebench 9.9.9, tolerance ±5 %):\n\
\n\
```text\n\
servebench compare label:a label:b --html 'cmp page.html'\n\
```\n\
\n\
The runs it read, in order; each run folder's `report.html` holds the command line that made it.\n\
\n\
| System | Run | Started | Seed | Model | Engine | Folder |\n\
|---|---|---|---|---|---|---|\n\
| a | 1 | 2026-11-20T10:01:00Z | 1 | m | sim | `runs/a-1` |\n\
| a | 2 | 2026-11-20T10:02:00Z | 2 | m | sim | `runs/a-2` |\n\
| a | 3 | 2026-11-20T10:03:00Z | 3 | m | sim | `runs/a-3` |\n\
| b | 1 | 2026-11-20T10:01:00Z | 1 | m | sim | `runs/b-1` |\n\
| b | 2 | 2026-11-20T10:02:00Z | 2 | m | sim | `runs/b-2` |\n\
| b | 3 | 2026-11-20T10:03:00Z | 3 | m | sim | `runs/b-3` |\n\
";
    assert_eq!(md, expected, "\n{md}");
}

#[test]
fn every_run_is_a_data_point_in_the_html() {
    let p = page(&three_runs(), &command()).html_file("cmp.html");
    let ids: Vec<&str> = p.figures().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["compare-output-tokens-per-s", "compare-ttft-p50-ms"]);
    // 3 runs and a mean per system.
    assert!(p.figures().all(|f| f.points == 8));
    let html = p.to_html();
    assert_eq!(html.matches("class=\"ci\"").count(), 4);
    assert!(html.contains("<title>b, run 3 (seed 3): 132 ms</title>"));
    assert!(html.contains("<title>b, 95 % interval of the mean: 128 ms to 132 ms</title>"));
    assert!(p
        .to_markdown()
        .contains("(chart `compare-ttft-p50-ms` in cmp.html, 8 data points)"));
}

/// Issue 23: a chart whose value axis does not start at zero says so where it is drawn.
#[test]
fn value_axes_that_miss_zero_show_a_break() {
    let p = page(&three_runs(), &command());
    for f in p.figures() {
        assert_eq!(f.svg.matches("class=\"axis-break\"").count(), 1, "{}", f.id);
        assert!(
            f.svg.contains("The value axis starts at ") && f.svg.contains(", not at zero"),
            "{}",
            f.id
        );
    }
}

/// Two runs of the baseline and one of the other system: too few for a claim.
fn too_few_runs() -> ComparisonReport {
    let mut r = three_runs();
    r.enough_runs = false;
    r.note = "values only: a claim needs at least 3 runs per system (5 are better); runs per system: 2, 1".into();
    r.systems = vec![
        system(
            "a",
            2,
            Normalisation {
                gpus: Some(2.0),
                cost_per_hour: Some(4.5),
            },
        ),
        system("b", 1, Normalisation::default()),
    ];
    r.metrics = vec![row(
        Metric::TtftP50Ms,
        vec![values(&[100.0, 104.0], None), values(&[120.0], None)],
        Versus {
            system: 1,
            difference_of_means: Some(18.0),
            outcome: Outcome::NotEnoughRuns {
                baseline_runs: 2,
                candidate_runs: 1,
                required: 3,
            },
            summary: "+18.0 ms (+17.6 %) (no claim: fewer than 3 runs)".into(),
        },
    )];
    r.checklist = checks(true);
    r.differences = Vec::new();
    r.normalisation = vec!["Output per GPU = output tokens/s ÷ GPUs serving the model".into()];
    r
}

#[test]
fn too_few_runs_give_values_and_no_claim() {
    let r = too_few_runs();
    let md = page(&r, &command()).html_file("compare.html").to_markdown();
    let expected = "# servebench comparison: a vs b\n\
\n\
Comparison of 2 systems: a, baseline (2 runs) · b (1 run)  \n\
values only: a claim needs at least 3 runs per system (5 are better); runs per system: 2, 1  \n\
b against a: no claim (fewer than 3 runs per system)  \n\
\n\
## Key metrics\n\
\n\
One value per run (its P50, its throughput): the run is the unit of evidence. With at least 3 runs per system, each cell is the mean over runs with its interval (the hull of a percentile bootstrap and Student's t), and each system is compared with the baseline (the first) by the difference of the means with its interval, Welch's t-test and Hedges' g. The verdict reads the interval against the tolerance, not the p-value.\n\
\n\
**Key metrics: the value of each run**\n\
\n\
| Metric | Unit | a | b |\n\
|---|---:|---:|---:|\n\
| TTFT P50 | ms | 100.0, 104.0 | 120.0 |\n\
\n\
**b against a: differences of the means, no claim (\\< 3 runs per system)**\n\
\n\
| Metric | Change | Relative |\n\
|---|---:|---:|\n\
| TTFT P50 | +18.0 ms | +17.6 % |\n\
\n\
## Run-level values\n\
\n\
Each small dot is one run; the large dot beside them is the system's mean and the bar its 95 % interval (bootstrap and Student's t; drawn with at least 3 runs). The value axes do not start at zero, so that the spread between runs stays visible: a break on each axis marks the cut. Read differences from the tables.\n\
\n\
**Figure: TTFT P50 per run** (chart `compare-ttft-p50-ms` in compare.html, 5 data points). TTFT P50 (lower is better). b: +18.0 ms (+17.6 %) (no claim: fewer than 3 runs).\n\
\n\
## Fair-comparison checklist\n\
\n\
> **FAIL:** Fair-comparison checklist (draft 6.1, 6.3, 6.4): 1 item(s) NOT MET — read the comparison with that in mind\n\
\n\
| Requirement | Draft | Met? | Evidence from the records |\n\
|---|---|---|---|\n\
| Identical workload specification | 6.1, 6.4 | NOT MET | workload sha256:0123 in every run |\n\
| Production-representative configuration | 6.4 | check by hand | not in the records |\n\
\n\
met / NOT MET: what the run records show; check by hand: what no record can show (the person comparing must confirm it); n/a: does not apply to these runs.\n\
\n\
## Configuration differences\n\
\n\
None: every recorded setting is the same for all systems.\n\
\n\
## Normalisation (draft 6.2)\n\
\n\
- Output per GPU = output tokens/s ÷ GPUs serving the model\n\
\n\
| System | GPUs | Cost ($/h) |\n\
|---|---:|---:|\n\
| a | 2 | 4.5 |\n\
| b | each run's own | – |\n\
\n\
## How to reproduce\n\
\n\
The comparison, from the same runs (servebench 9.9.9, tolerance ±5 %):\n\
\n\
```text\n\
servebench compare label:a label:b --html 'cmp page.html'\n\
```\n\
\n\
The runs it read, in order; each run folder's `report.html` holds the command line that made it.\n\
\n\
| System | Run | Started | Seed | Model | Engine | Folder |\n\
|---|---|---|---|---|---|---|\n\
| a | 1 | 2026-11-20T10:01:00Z | 1 | m | sim | `runs/a-1` |\n\
| a | 2 | 2026-11-20T10:02:00Z | 2 | m | sim | `runs/a-2` |\n\
| b | 1 | 2026-11-20T10:01:00Z | 1 | m | sim | `runs/b-1` |\n\
";
    assert_eq!(md, expected, "\n{md}");
}
