//! Each test's result as its own type. `test.json` stores it under `result` exactly as the
//! test's result struct serialises (the keys docs/procedures.md lists); readers get it back
//! typed, chosen by the report's `test`, instead of looking keys up by hand.

use super::capacity::CapacityResult;
use super::curve::CurveResult;
use super::fairness::FairnessResult;
use super::guardrails::GuardrailResult;
use super::itl::ItlResult;
use super::long_context::LongContextResult;
use super::memory::MemoryResult;
use super::prefix_cache::PrefixCacheResult;
use super::throughput::ThroughputResult;
use super::ttft::TtftResult;
use super::TestName;
use serde::Serialize;
use serde_json::Value;

/// One test's derived points.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum TestResult {
    Ttft(TtftResult),
    Throughput(ThroughputResult),
    Curve(CurveResult),
    Itl(ItlResult),
    Capacity(CapacityResult),
    Fairness(FairnessResult),
    PrefixCache(PrefixCacheResult),
    MemoryPressure(MemoryResult),
    LongContext(LongContextResult),
    Guardrails(GuardrailResult),
}

impl TestResult {
    /// Which test it belongs to.
    pub fn test(&self) -> TestName {
        match self {
            Self::Ttft(_) => TestName::Ttft,
            Self::Throughput(_) => TestName::Throughput,
            Self::Curve(_) => TestName::Curve,
            Self::Itl(_) => TestName::Itl,
            Self::Capacity(_) => TestName::Capacity,
            Self::Fairness(_) => TestName::Fairness,
            Self::PrefixCache(_) => TestName::PrefixCache,
            Self::MemoryPressure(_) => TestName::MemoryPressure,
            Self::LongContext(_) => TestName::LongContext,
            Self::Guardrails(_) => TestName::Guardrails,
        }
    }

    /// Reads `test`'s result from its stored JSON.
    pub fn read(test: TestName, value: Value) -> Result<Self, serde_json::Error> {
        use serde_json::from_value as from;
        Ok(match test {
            TestName::Ttft => Self::Ttft(from(value)?),
            TestName::Throughput => Self::Throughput(from(value)?),
            TestName::Curve => Self::Curve(from(value)?),
            TestName::Itl => Self::Itl(from(value)?),
            TestName::Capacity => Self::Capacity(from(value)?),
            TestName::Fairness => Self::Fairness(from(value)?),
            TestName::PrefixCache => Self::PrefixCache(from(value)?),
            TestName::MemoryPressure => Self::MemoryPressure(from(value)?),
            TestName::LongContext => Self::LongContext(from(value)?),
            TestName::Guardrails => Self::Guardrails(from(value)?),
        })
    }

    /// The most load sustained, req/s, where the test found one (throughput): the later
    /// tests of a suite size their levels from it.
    pub fn sustainable_rate_per_s(&self) -> Option<f64> {
        match self {
            Self::Throughput(t) => t.sustainable_rate_per_s,
            _ => None,
        }
    }

    /// The most concurrent requests meeting the criteria, where the test found it (capacity).
    pub fn max_concurrency(&self) -> Option<u32> {
        match self {
            Self::Capacity(c) => c.max_concurrency,
            _ => None,
        }
    }
}

/// A result type that is one [`TestResult`]'s variant, for readers that want that test's.
pub trait OneResult: Sized {
    /// `r` when it is this test's result.
    fn of(r: &TestResult) -> Option<&Self>;
}

macro_rules! one_result {
    ($($variant:ident => $ty:ty),* $(,)?) => {
        $(impl OneResult for $ty {
            fn of(r: &TestResult) -> Option<&Self> {
                match r {
                    TestResult::$variant(x) => Some(x),
                    _ => None,
                }
            }
        })*
    };
}

one_result! {
    Ttft => TtftResult,
    Throughput => ThroughputResult,
    Curve => CurveResult,
    Itl => ItlResult,
    Capacity => CapacityResult,
    Fairness => FairnessResult,
    PrefixCache => PrefixCacheResult,
    MemoryPressure => MemoryResult,
    LongContext => LongContextResult,
    Guardrails => GuardrailResult,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_back_as_its_tests_type_and_keeps_its_keys() {
        let stored = serde_json::to_value(CapacityResult {
            max_concurrency: Some(12),
            ..CapacityResult::default()
        })
        .unwrap();
        let r = TestResult::read(TestName::Capacity, stored.clone()).unwrap();
        assert_eq!(r.test(), TestName::Capacity);
        assert_eq!(r.max_concurrency(), Some(12));
        assert_eq!(r.sustainable_rate_per_s(), None);
        assert!(CapacityResult::of(&r).is_some() && CurveResult::of(&r).is_none());
        let again = serde_json::to_value(&r).unwrap();
        assert_eq!(again["max_concurrency"], 12);
        // The wrong test's shape is an error, not a silently empty result.
        assert!(TestResult::read(TestName::Capacity, serde_json::json!([1, 2])).is_err());
    }
}
