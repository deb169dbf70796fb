//! The feeder's part of images and audio: files named by the workload (an `--image-dir`, a
//! dataset's paths) read into memory just before their request is built, on the feeder's
//! thread, and how many requests it builds ahead when each carries megabytes.

use crate::workload::media::{probe, MediaData, MediaPart};
use crate::workload::WorkloadSpec;

/// Most bytes of media the feeder keeps built ahead of sending (base64 included).
const LOOKAHEAD_BYTES: f64 = 256.0 * 1024.0 * 1024.0;

/// Reads the files among `parts` (their bytes, format and size from their header); an
/// error names a file that cannot be read.
pub fn read_files(parts: &mut [MediaPart]) -> Result<(), String> {
    for p in parts.iter_mut() {
        let MediaData::File(path) = &p.data else {
            continue;
        };
        let bytes = std::fs::read(path)
            .map_err(|e| format!("reading {} to send it: {e}", path.display()))?;
        let info = probe::probe(&bytes);
        if let Some(i) = info {
            p.format = i.format;
            (p.width, p.height, p.duration_ms) = (i.width, i.height, i.duration_ms);
        }
        p.bytes = bytes.len() as u64;
        p.fingerprint = format!("{:016x}", crate::workload::fingerprint(&bytes));
        p.data = MediaData::Bytes(bytes.into());
    }
    Ok(())
}

/// The feeder's look-ahead for `workload`: `lookahead` sessions, fewer when their media would
/// hold more than 256 MiB (at least 16).
pub fn lookahead(workload: &WorkloadSpec, lookahead: usize) -> usize {
    let per_request = crate::workload::media::mean_request_bytes(
        workload.images.as_ref(),
        workload.audio.as_ref(),
    );
    if per_request <= 0.0 {
        return lookahead;
    }
    let fit = (LOOKAHEAD_BYTES / per_request) as usize;
    lookahead.min(fit.max(16))
}
