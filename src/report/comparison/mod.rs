//! A comparison (`servebench compare`) and the regression gate (`servebench regress`) as
//! they read: `text` the comparison's tables for the terminal, `page` its page (`--md`,
//! `--html`), `regress` the gate's lines. The numbers and verdicts are `crate::compare`'s
//! data; nothing here computes a statistic.

pub mod page;
pub mod regress;
pub mod text;
