//! Kubernetes manifests for running one frozen plan as N shards.
//!
//! One load generator runs out of CPU, sockets or network long before a large serving
//! cluster runs out of capacity, so `servebench plan` freezes a load and `servebench run
//! --plan --shard i/N` replays the share of it with ordinals `k mod N = i`. On Kubernetes
//! the natural carrier is an Indexed Job: the control plane hands every pod a distinct index
//! `0..N`, and all shards read the same plan from one ConfigMap. This module turns the
//! options of `servebench k8s` into those objects, as plain JSON values, with no cluster and
//! no I/O: what it returns is exactly what `kubectl apply` will see (see [`super::yaml`]).
//!
//! Objects, in apply order: the plan ConfigMap; the results PersistentVolumeClaim (unless an
//! existing claim is named or results are uploaded); the shard Job; the merge Job (when the
//! shards share a volume it can read).

use serde_json::{json, Map, Value};
use thiserror::Error;

use validate::validate;

pub use super::yaml::to_yaml;

/// Where the plan file appears inside every shard container.
pub const PLAN_PATH: &str = "/etc/servebench/plan.json";
/// Directory the plan ConfigMap is mounted on.
const PLAN_DIR: &str = "/etc/servebench";
/// Where the results volume is mounted; each run has its own folder in it
/// ([`K8sOptions::run_dir`]) holding `shard-<i>/` and `merged/`.
pub const RESULTS_DIR: &str = "/results";
/// Where the image is expected to carry the `servebench` binary.
pub const DEFAULT_COMMAND: &str = "/usr/local/bin/servebench";
/// Longest base name. The Job controller names each shard pod's host `<job>-<index>`
/// without truncating, and a hostname is a 63-character label: 52 + `-shards` + `-999` fits.
pub const MAX_NAME_LEN: usize = 52;
/// Most shards one manifest set may ask for (indexes up to 999, see [`MAX_NAME_LEN`]). Each
/// shard is a pod that must be running at the plan's start time, and the merge command
/// lists every shard folder.
pub const MAX_SHARDS: u32 = 1000;
const _: () = assert!(MAX_NAME_LEN + "-shards-".len() + 3 <= 63 && MAX_SHARDS <= 1000);
/// Largest plan accepted: a ConfigMap, metadata included, must stay under 1 MiB.
pub const MAX_PLAN_BYTES: usize = 1_000_000;
/// Numeric user and group the pods run as (the image recipe in docs/scale-out.md creates it).
pub const RUN_AS_ID: u64 = 65532;
/// How long the merge waits for shards when no deadline bounds them.
const DEFAULT_MERGE_WAIT_S: u64 = 86_400;
/// Extra wait beyond the shard deadline: the merge Job and the shard Job start at about the
/// same time, but shards may wait longer for scheduling and image pulls.
const MERGE_WAIT_SLACK_S: u64 = 900;
const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
const UPLOAD_URL_ENV: &str = "SERVEBENCH_UPLOAD_URL";
/// Optional `Authorization` header value for uploads; give it through `secret_env`.
pub const UPLOAD_AUTH_ENV: &str = "SERVEBENCH_UPLOAD_AUTHORIZATION";

/// Where shards leave their run folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// One volume shared by all shards and the merge Job, mounted at `/results`. Shards are
    /// spread over nodes, so the claim must allow ReadWriteMany (NFS, CephFS, EFS, ...).
    Pvc {
        /// An existing claim to use; `None` creates `<name>-results`.
        claim_name: Option<String>,
        /// Size of the claim created (ignored with `claim_name`), e.g. `10Gi`.
        size: String,
        /// Storage class of the claim created; `None` takes the cluster default.
        storage_class: Option<String>,
    },
    /// Each shard writes to its pod's own disk (an emptyDir) and then PUTs
    /// `shard-<i>.tar.gz` under `upload_url` with curl. No merge Job: download the archives and run `servebench
    /// merge` locally. The image needs `/bin/sh`, `tar` and `curl`.
    EmptyDirWithUpload {
        /// `http(s)://` prefix the archives are uploaded under; no credentials in it.
        upload_url: String,
    },
}

/// Everything `servebench k8s` needs to describe one sharded run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K8sOptions {
    /// Base name of every object: a DNS-1123 label of at most [`MAX_NAME_LEN`] characters.
    pub name: String,
    /// Namespace written into every object; `None` leaves it to `kubectl -n`.
    pub namespace: Option<String>,
    /// Image that carries servebench at [`DEFAULT_COMMAND`] (or at `command`).
    pub image: String,
    /// The argv prefix that starts servebench in the image; `None` means [`DEFAULT_COMMAND`].
    pub command: Option<Vec<String>>,
    /// Image that runs the merge Job's wait loop (needs `/bin/sh`); `None` reuses `image`.
    /// Set it (e.g. to a busybox image) when `image` has no shell.
    pub wait_image: Option<String>,
    /// Number of shards: the Job's completions and parallelism.
    pub shards: u32,
    /// The text of the plan file, mounted from a ConfigMap at [`PLAN_PATH`].
    pub plan_json: String,
    /// Where results go.
    pub storage: Storage,
    /// CPU request of every pod, e.g. `2` or `500m`.
    pub cpu_request: String,
    /// Memory request of every pod, e.g. `1Gi`.
    pub memory_request: String,
    /// CPU limit; best left unset, since throttling delays the load generator itself.
    pub cpu_limit: Option<String>,
    /// Memory limit.
    pub memory_limit: Option<String>,
    /// Plain environment variables for the shards. Credential-like names are refused.
    pub env: Vec<(String, String)>,
    /// `(ENV_NAME, secret name, key)`: variables read from Secrets (API keys, tokens).
    pub secret_env: Vec<(String, String, String)>,
    /// Arguments appended to `servebench run` (not `--plan`, `--shard` or `--out`).
    pub extra_run_args: Vec<String>,
    /// Node labels the shard and merge pods must match (e.g. a pool kept apart from the
    /// serving nodes).
    pub node_selector: Vec<(String, String)>,
    /// Wall-clock limit of the shard Job in seconds.
    pub active_deadline_s: Option<u64>,
    /// Pod failures the shard Job tolerates. Keep 0: a retried shard would start late,
    /// off the plan's common clock, and no longer replay its share of the load.
    pub backoff_limit: u32,
}

impl K8sOptions {
    /// Options with the defaults of `servebench k8s`: a new 1 GiB ReadWriteMany claim,
    /// 1 CPU and 1 GiB requested, no limits, no extra environment, `backoff_limit` 0.
    pub fn new(name: &str, image: &str, shards: u32, plan_json: &str) -> Self {
        K8sOptions {
            name: name.to_string(),
            namespace: None,
            image: image.to_string(),
            command: None,
            wait_image: None,
            shards,
            plan_json: plan_json.to_string(),
            storage: Storage::Pvc {
                claim_name: None,
                size: "1Gi".to_string(),
                storage_class: None,
            },
            cpu_request: "1".to_string(),
            memory_request: "1Gi".to_string(),
            cpu_limit: None,
            memory_limit: None,
            env: Vec::new(),
            secret_env: Vec::new(),
            extra_run_args: Vec::new(),
            node_selector: Vec::new(),
            active_deadline_s: None,
            backoff_limit: 0,
        }
    }

    /// Name of the ConfigMap holding the plan.
    pub fn plan_config_map_name(&self) -> String {
        format!("{}-plan", self.name)
    }

    /// Name of the Indexed Job running the shards (for `kubectl wait job/...`).
    pub fn shard_job_name(&self) -> String {
        format!("{}-shards", self.name)
    }

    /// Name of the Job that merges the shards' run folders.
    pub fn merge_job_name(&self) -> String {
        format!("{}-merge", self.name)
    }

    /// Name of the results claim (the existing one, or the one created), if any.
    pub fn results_claim_name(&self) -> Option<String> {
        match &self.storage {
            Storage::Pvc { claim_name, .. } => Some(
                claim_name
                    .clone()
                    .unwrap_or_else(|| format!("{}-results", self.name)),
            ),
            Storage::EmptyDirWithUpload { .. } => None,
        }
    }

    /// The folder, inside the results volume mounted at [`RESULTS_DIR`], that holds this
    /// run's `shard-<i>/` folders and `merged/`: `/results/<name>-<plan fingerprint>`.
    ///
    /// The fingerprint (12 hex digits of FNV-1a over the plan text) keeps runs apart on a
    /// shared claim: a new plan under an old name gets a fresh folder, so the merge can never
    /// pick up another plan's `run.json` files; the same plan again meets its own folders,
    /// which servebench refuses to overwrite.
    pub fn run_dir(&self) -> String {
        format!(
            "{RESULTS_DIR}/{}-{}",
            self.name,
            fingerprint(&self.plan_json)
        )
    }

    /// How long the merge Job waits for every shard's `shard.json` before giving up.
    pub fn merge_wait_s(&self) -> u64 {
        self.active_deadline_s.map_or(DEFAULT_MERGE_WAIT_S, |d| {
            d.saturating_add(MERGE_WAIT_SLACK_S)
        })
    }
}

/// Why no manifests could be produced.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum K8sError {
    /// A name, label, key or path that Kubernetes would reject.
    #[error("invalid {what} {value:?}: {reason}")]
    Invalid {
        /// Which option or field.
        what: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The shard count is out of range.
    #[error("--shards {0}: must be between 1 and {MAX_SHARDS}")]
    Shards(u32),
    /// The plan is not JSON.
    #[error("the plan is not valid JSON: {0}")]
    PlanNotJson(String),
    /// The plan would not fit in a ConfigMap.
    #[error("the plan has {0} bytes; a ConfigMap holds at most {MAX_PLAN_BYTES}")]
    PlanTooLarge(usize),
    /// The plan was cut for another number of shards.
    #[error("the plan was made for {plan} shards but {options} were asked for")]
    ShardsMismatch {
        /// `shards` recorded in the plan.
        plan: u64,
        /// `shards` in the options.
        options: u32,
    },
    /// A credential would end up in the manifest text.
    #[error("{0}: credentials must come from a Secret (secret_env), never inline")]
    InlineCredential(String),
}

/// FNV-1a (64 bit), shortened: a name for the plan text, not a security measure.
fn fingerprint(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")[..12].to_string()
}

/// Builds the manifests for `o`, in the order they should be applied.
pub fn manifests(o: &K8sOptions) -> Result<Vec<Value>, K8sError> {
    validate(o)?;
    let mut docs = vec![plan_config_map(o)];
    if let Storage::Pvc {
        claim_name: None,
        size,
        storage_class,
    } = &o.storage
    {
        docs.push(results_claim(o, size, storage_class.as_deref()));
    }
    docs.push(shard_job(o));
    if matches!(o.storage, Storage::Pvc { .. }) {
        docs.push(merge_job(o));
    }
    Ok(docs)
}

// ---------------------------------------------------------------------------------------
// Objects.

fn labels(o: &K8sOptions, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "servebench",
        "app.kubernetes.io/instance": o.name,
        "app.kubernetes.io/component": component,
    })
}

fn metadata(o: &K8sOptions, name: String, component: &str) -> Value {
    let mut m = json!({"name": name, "labels": labels(o, component)});
    if let Some(ns) = &o.namespace {
        m["namespace"] = json!(ns);
    }
    m
}

fn plan_config_map(o: &K8sOptions) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(o, o.plan_config_map_name(), "plan"),
        // A frozen plan must not change under running shards; immutable also spares the
        // kubelets from watching it. A new plan needs a new --name (or a delete first).
        "immutable": true,
        "data": {"plan.json": o.plan_json},
    })
}

fn results_claim(o: &K8sOptions, size: &str, storage_class: Option<&str>) -> Value {
    let mut spec = json!({
        // Shards on different nodes and the merge pod all mount it at once.
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": size}},
    });
    if let Some(class) = storage_class {
        spec["storageClassName"] = json!(class);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(o, o.results_claim_name().unwrap_or_default(), "results"),
        "spec": spec,
    })
}

fn servebench_argv(o: &K8sOptions) -> Vec<String> {
    o.command
        .clone()
        .unwrap_or_else(|| vec![DEFAULT_COMMAND.to_string()])
}

fn resources(o: &K8sOptions) -> Value {
    let mut r = json!({"requests": {"cpu": o.cpu_request, "memory": o.memory_request}});
    let mut limits = Map::new();
    if let Some(cpu) = &o.cpu_limit {
        limits.insert("cpu".into(), json!(cpu));
    }
    if let Some(mem) = &o.memory_limit {
        limits.insert("memory".into(), json!(mem));
    }
    if !limits.is_empty() {
        r["limits"] = Value::Object(limits);
    }
    r
}

/// Non-root, no privilege escalation, no capabilities, default seccomp: what the
/// "restricted" Pod Security Standard asks, so the Jobs run in locked-down namespaces.
fn container_security() -> Value {
    json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
}

fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": RUN_AS_ID,
        "runAsGroup": RUN_AS_ID,
        // Makes a freshly provisioned results volume writable by that group.
        "fsGroup": RUN_AS_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

fn results_volume(o: &K8sOptions) -> Value {
    match o.results_claim_name() {
        Some(claim) => json!({"name": "results", "persistentVolumeClaim": {"claimName": claim}}),
        None => json!({"name": "results", "emptyDir": {}}),
    }
}

/// The shell wrapper of upload mode. `$1` is the shard's folder; the rest is servebench's
/// argv, run as "$@" so that no argument is ever re-parsed by the shell. It archives the
/// folder, PUTs it as `shard-<i>.tar.gz` under the upload URL, and exits with servebench's
/// own status. No `$(...)` anywhere: the kubelet would take it for a variable reference.
const UPLOAD_SCRIPT: &str = r#"set -u
dir="$1"; shift
parent="${dir%/*}"; base="${dir##*/}"
status=0
"$@" || status=$?
if [ ! -f "$dir/shard.json" ]; then
  echo "$dir has no shard.json (the shard did not finish): nothing to upload" >&2
  [ "$status" -ne 0 ] || status=1
  exit "$status"
fi
tar -C "$parent" -czf "$parent/$base.tar.gz" "$base" || exit 1
url="${SERVEBENCH_UPLOAD_URL%/}/$base.tar.gz"
if [ -n "${SERVEBENCH_UPLOAD_AUTHORIZATION:-}" ]; then
  curl --fail --silent --show-error --retry 3 -H "Authorization: ${SERVEBENCH_UPLOAD_AUTHORIZATION}" --upload-file "$parent/$base.tar.gz" "$url" || exit 1
else
  curl --fail --silent --show-error --retry 3 --upload-file "$parent/$base.tar.gz" "$url" || exit 1
fi
echo "uploaded $base.tar.gz"
exit "$status"
"#;

fn shard_env(o: &K8sOptions) -> Vec<Value> {
    // Defined explicitly (and first) rather than left to the Job controller: `$(VAR)` in
    // args and in later env values expands only variables the container spec names, and
    // an explicit definition makes the manifest say where the index comes from. The
    // controller sees the name already present and adds nothing. The annotation (not the
    // newer pod label) works on every version since Indexed Jobs exist.
    let mut env = vec![json!({
        "name": JOB_INDEX_ENV,
        "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        }},
    })];
    if let Storage::EmptyDirWithUpload { upload_url } = &o.storage {
        env.push(json!({"name": UPLOAD_URL_ENV, "value": upload_url}));
    }
    for (name, value) in &o.env {
        env.push(json!({"name": name, "value": value}));
    }
    for (name, secret, key) in &o.secret_env {
        env.push(json!({
            "name": name,
            "valueFrom": {"secretKeyRef": {"name": secret, "key": key}},
        }));
    }
    env
}

/// Shards and the merge pod both go where the user said load generators belong (off the
/// serving nodes, typically).
fn add_node_selector(o: &K8sOptions, pod: &mut Value) {
    if !o.node_selector.is_empty() {
        let sel: Map<String, Value> = o
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        pod["nodeSelector"] = Value::Object(sel);
    }
}

fn shard_job(o: &K8sOptions) -> Value {
    let (command, args) = shard_command(o);
    let container = json!({
        "name": "shard",
        "image": o.image,
        "command": command,
        "args": args,
        "env": shard_env(o),
        "resources": resources(o),
        "volumeMounts": [
            {"name": "plan", "mountPath": PLAN_DIR, "readOnly": true},
            {"name": "results", "mountPath": RESULTS_DIR},
        ],
        "securityContext": container_security(),
    });
    let pod = shard_pod(o, container);
    let mut spec = json!({
        "completionMode": "Indexed",
        "completions": o.shards,
        // All shards at once: the plan's arrival schedule assumes every share is sent.
        "parallelism": o.shards,
        "backoffLimit": o.backoff_limit,
        "template": {"metadata": {"labels": labels(o, "shard")}, "spec": pod},
    });
    if let Some(deadline) = o.active_deadline_s {
        spec["activeDeadlineSeconds"] = json!(deadline);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(o, o.shard_job_name(), "shard"),
        "spec": spec,
    })
}

/// The shard container's command and arguments: `servebench run --plan … --shard i/N
/// --out …`, wrapped in the upload script when results are uploaded.
fn shard_command(o: &K8sOptions) -> (Vec<String>, Vec<String>) {
    let shard_dir = format!("{}/shard-$({JOB_INDEX_ENV})", o.run_dir());
    let mut run: Vec<String> = vec![
        "run".into(),
        "--plan".into(),
        PLAN_PATH.into(),
        // The index is also servebench's default (JOB_COMPLETION_INDEX), but spelling out
        // `i/N` lets the shard check N against the plan before it sends anything.
        "--shard".into(),
        format!("$({JOB_INDEX_ENV})/{}", o.shards),
        "--out".into(),
        shard_dir.clone(),
    ];
    run.extend(o.extra_run_args.iter().cloned());
    match &o.storage {
        Storage::Pvc { .. } => (servebench_argv(o), run),
        Storage::EmptyDirWithUpload { .. } => {
            let command = vec![
                "/bin/sh".into(),
                "-c".into(),
                UPLOAD_SCRIPT.into(),
                "shard".into(),
            ];
            let mut args = vec![shard_dir];
            args.extend(servebench_argv(o));
            args.extend(run);
            (command, args)
        }
    }
}

/// The shard pod around `container`: spread over nodes, the plan and results volumes
/// mounted.
fn shard_pod(o: &K8sOptions, container: Value) -> Value {
    let selector = json!({
        "app.kubernetes.io/instance": o.name,
        "app.kubernetes.io/component": "shard",
    });
    let mut pod = json!({
        "restartPolicy": "Never",
        // Preferred, not required: with fewer nodes than shards a hard rule would leave
        // shards Pending past the plan's start time; spreading is a best effort.
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": selector},
                "topologyKey": "kubernetes.io/hostname",
            },
        }]}},
        "securityContext": pod_security(),
        "containers": [container],
        "volumes": [
            {"name": "plan", "configMap": {
                "name": o.plan_config_map_name(),
                "items": [{"key": "plan.json", "path": "plan.json"}],
            }},
            results_volume(o),
        ],
    });
    add_node_selector(o, &mut pod);
    pod
}

/// The merge Job's wait loop: succeeds once every `shard-<i>/shard.json` exists, fails after
/// the timeout with the list of missing shards. `$1` = shard count, `$2` = timeout in
/// seconds, `$3` = the run folder. A shard writes `shard.json` last (after its final
/// `run.json`; a `run.json` exists from the start, saying `running`) and by renaming, so
/// its presence means the shard is done. `$((...))` is left alone by the kubelet (no
/// variable is named `(...`).
const WAIT_SCRIPT: &str = r#"set -u
want="$1"; timeout="$2"; dir="$3"; waited=0; last=-1
while :; do
  missing=""; n=0; i=0
  while [ "$i" -lt "$want" ]; do
    if [ ! -f "$dir/shard-$i/shard.json" ]; then missing="$missing $i"; n=$((n + 1)); fi
    i=$((i + 1))
  done
  if [ "$n" -eq 0 ]; then echo "all $want shards have shard.json"; exit 0; fi
  if [ "$n" -ne "$last" ]; then echo "waiting for $n of $want shards"; last="$n"; fi
  if [ "$waited" -ge "$timeout" ]; then
    echo "gave up after ${timeout}s; shards without shard.json:$missing" >&2
    exit 1
  fi
  sleep 10; waited=$((waited + 10))
done
"#;

fn merge_job(o: &K8sOptions) -> Value {
    let mut args: Vec<String> = vec!["merge".into()];
    // Every folder named, not a glob: a missing shard then fails the merge instead of
    // silently shrinking the load it reports.
    let run_dir = o.run_dir();
    args.extend((0..o.shards).map(|i| format!("{run_dir}/shard-{i}")));
    args.extend(["-o".into(), format!("{run_dir}/merged")]);
    let wait = json!({
        "name": "wait-for-shards",
        "image": o.wait_image.as_ref().unwrap_or(&o.image),
        "command": ["/bin/sh", "-c", WAIT_SCRIPT, "wait-for-shards"],
        "args": [o.shards.to_string(), o.merge_wait_s().to_string(), run_dir],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
        "volumeMounts": [{"name": "results", "mountPath": RESULTS_DIR, "readOnly": true}],
        "securityContext": container_security(),
    });
    let merge = json!({
        "name": "merge",
        "image": o.image,
        "command": servebench_argv(o),
        "args": args,
        "resources": resources(o),
        "volumeMounts": [{"name": "results", "mountPath": RESULTS_DIR}],
        "securityContext": container_security(),
    });
    let mut pod = json!({
        "restartPolicy": "Never",
        "securityContext": pod_security(),
        "initContainers": [wait],
        "containers": [merge],
        "volumes": [results_volume(o)],
    });
    add_node_selector(o, &mut pod);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(o, o.merge_job_name(), "merge"),
        "spec": {
            // A merge that failed is looked at, not retried: the output folder may be
            // half-written and servebench refuses to overwrite it.
            "backoffLimit": 0,
            "template": {"metadata": {"labels": labels(o, "merge")}, "spec": pod},
        },
    })
}

mod validate;

#[cfg(test)]
mod tests;
