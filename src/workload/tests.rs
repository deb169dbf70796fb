//! The generator's promises: the same seed gives the same requests, byte for byte, at
//! exact lengths; shared contexts, classes, sessions, datasets and traces behave as their
//! workloads say.

use super::datasets::{Dataset, PromptRecord, TraceRecord};
use super::lengths::LengthDist;
use super::*;
use crate::tokenizer::{TiktokenTokenizer, Tokenizer};
use std::collections::HashMap;
use std::sync::Arc;

fn take(name: &str, seed: u64, n: usize) -> Vec<RequestSpec> {
    let tok = TiktokenTokenizer::cl100k();
    let mut g = Generator::new(&Scenario::named(name).unwrap(), seed, &tok, None).unwrap();
    (0..n).map(|_| g.next_request(&tok).unwrap()).collect()
}

#[test]
fn same_seed_same_requests_with_exact_lengths() {
    let tok = TiktokenTokenizer::cl100k();
    let a = take("synthetic-uniform", 42, 20);
    assert_eq!(a, take("synthetic-uniform", 42, 20));
    assert_ne!(a, take("synthetic-uniform", 43, 20));
    for r in &a {
        assert!((128..=512).contains(&r.input_tokens));
        assert!((64..=256).contains(&r.max_tokens));
        assert_eq!(tok.count(&r.messages[0].1) as u32, r.input_tokens);
    }
}

/// Every named workload's requests say the input length their messages count, with the
/// chat template's overhead: the generator takes it from the exact-length builder rather
/// than counting the prompt a second time.
#[test]
fn every_named_workload_counts_its_own_messages() {
    let tok = TiktokenTokenizer::cl100k();
    // `conversation` replays a dataset, counted as it is read; `agentic` counts its tools and
    // calls too (workload::agent's tests).
    let own_text = |n: &&&str| !matches!(**n, "conversation" | "agentic");
    for name in Scenario::NAMES.iter().filter(own_text) {
        let mut g = Generator::new(&Scenario::named(name).unwrap(), 11, &tok, None).unwrap();
        for _ in 0..12 {
            for r in g.next_session(&tok).unwrap() {
                let counted = tok.count_messages(&r.messages) as u32;
                assert_eq!(counted, r.input_tokens, "{name} request {}", r.index);
            }
        }
    }
}

#[test]
fn byte_identical_sequence_fixed_hash() {
    // The exported bytes of the first 30 synthetic-uniform requests at seed 42 (cl100k):
    // if this changes, every published request sequence changes with it.
    let reqs = take("synthetic-uniform", 42, 30);
    let bytes: Vec<u8> = reqs
        .iter()
        .flat_map(|r| serde_json::to_vec(r).unwrap())
        .collect();
    assert_eq!(
        fingerprint(&bytes),
        EXPECTED_UNIFORM_42,
        "got {:#x}",
        fingerprint(&bytes)
    );
}
// Changed in schema 2: prompts are drawn from the benign word list. Changed again when the
// words moved to a stream of their own (the prompt salt's), apart from the lengths.
const EXPECTED_UNIFORM_42: u64 = 0x748c_3c3e_d714_ecde;

#[test]
fn code_completion_shares_contexts_by_zipf() {
    let reqs = take("code-completion", 7, 200);
    let tok = TiktokenTokenizer::cl100k();
    let mut starts: HashMap<String, usize> = HashMap::new();
    for r in &reqs {
        assert_eq!(tok.count(&r.messages[0].1) as u32, r.input_tokens);
        *starts
            .entry(r.messages[0].1.chars().take(200).collect())
            .or_default() += 1;
    }
    let mut counts: Vec<usize> = starts.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    // ~80 % share one of 10 contexts; the most popular takes the largest share (Zipf 1.5).
    let shared: usize = counts.iter().filter(|&&c| c > 1).sum();
    assert!(
        (140..=180).contains(&shared),
        "{shared} of 200 shared ({counts:?})"
    );
    assert!(counts[0] > counts[1]);
}

#[test]
fn long_context_is_exact_with_a_question() {
    let tok = TiktokenTokenizer::cl100k();
    let mut s = Scenario::named("long-context").unwrap();
    s.input = LengthDist::fixed(8192);
    let mut g = Generator::new(&s, 1, &tok, None).unwrap();
    let r = g.next_request(&tok).unwrap();
    assert_eq!(r.input_tokens, 8192);
    assert_eq!(tok.count(&r.messages[0].1), 8192);
    assert!(r.messages[0].1.contains("Question:"));
    assert_eq!(r.max_tokens, 256);
}

#[test]
fn classes_follow_their_weights() {
    let reqs = take("fairness-mix", 3, 1000);
    let long = reqs
        .iter()
        .filter(|r| r.class.as_deref() == Some("long"))
        .count();
    assert!((150..=250).contains(&long), "{long}");
    assert!(reqs
        .iter()
        .filter(|r| r.class.as_deref() == Some("long"))
        .all(|r| r.input_tokens >= 1024));
}

#[test]
fn conversation_needs_a_dataset_and_shares_a_system_prompt() {
    let tok = TiktokenTokenizer::cl100k();
    let s = Scenario::named("conversation").unwrap();
    assert!(matches!(
        Generator::new(&s, 1, &tok, None),
        Err(WorkloadError::NeedsDataset(_))
    ));
    let ds = Dataset::Prompts(
        (0..50)
            .map(|i| PromptRecord {
                messages: vec![("user".into(), format!("question number {i} about things"))],
                answer: Some("an answer of a few tokens".into()),
                output_tokens: None,
                class: None,
                media: Vec::new(),
            })
            .collect(),
    );
    let mut g = Generator::new(&s, 1, &tok, Some(Arc::new(ds))).unwrap();
    let reqs: Vec<RequestSpec> = (0..200).map(|_| g.next_request(&tok).unwrap()).collect();
    let with_system = reqs.iter().filter(|r| r.messages[0].0 == "system").count();
    assert!((70..=130).contains(&with_system), "{with_system}");
    let sys = reqs.iter().find(|r| r.messages[0].0 == "system").unwrap();
    assert_eq!(tok.count(&sys.messages[0].1), 200);
    assert_eq!(
        sys.max_tokens,
        tok.count("an answer of a few tokens") as u32
    );
}

#[test]
fn sessions_carry_history_and_think_time() {
    let tok = TiktokenTokenizer::cl100k();
    let mut g =
        Generator::new(&Scenario::named("multi-turn-chat").unwrap(), 4, &tok, None).unwrap();
    for _ in 0..5 {
        let turns = g.next_session(&tok).unwrap();
        assert!((2..=6).contains(&turns.len()));
        assert_eq!(turns[0].think_ms, 0.0);
        for w in turns.windows(2) {
            // Each turn repeats the previous one's messages, adds its answer and a new message.
            assert_eq!(&w[1].messages[..w[0].messages.len()], &w[0].messages[..]);
            assert_eq!(w[1].messages.len(), w[0].messages.len() + 2);
            assert!(w[1].input_tokens > w[0].input_tokens);
            assert!((500.0..=10_000.0).contains(&w[1].think_ms));
            assert_eq!(w[1].session, w[0].session);
        }
        for t in &turns {
            assert_eq!(tok.count_messages(&t.messages) as u32, t.input_tokens);
        }
    }
}

#[test]
fn trace_replay_shares_prefix_blocks_and_keeps_times() {
    let tok = TiktokenTokenizer::cl100k();
    let ds = Dataset::Trace(vec![
        TraceRecord {
            timestamp: 0.0,
            input_length: 1100,
            output_length: 5,
            hash_ids: vec![1, 2, 3],
        },
        TraceRecord {
            timestamp: 40.0,
            input_length: 700,
            output_length: 9,
            hash_ids: vec![1, 9],
        },
    ]);
    let s = Scenario {
        content: Content::Dataset,
        ..Scenario::fixed(1, 1)
    };
    let mut g = Generator::new(&s, 5, &tok, Some(Arc::new(ds))).unwrap();
    let a = g.next_request(&tok).unwrap();
    let b = g.next_request(&tok).unwrap();
    assert_eq!(
        (a.input_tokens, b.input_tokens, b.max_tokens),
        (1100, 700, 9)
    );
    assert_eq!(tok.count(&a.messages[0].1), 1100);
    assert_eq!(b.arrival_ms, Some(40.0));
    // Block 1 (512 tokens) is the same text in both.
    let prefix: String = a.messages[0].1.chars().take(300).collect();
    assert!(b.messages[0].1.starts_with(&prefix));
}

/// Every run draws its own words: another prompt salt keeps each request's lengths, class,
/// session shape and shared-prefix use (the seed's), and changes its text and the shared
/// content; the same salt gives the same requests again, byte for byte. Before, the seed
/// alone fixed the text, so a second run replayed the first's prompts into the server's
/// cache.
#[test]
fn a_prompt_salt_changes_the_words_not_the_lengths() {
    let tok = TiktokenTokenizer::cl100k();
    let draw = |name: &str, salt: u64| -> Vec<RequestSpec> {
        let scenario = Scenario::named(name).unwrap();
        let g = Generator::new(&scenario, 7, &tok, None).unwrap();
        let mut g = g.with_prompt_salt(salt);
        (0..12)
            .flat_map(|_| g.next_session(&tok).unwrap())
            .collect()
    };
    for name in [
        "synthetic-uniform",
        "code-completion",
        "multi-turn-chat",
        "long-context",
    ] {
        let (a, b, again) = (draw(name, 1), draw(name, 2), draw(name, 1));
        assert_eq!(a, again, "{name}: the same salt gives the same requests");
        let shape = |v: &[RequestSpec]| -> Vec<(u32, u32, Option<u64>, u32)> {
            v.iter()
                .map(|r| (r.input_tokens, r.max_tokens, r.session, r.turn))
                .collect()
        };
        assert_eq!(
            shape(&a),
            shape(&b),
            "{name}: lengths and sessions are the seed's"
        );
        let texts_differ = a
            .iter()
            .zip(&b)
            .all(|(x, y)| x.messages.last() != y.messages.last());
        assert!(texts_differ, "{name}: every request's own text is new");
        for r in &b {
            assert_eq!(tok.count_messages(&r.messages) as u32, r.input_tokens);
        }
    }
    // Salt 0 is the seed's own prompts, with the same lengths as any other salt.
    let zero = draw("synthetic-uniform", 0);
    let plain = take("synthetic-uniform", 7, 12);
    assert_eq!(zero, plain);
    let lens = |v: &[RequestSpec]| v.iter().map(|r| r.input_tokens).collect::<Vec<_>>();
    assert_eq!(lens(&zero), lens(&draw("synthetic-uniform", 99)));
}

/// The shared content (a code-completion workload's contexts) follows the salt too, so a
/// new run's shared prefixes are not the previous run's; within one salt it is shared.
#[test]
fn a_prompt_salt_renews_the_shared_prefixes() {
    let tok = TiktokenTokenizer::cl100k();
    let scenario = Scenario::named("code-completion").unwrap();
    let first_words = |salt: u64| -> Vec<String> {
        let mut g = Generator::new(&scenario, 7, &tok, None)
            .unwrap()
            .with_prompt_salt(salt);
        (0..30)
            .map(|_| g.next_request(&tok).unwrap())
            .map(|r| r.messages.last().unwrap().1.chars().take(200).collect())
            .collect()
    };
    let (a, b) = (first_words(5), first_words(6));
    let shared = |v: &[String]| {
        let mut seen = std::collections::HashSet::new();
        v.iter().filter(|s| !seen.insert((*s).clone())).count()
    };
    assert!(
        shared(&a) > 0,
        "within a run, requests share their group's context"
    );
    assert!(
        a.iter().all(|x| !b.contains(x)),
        "another salt shares nothing with this one"
    );
}
