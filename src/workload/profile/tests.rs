//! The presets against hand-computed figures: their distributions, their consistency with
//! their scenarios, and their SLO defaults in `--slo`'s grammar.

use super::*;
use crate::workload::lengths::LengthDist;
use crate::workload::Scenario;
use rand::SeedableRng;

#[test]
fn every_preset_is_a_valid_scenario_with_its_profile() {
    for id in PRESET_IDS {
        let s = preset(id).unwrap();
        s.validate().unwrap_or_else(|e| panic!("{id}: {e}"));
        let p = s.profile.as_ref().unwrap();
        assert_eq!(p.id, id);
        assert_eq!(s.name, id);
        assert_eq!(p.source, PRESET_SOURCE);
        if let Some(slo) = &p.slo {
            crate::metrics::slo::SloSpec::parse(slo, 0.99)
                .unwrap_or_else(|e| panic!("{id}'s SLO {slo}: {e}"));
        }
        // Throughput-oriented profiles are judged on saturation alone.
        assert_eq!(
            p.slo.is_none(),
            p.latency == LatencyClass::Throughput,
            "{id}"
        );
    }
    assert_eq!(
        preset("chat").unwrap().name,
        "CHAT",
        "ids are case-insensitive"
    );
    assert!(preset("NOPE").is_none());
}

/// Hand-computed: range(16, 8192) has mu = (ln 16 + ln 8192)/2 = 5.891751, median
/// e^mu = √131072 = 362.04, sigma = (ln 8192 − ln 16)/5 = ln 512 / 5 = 1.24766.
#[test]
fn a_range_is_a_log_normal_centred_on_its_geometric_middle() {
    let LengthDist::LogNormal {
        mu,
        sigma,
        min,
        max,
    } = presets::range(16, 8192)
    else {
        panic!("not log-normal")
    };
    assert!((mu - 5.891_751).abs() < 1e-5, "{mu}");
    assert!((mu.exp() - 362.039).abs() < 1e-2);
    assert!((sigma - 1.247_665).abs() < 1e-5, "{sigma}");
    assert_eq!((min, max), (16, 8192));
    // Drawn: the median sits at √(ab) and ~1.2 % of draws (|Z| > 2.5) on a bound.
    let d = presets::range(64, 4096);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut v: Vec<u32> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
    v.sort_unstable();
    let median = v[v.len() / 2] as f64;
    assert!((median / 512.0 - 1.0).abs() < 0.05, "median {median}");
    let at_bounds = v.iter().filter(|x| **x == 64 || **x == 4096).count() as f64;
    let share = at_bounds / v.len() as f64;
    assert!((0.008..0.018).contains(&share), "{share}");
}

#[test]
fn the_five_dimensions_reach_the_requests() {
    // Non-generative answers send items; JSON answers ask for a JSON object.
    let embed = preset("EMBED").unwrap();
    assert_eq!(embed.items, Some(LengthDist::Uniform { min: 1, max: 16 }));
    assert_eq!(
        embed.profile.unwrap().output_structure.api(),
        ProfileApi::Embed
    );
    // JSON answers are recorded, not constrained (fixed lengths would contradict them).
    let clas = preset("CLAS").unwrap();
    assert!(clas.body.is_empty());
    assert_eq!(
        clas.profile.unwrap().output_structure,
        OutputStructure::Json
    );
    let logpr = preset("LOGPR").unwrap();
    assert_eq!(logpr.body["logprobs"], true);
    assert_eq!(logpr.output, LengthDist::fixed(1));
    // Chat sessions wait a user's think time; an agent's steps wait a tool's time.
    let chat = preset("CHAT").unwrap();
    let think = chat.sessions.as_ref().unwrap().think_time_ms.clone();
    assert!(matches!(think, LengthDist::LogNormal { min: 500, .. }));
    let agent = preset("AGNT").unwrap().agent.unwrap();
    assert!(matches!(
        agent.tool_time_ms,
        LengthDist::LogNormal { min: 20, .. }
    ));
    assert_eq!(
        agent.tools * agent.tool_tokens,
        1024,
        "1,024 tokens of tools"
    );
    assert!(agent.end_with_text && agent.multi_step());
    // A function call is one step that calls a tool, from 512 tokens of tool definitions.
    let func = preset("FUNC").unwrap().agent.unwrap();
    assert_eq!(
        (func.steps.clone(), func.end_with_text),
        (LengthDist::fixed(1), false)
    );
    assert_eq!(func.tools * func.tool_tokens, 512);
    assert!(!func.multi_step());
    // Shared documents are prefix groups.
    assert_eq!(preset("LDQA").unwrap().prefix_groups.unwrap().count, 16);
}

#[test]
fn a_scenario_file_can_declare_its_own_profile_and_is_checked() {
    let text = r#"
name = "support"
input = { dist = "uniform", min = 100, max = 200 }
output = { dist = "fixed", value = 50 }
system_prompt = { tokens = 300, share = 1.0 }
[profile]
id = "SUPPORT"
group = "interactive_streaming"
latency = "interactive"
output_structure = "text"
concurrency = "independent"
caching = "shared_system_prompt"
slo = "ttft_ms<=400"
"#;
    let s = Scenario::from_toml(text, "support.toml").unwrap();
    assert_eq!(s.profile.unwrap().slo.as_deref(), Some("ttft_ms<=400"));
    // Caching that the scenario does not build is refused.
    let wrong = text.replace("shared_system_prompt", "shared_contexts");
    let err = Scenario::from_toml(&wrong, "support.toml").unwrap_err();
    assert!(err.to_string().contains("needs prefix_groups"), "{err}");
}
