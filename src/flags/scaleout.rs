//! The scale-out flags (docs/scale-out.md): `run --plan --shard i/N`, `plan`, `merge` and
//! `k8s`.

use super::*;

/// `servebench run`: the run options, and the scale-out options that replay a plan.
#[derive(Debug, Args, Clone)]
pub struct RunCommand {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub scaleout: ShardFlags,
}

/// How a shard measures its clock offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ClockSyncArg {
    /// From the target's HTTP Date header, probed across a second boundary (about 1 s).
    #[default]
    Date,
    /// Not measured: the machines' clocks are trusted (NTP).
    None,
}

/// Running one shard of a plan.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Scale-out")]
pub struct ShardFlags {
    /// Run one shard of a plan from `servebench plan`: the load comes from the plan; only
    /// --shard, the clock options, --out, --force, --quiet, --detail, --client-threads,
    /// credentials (--header, --api-key-env, --api-key-file), certificates and
    /// --ready-timeout may be added.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// Which shard: i/N or i (sends the ordinals k with k mod N = i). Default:
    /// $JOB_COMPLETION_INDEX (Kubernetes Indexed Job), then $SLURM_PROCID.
    #[arg(long, requires = "plan", value_name = "i/N")]
    pub shard: Option<String>,
    /// This machine's clock minus the reference clock, ms (positive: ahead), instead of
    /// measuring it: for a known skew, and for testing. The shard starts on the corrected
    /// clock and merge shifts its records back.
    #[arg(long, requires = "plan", allow_hyphen_values = true)]
    pub clock_offset_ms: Option<f64>,
    /// How to measure the clock offset when --clock-offset-ms is not given.
    #[arg(long, value_enum, default_value = "date", requires = "plan")]
    pub clock_sync: ClockSyncArg,
}

/// `servebench plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Number of shards (generators) the load is cut into; shard i sends the ordinals
    /// k mod N = i (closed loop: streams s mod N = i).
    #[arg(long, help_heading = "Plan")]
    pub shards: u32,
    /// Where to write the plan (JSON).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "PLAN.json",
        help_heading = "Plan"
    )]
    pub output: PathBuf,
    /// The common start of the measured phase, this long after the plan is made: room for
    /// scheduling, image pulls, readiness and each shard's warm-up.
    #[arg(long, default_value = "5m", value_parser = parse_duration, help_heading = "Plan")]
    pub start_in: Duration,
    /// The common start as Unix seconds (instead of --start-in).
    #[arg(long, conflicts_with = "start_in", help_heading = "Plan")]
    pub start_at: Option<f64>,
}

/// `servebench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Every shard's run folder (the --out of each `servebench run --plan --shard i/N`).
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The merged run folder (a normal run folder: report, history, compare).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Replace the contents of an existing output folder.
    #[arg(long)]
    pub force: bool,
    /// Print every table after the short report.
    #[arg(long)]
    pub detail: bool,
    /// Label the merged run in the history (repeatable).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// The history database the merged run is indexed in (shards are not indexed).
    #[arg(long, env = "SERVEBENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Do not index the merged run in the history database.
    #[arg(long, conflicts_with = "labels")]
    pub no_store: bool,
}

/// `servebench k8s`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The plan (its shard count becomes the Job's completions and parallelism).
    #[arg(long, value_name = "PLAN.json")]
    pub plan: PathBuf,
    /// Container image with servebench at /usr/local/bin/servebench (deploy/Dockerfile).
    #[arg(long)]
    pub image: String,
    /// Base name of every object (DNS label, at most 52 characters).
    #[arg(long, default_value = "servebench")]
    pub name: String,
    /// Namespace written into every object (default: left to kubectl -n).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Image for the merge Job's wait loop when --image has no /bin/sh (e.g. busybox:1.36).
    #[arg(long)]
    pub wait_image: Option<String>,
    /// Use this existing ReadWriteMany claim for results instead of creating one.
    #[arg(long)]
    pub claim: Option<String>,
    /// Size of the results claim created.
    #[arg(long, default_value = "1Gi")]
    pub volume_size: String,
    /// Storage class of the results claim created (default: the cluster's).
    #[arg(long)]
    pub storage_class: Option<String>,
    /// Instead of a shared volume: each shard PUTs shard-<i>.tar.gz under this http(s)
    /// prefix (no merge Job; merge locally).
    #[arg(long)]
    pub upload_url: Option<String>,
    /// CPU request of every pod.
    #[arg(long, default_value = "1")]
    pub cpu_request: String,
    /// Memory request of every pod.
    #[arg(long, default_value = "1Gi")]
    pub memory_request: String,
    /// CPU limit (best unset: throttling delays the generator itself).
    #[arg(long)]
    pub cpu_limit: Option<String>,
    /// Memory limit.
    #[arg(long)]
    pub memory_limit: Option<String>,
    /// Plain environment variable for the shards, NAME=VALUE (repeatable; credential-like
    /// names are refused: use --secret-env).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Environment variable from a Secret, NAME=SECRET:KEY (repeatable), e.g.
    /// OPENAI_API_KEY=llm-keys:openai.
    #[arg(long = "secret-env", value_name = "NAME=SECRET:KEY")]
    pub secret_env: Vec<String>,
    /// Node label the pods must match, KEY=VALUE (repeatable).
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Extra argument for each shard's `servebench run` (repeatable), e.g.
    /// --run-arg=--header --run-arg='Authorization: Bearer $(GATEWAY_TOKEN)'.
    #[arg(long = "run-arg", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
    /// Wall-clock limit of the shard Job, seconds.
    #[arg(long)]
    pub active_deadline_s: Option<u64>,
    /// Write the manifests here (default: stdout).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Write one JSON array of the objects instead of YAML (kubectl reads both).
    #[arg(long)]
    pub json: bool,
}
