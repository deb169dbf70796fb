//! Compliance with the draft, test by test: every MUST and SHOULD of a test's section (and
//! of the general rules it relies on: warm-up 4.5, seeds 4.3.3, tokenizer 4.4), met or not
//! and why.
//!
//! The draft (section 2) calls a test "not compliant" when any MUST is unmet, "conditionally
//! compliant" when every MUST but not every SHOULD is met, and unconditionally compliant
//! (here: "compliant") when all are. `--quick` runs shortened levels for smoke tests, which
//! the draft's minimum durations and counts forbid, so a quick test is never compliant.

use super::level::LevelOutcome;
use crate::record::run::WarmupReport;
use serde::{Deserialize, Serialize};

/// How binding a requirement is (RFC 2119 words as the draft uses them; RECOMMENDED is a
/// SHOULD, REQUIRED a MUST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Strength {
    Must,
    Should,
}

/// One requirement and whether the test met it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Requirement {
    /// The draft's section (`5.2.2.1`).
    pub section: String,
    pub strength: Strength,
    /// What the draft asks, in our words.
    pub text: String,
    pub met: bool,
    /// What was done, or why not.
    pub detail: String,
}

/// The verdict over all requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Verdict {
    #[serde(rename = "compliant")]
    Compliant,
    #[serde(rename = "conditionally compliant")]
    ConditionallyCompliant,
    #[serde(rename = "not compliant")]
    NotCompliant,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Self::Compliant => "compliant",
            Self::ConditionallyCompliant => "conditionally compliant",
            Self::NotCompliant => "not compliant",
        }
    }
}

/// A test's compliance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Compliance {
    pub requirements: Vec<Requirement>,
    pub verdict: Verdict,
}

impl Compliance {
    /// The requirements not met, strongest first.
    pub fn unmet(&self) -> impl Iterator<Item = &Requirement> {
        let musts = self
            .requirements
            .iter()
            .filter(|r| !r.met && r.strength == Strength::Must);
        let shoulds = self
            .requirements
            .iter()
            .filter(|r| !r.met && r.strength == Strength::Should);
        musts.chain(shoulds)
    }
}

/// Collects requirements as a procedure checks them.
#[derive(Debug, Default)]
pub struct Checklist {
    items: Vec<Requirement>,
}

impl Checklist {
    /// A MUST.
    pub fn must(&mut self, section: &str, text: &str, met: bool, detail: impl Into<String>) {
        self.push(Strength::Must, section, text, met, detail.into());
    }

    /// A SHOULD (or RECOMMENDED).
    pub fn should(&mut self, section: &str, text: &str, met: bool, detail: impl Into<String>) {
        self.push(Strength::Should, section, text, met, detail.into());
    }

    fn push(&mut self, strength: Strength, section: &str, text: &str, met: bool, detail: String) {
        self.items.push(Requirement {
            section: section.into(),
            strength,
            text: text.into(),
            met,
            detail,
        });
    }

    /// The requirements every test shares: full durations (not `--quick`), the warm-up of
    /// 4.5.1 before the first level, a reported seed (4.3.3), a declared tokenizer and
    /// counting option (4.4).
    pub fn common(&mut self, quick: bool, warmup: Option<&WarmupReport>, seed: u64) {
        self.must(
            "5",
            "levels run for the section's minimum duration and request counts",
            !quick,
            if quick {
                "--quick shortened every level (a smoke test, not a measurement)"
            } else {
                "full durations and counts"
            },
        );
        match warmup {
            Some(w) => self.must(
                "4.5.1",
                "warm up before measuring: at least 100 requests or 10,000 output tokens, whichever is greater, then drain the queue",
                w.compliant,
                format!(
                    "{}{} requests, {} output tokens{}",
                    if w.policy.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", w.policy)
                    },
                    w.requests,
                    w.output_tokens,
                    if w.capped { " (stopped at --warmup-max)" } else { "" }
                ),
            ),
            None => self.must(
                "4.5.1",
                "warm up before measuring",
                false,
                "no level ran, so no warm-up was recorded",
            ),
        }
        self.must(
            "4.3.3",
            "deterministic seed, reported",
            true,
            format!("seed {seed}, in test.json and every run.json"),
        );
        self.must(
            "4.4",
            "tokenizer, vocabulary size and token counting option declared",
            true,
            "in every run.json (tokenizer section)",
        );
    }

    /// Draft 4.8.1: the report MUST disclose the guardrails (input and output content
    /// filtering, the safety systems if known) and whether requests were refused. No record
    /// shows the filtering, so it is met when the configuration was stated (`--guardrails`,
    /// or the built-in simulator's own); the refusals are counted from the levels.
    /// `section`: "4.8.1", or with 5.1.5.1's "guardrail configuration" for the TTFT test.
    pub fn guardrails(&mut self, section: &str, stated: Option<&str>, levels: &[LevelOutcome]) {
        let refused: u64 = levels
            .iter()
            .map(|l| {
                l.summary
                    .requests
                    .failed_by_kind
                    .get("refused")
                    .copied()
                    .unwrap_or(0)
            })
            .sum();
        self.must(
            section,
            "guardrails disclosed: input and output filtering, the safety systems, refused requests",
            stated.is_some(),
            match stated {
                Some(g) => format!("{g}; {refused} requests refused"),
                None => format!(
                    "not stated: give --guardrails 'none' (or e.g. 'input and output: Llama Guard 3'); {refused} requests refused"
                ),
            },
        );
    }

    /// Draft 5.1.5.1: the configuration summary MUST state the prefix caching state.
    pub fn prefix_caching(&mut self, stated: Option<&str>) {
        self.must(
            "5.1.5.1",
            "prefix caching state stated in the configuration summary",
            stated.is_some(),
            stated.map_or_else(
                || "not stated: give --prefix-caching enabled (or disabled)".to_owned(),
                str::to_owned,
            ),
        );
    }

    /// The verdict (a quick test is never compliant: its first MUST is unmet).
    /// The draft's minimum (and, with `recommended_s`, its recommended) time per load level,
    /// judged on what the levels of `roles` measured (their windows, shortest and longest),
    /// not on the length asked: levels are stretched to the server's pace, so a "6 s" quick
    /// level ran 199–300 s on a slow server and was reported as 6.
    pub fn level_time(
        &mut self,
        section: &str,
        levels: &[LevelOutcome],
        roles: &[super::level::Role],
        (min_s, recommended_s): (f64, Option<f64>),
    ) {
        let ran: Vec<f64> = levels
            .iter()
            .filter(|l| roles.contains(&l.role))
            .map(|l| l.summary.window.duration_s)
            .collect();
        let shortest = ran.iter().copied().fold(f64::INFINITY, f64::min);
        let longest = ran.iter().copied().fold(0.0, f64::max);
        let detail = match ran.len() {
            0 => "no load level ran".to_owned(),
            1 => format!("the load level measured {shortest:.0} s"),
            n => format!("{n} load levels measured {shortest:.0}–{longest:.0} s"),
        };
        let met = |bound: f64| !ran.is_empty() && shortest >= bound;
        self.must(
            section,
            &format!("test duration at least {min_s:.0} s per load level"),
            met(min_s),
            detail.clone(),
        );
        if let Some(r) = recommended_s {
            self.should(
                section,
                &format!("test duration {r:.0} s per load level (RECOMMENDED)"),
                met(r),
                format!("{detail} (--level-duration {r:.0}s to meet it)"),
            );
        }
    }

    pub fn finish(self) -> Compliance {
        let must_ok = self
            .items
            .iter()
            .all(|r| r.met || r.strength != Strength::Must);
        let should_ok = self.items.iter().all(|r| r.met);
        Compliance {
            verdict: match (must_ok, should_ok) {
                (true, true) => Verdict::Compliant,
                (true, false) => Verdict::ConditionallyCompliant,
                _ => Verdict::NotCompliant,
            },
            requirements: self.items,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36, item 5: "test duration at least 60 s per load level: 6 s per level" when
    /// the levels, stretched to the server's pace, ran 199–300 s. The evidence is what ran.
    #[test]
    fn level_time_is_judged_on_what_the_levels_measured() {
        use super::super::level::Role;
        let level = |role, s| {
            let mut l = LevelOutcome {
                index: 0,
                label: String::new(),
                role,
                load: super::super::level::Load::Concurrency { concurrency: 1 },
                target: None,
                run: String::new(),
                summary: crate::metrics::summarize(&[], &crate::metrics::SummaryParams::default()),
                outcomes: Default::default(),
                verdict: super::super::level::LevelVerdict::Pass,
                signals: Default::default(),
                slo: None,
                server: Default::default(),
                cache: Default::default(),
                reason: String::new(),
            };
            l.summary.window.duration_s = s;
            l
        };
        let levels = [
            level(Role::Reference, 30.0),
            level(Role::Bracket, 199.4),
            level(Role::Bisect, 300.2),
        ];
        let mut c = Checklist::default();
        c.level_time(
            "5.2.2.1",
            &levels,
            &[Role::Bracket, Role::Bisect],
            (60.0, Some(300.0)),
        );
        let done = c.finish();
        assert_eq!(done.verdict, Verdict::ConditionallyCompliant, "{done:?}");
        let unmet: Vec<_> = done.unmet().collect();
        assert_eq!(unmet.len(), 1);
        assert_eq!(
            unmet[0].detail,
            "2 load levels measured 199–300 s (--level-duration 300s to meet it)"
        );
        let mut c = Checklist::default();
        c.level_time("5.3.2", &levels[..1], &[Role::Sweep], (60.0, None));
        assert_eq!(c.finish().verdict, Verdict::NotCompliant);
    }

    #[test]
    fn verdicts_follow_the_draft() {
        let mut c = Checklist::default();
        c.must("x", "a", true, "");
        c.should("y", "b", true, "");
        assert_eq!(c.finish().verdict, Verdict::Compliant);
        let mut c = Checklist::default();
        c.must("x", "a", true, "");
        c.should("y", "b", false, "");
        let done = c.finish();
        assert_eq!(done.verdict, Verdict::ConditionallyCompliant);
        assert_eq!(done.unmet().count(), 1);
        let mut c = Checklist::default();
        c.must("x", "a", false, "");
        c.should("y", "b", true, "");
        assert_eq!(c.finish().verdict, Verdict::NotCompliant);
        let mut c = Checklist::default();
        c.common(true, None, 1);
        assert_eq!(
            c.finish().verdict,
            Verdict::NotCompliant,
            "quick is never compliant"
        );
        assert_eq!(
            serde_json::to_value(Verdict::ConditionallyCompliant).unwrap(),
            "conditionally compliant"
        );
    }

    #[test]
    fn unstated_prefix_caching_and_guardrails_are_unmet_musts() {
        // Draft 5.1.5.1 and 4.8.1: the report MUST state both. Before, no test checked
        // either, and a report silent on them could read "compliant".
        let mut c = Checklist::default();
        c.prefix_caching(None);
        c.guardrails("4.8.1, 5.1.5.1", None, &[]);
        let done = c.finish();
        assert_eq!(done.verdict, Verdict::NotCompliant);
        let sections: Vec<&str> = done.unmet().map(|r| r.section.as_str()).collect();
        assert_eq!(sections, ["5.1.5.1", "4.8.1, 5.1.5.1"]);
        assert!(done.requirements[1]
            .detail
            .ends_with("; 0 requests refused"));
        let mut c = Checklist::default();
        c.prefix_caching(Some("enabled"));
        c.guardrails("4.8.1", Some("none"), &[]);
        let done = c.finish();
        assert_eq!(done.verdict, Verdict::Compliant);
        assert_eq!(done.requirements[1].detail, "none; 0 requests refused");
    }
}
