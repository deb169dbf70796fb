//! Run folders: `requests.jsonl` streamed while running, `run.json` at the end; reading
//! them back; and the history database that indexes them. `folder` names every file.

pub mod folder;
pub mod history;
pub mod kept;
pub mod run_dir;
pub mod runs;
pub mod writer;

pub use folder::{RunFolder, SuiteFolder, TestFolder};
pub use run_dir::{default_run_dir, prepare_run_dir, read_requests, write_run_json, RunDirError};
pub use writer::RecordWriter;
