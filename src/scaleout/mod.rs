//! Scale-out: one load plan, many generators, one exact merge.
//!
//! One generator runs out of CPU, sockets or network long before a large serving cluster
//! runs out of capacity. `servebench plan` freezes a load ([`plan`]); `servebench run
//! --plan --shard i/N` sends the share of it with global ordinals `k mod N = i`
//! ([`shard`]) at the global schedule's times, from a common start corrected for the
//! machine's clock offset ([`clock`]); `servebench merge` checks that every ordinal came
//! back exactly once and summarises the union with the same code as a single run
//! ([`merge`]). [`k8s`] writes the Kubernetes manifests that run the shards as an Indexed
//! Job, in YAML ([`yaml`]).

pub mod clock;
pub mod k8s;
pub mod merge;
pub mod plan;
pub mod yaml;
