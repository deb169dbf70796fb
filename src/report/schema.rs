//! The JSON Schema of `run.json`, generated from the very types it is serialised from, so the
//! committed `docs/run.schema.json` cannot drift from the code unnoticed (a test compares
//! them, and another validates real output against the committed file).

use super::RunReport;

/// The schema of `run.json` (JSON Schema 2020-12).
pub fn run_schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(RunReport)).expect("a schema always serialises");
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$id".into(),
            "https://servebench.dev/schemas/run.schema.json".into(),
        );
        obj.insert(
            "description".into(),
            format!(
                "run.json of servebench, schema_version {} (docs/run.md describes every field)",
                super::SCHEMA_VERSION
            )
            .into(),
        );
    }
    schema
}

/// The schema as it is committed: pretty JSON with a final newline.
pub fn run_schema_text() -> String {
    serde_json::to_string_pretty(&run_schema()).expect("a schema always serialises") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/run.schema.json` is the schema of the current types. To update it after
    /// changing them: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema`.
    #[test]
    fn the_committed_schema_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/run.schema.json");
        let generated = run_schema_text();
        if std::env::var_os("SERVEBENCH_UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/run.schema.json is out of date: run SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema, and review the diff"
        );
    }
}
