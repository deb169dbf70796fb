//! Images and audio in a request body: the user message's content becomes a list of parts,
//! its text first, then each image or clip in the API's own form.
//!
//! | `--endpoint` | image | audio |
//! |---|---|---|
//! | `chat` | `{"type":"image_url","image_url":{"url":"data:image/png;base64,..."}}` | `{"type":"input_audio","input_audio":{"data":BASE64,"format":"wav"}}` (a URL: vLLM's `audio_url`) |
//! | `responses` | `{"type":"input_image","image_url":"data:..."}` | refused |
//! | `messages` | `{"type":"image","source":{"type":"base64","media_type":"image/png","data":BASE64}}` (a URL: `"source":{"type":"url","url":...}`) | refused |
//!
//! The configuration refuses images and audio on the other endpoints before anything is
//! sent (`pipeline::resolve`), so here they only have to be written.

use super::Prompt;
use crate::client::{Endpoint, RequestOptions, Target};
use crate::record::MediaCounts;
use crate::workload::media::{MediaData, MediaPart};
use base64::Engine;
use serde_json::{json, Map, Value};

/// The body of a request with `media` (as [`super::request_body`] without them).
pub fn request_body_with_media(
    target: &Target,
    prompt: &Prompt<'_>,
    opts: &RequestOptions,
    media: &[MediaPart],
) -> Vec<u8> {
    let text = super::request_body(target, prompt, opts);
    if media.is_empty() {
        return text;
    }
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(&text) else {
        return text; // not JSON (gRPC): refused earlier
    };
    attach(target.endpoint, &mut body, media);
    serde_json::to_vec(&Value::Object(body)).expect("a JSON map always serialises")
}

/// What a request's parts add up to (counts and encoded bytes), and its body's text tokens
/// are kept by the caller.
pub fn counts(media: &[MediaPart]) -> MediaCounts {
    let mut c = MediaCounts::default();
    for p in media {
        if p.is_image() {
            c.images += 1;
            c.image_bytes += p.bytes;
        } else {
            c.audio += 1;
            c.audio_bytes += p.bytes;
        }
    }
    c
}

/// Writes `media` into `body`'s user messages, each part into the user message its
/// `user_turn` names (the last one when there are fewer).
fn attach(endpoint: Endpoint, body: &mut Map<String, Value>, media: &[MediaPart]) {
    if endpoint == Endpoint::Responses {
        if let Some(Value::String(text)) = body.get("input") {
            let one = json!([{"role": "user", "content": text}]);
            body.insert("input".into(), one);
        }
    }
    let key = if endpoint == Endpoint::Responses {
        "input"
    } else {
        "messages"
    };
    let Some(Value::Array(messages)) = body.get_mut(key) else {
        return;
    };
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("user"))
        // Anthropic's tool results travel in user messages; they are not the user's turns.
        .filter(|(_, m)| !super::tools::is_tool_results(m))
        .map(|(i, _)| i)
        .collect();
    for part in media {
        let Some(&at) = users.get(part.user_turn as usize).or(users.last()) else {
            return;
        };
        let message = &mut messages[at];
        let content = message
            .get_mut("content")
            .map(Value::take)
            .unwrap_or_default();
        let mut parts = match content {
            Value::Array(parts) => parts,
            Value::String(s) => vec![text_part(endpoint, s)],
            _ => Vec::new(),
        };
        if let Some(p) = media_part(endpoint, part) {
            parts.push(p);
        }
        message["content"] = Value::Array(parts);
    }
}

/// The message's text as the first part.
fn text_part(endpoint: Endpoint, text: String) -> Value {
    match endpoint {
        Endpoint::Responses => json!({"type": "input_text", "text": text}),
        _ => json!({"type": "text", "text": text}),
    }
}

/// One image or clip in `endpoint`'s form; `None` for a file that was never read.
fn media_part(endpoint: Endpoint, part: &MediaPart) -> Option<Value> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mime = part.format.mime();
    let (url, data) = match &part.data {
        MediaData::Bytes(bytes) => {
            let data = b64(bytes);
            (format!("data:{mime};base64,{data}"), Some(data))
        }
        MediaData::Url(url) => (url.clone(), None),
        MediaData::File(_) | MediaData::None => return None,
    };
    Some(match (endpoint, part.is_audio()) {
        (Endpoint::Responses, _) => json!({"type": "input_image", "image_url": url}),
        (Endpoint::Messages, _) => match data {
            Some(data) => {
                json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
            }
            None => json!({"type": "image", "source": {"type": "url", "url": url}}),
        },
        (_, false) => json!({"type": "image_url", "image_url": {"url": url}}),
        (_, true) => match data {
            Some(data) => {
                json!({"type": "input_audio", "input_audio": {"data": data, "format": part.format.audio_name()}})
            }
            None => json!({"type": "audio_url", "audio_url": {"url": url}}),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::media::{MediaFormat, MediaKind};

    fn image() -> MediaPart {
        MediaPart::from_bytes(
            MediaKind::Image,
            MediaFormat::Png,
            b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x03".to_vec(),
            "synthetic",
        )
    }

    fn body(endpoint: Endpoint, media: &[MediaPart]) -> Value {
        let messages = vec![
            ("system".to_string(), "be brief".to_string()),
            ("user".to_string(), "what is this?".to_string()),
        ];
        let prompt = Prompt {
            messages: &messages,
            max_tokens: 4,
            overrides: &[],
            agent: None,
        };
        let mut target = super::super::tests::target(endpoint, None, &[]);
        target.model = "m".into();
        let bytes = request_body_with_media(&target, &prompt, &RequestOptions::default(), media);
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn each_api_gets_its_own_parts_on_the_user_message() {
        let img = image();
        assert_eq!((img.width, img.height), (2, 3));
        let url = MediaPart::named(MediaKind::Image, "https://example.invalid/a.jpg");
        let media = [img.clone(), url];
        let chat = body(Endpoint::Chat, &media);
        let parts = &chat["messages"][1]["content"];
        assert_eq!(parts[0], json!({"type": "text", "text": "what is this?"}));
        let data = parts[1]["image_url"]["url"].as_str().unwrap();
        assert!(
            data.starts_with("data:image/png;base64,iVBORw0KGgo"),
            "{data}"
        );
        assert_eq!(
            parts[2]["image_url"]["url"],
            "https://example.invalid/a.jpg"
        );
        assert_eq!(
            chat["messages"][0]["content"], "be brief",
            "the system prompt stays text"
        );

        let responses = body(Endpoint::Responses, &media);
        let parts = &responses["input"][1]["content"];
        assert_eq!(parts[0]["type"], "input_text");
        assert_eq!(parts[1]["type"], "input_image");
        assert!(parts[1]["image_url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"));

        let messages = body(Endpoint::Messages, &media);
        let parts = &messages["messages"][0]["content"];
        assert_eq!(parts[1]["source"]["type"], "base64");
        assert_eq!(parts[1]["source"]["media_type"], "image/png");
        assert_eq!(
            parts[2]["source"],
            json!({"type": "url", "url": "https://example.invalid/a.jpg"})
        );

        let audio = MediaPart::from_bytes(
            MediaKind::Audio,
            MediaFormat::Wav,
            b"RIFF\0\0\0\0WAVE".to_vec(),
            "synthetic",
        );
        let chat = body(Endpoint::Chat, &[audio]);
        let part = &chat["messages"][1]["content"][1];
        assert_eq!(part["type"], "input_audio");
        assert_eq!(part["input_audio"]["format"], "wav");
        assert_eq!(counts(&media).images, 2);
        assert_eq!(counts(&media).image_bytes, img.bytes);
        // Without media the body is the plain one, byte for byte.
        assert_eq!(
            body(Endpoint::Chat, &[])["messages"][1]["content"],
            "what is this?"
        );
    }
}
