//! Tool calls as a stream carries them: each event may start a call (its id and name) and
//! carry a fragment of its arguments, whichever API sent it.
//!
//! The arguments are output the model generates token by token, like answer text, so the
//! exchange times their fragments as chunks; the calls themselves are only counted. Every
//! dialect names a call by a position that stays the same over its events (Chat
//! Completions' `index`, the Responses API's `output_index`, Anthropic's content-block
//! `index`), which is what [`ToolCallDelta::index`] holds, so the exchange can tell a new
//! call from a further fragment of the same one without keeping ids.

use std::borrow::Cow;

/// One tool call's part of one event, borrowed from the event's bytes where it can be.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolCallDelta<'a> {
    /// The call's position in the answer, the same on every event of that call.
    pub index: u32,
    /// The call's id, on the event that starts it (`call_…`, `toolu_…`).
    pub id: Option<Cow<'a, str>>,
    /// The tool's name, on the event that starts it.
    pub name: Option<Cow<'a, str>>,
    /// A fragment of the arguments' JSON text (possibly empty).
    pub arguments: Option<Cow<'a, str>>,
    /// `arguments` is the call's whole arguments, sent once at its end (the Responses API's
    /// `response.function_call_arguments.done`): output only when no fragment of the call
    /// came before it, else it would be counted twice.
    pub whole: bool,
}

/// The tool-call parts of one event: none for almost every event, one for the streams of
/// every API seen so far, several only when a Chat Completions delta carries parallel calls
/// at once.
///
/// Why the first inline and the rest in a `Vec`: an event without tool calls must cost
/// nothing more than before (an empty `Vec` does not allocate), an event with one call (the
/// common tool-call event: one arguments fragment) must not allocate either, and a delta
/// with several calls, which is rare, may. A small inline array would bound the count or
/// copy a larger value on every event, text-only ones included.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolCallDeltas<'a> {
    first: Option<ToolCallDelta<'a>>,
    more: Vec<ToolCallDelta<'a>>,
}

impl<'a> ToolCallDeltas<'a> {
    /// The parts of an event that carries exactly one call's part.
    pub fn one(delta: ToolCallDelta<'a>) -> Self {
        Self {
            first: Some(delta),
            more: Vec::new(),
        }
    }

    /// Adds a call's part, after those already held.
    pub fn push(&mut self, delta: ToolCallDelta<'a>) {
        if self.first.is_none() {
            self.first = Some(delta);
        } else {
            self.more.push(delta);
        }
    }

    /// Whether the event carries no tool-call part.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// The parts, in the order the event listed them.
    pub fn iter(&self) -> impl Iterator<Item = &ToolCallDelta<'a>> {
        self.first.iter().chain(self.more.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_part_stays_inline_and_more_keep_their_order() {
        let part = |index: u32| ToolCallDelta {
            index,
            ..Default::default()
        };
        let mut parts = ToolCallDeltas::default();
        assert!(parts.is_empty());
        parts.push(part(0));
        assert!(!parts.is_empty());
        assert_eq!(parts.more.capacity(), 0, "one call allocates nothing");
        parts.push(part(1));
        parts.push(part(2));
        let order: Vec<u32> = parts.iter().map(|p| p.index).collect();
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(ToolCallDeltas::one(part(5)).iter().count(), 1);
    }
}
