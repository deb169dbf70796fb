use super::validate::quantity;
use super::*;

const PLAN: &str = "{\n  \"seed\": 42,\n  \"shards\": 4\n}\n";

fn opts() -> K8sOptions {
    K8sOptions::new("bench-a", "registry.example/servebench:0.1", 4, PLAN)
}

fn docs(o: &K8sOptions) -> Vec<Value> {
    manifests(o).expect("valid options")
}

fn kind<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string"))
        .collect()
}

#[test]
fn default_options_give_config_map_claim_and_two_jobs() {
    let d = docs(&opts());
    let kinds: Vec<_> = d
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "ConfigMap/bench-a-plan",
            "PersistentVolumeClaim/bench-a-results",
            "Job/bench-a-shards",
            "Job/bench-a-merge"
        ]
    );
    for doc in &d {
        let labels = &doc["metadata"]["labels"];
        assert_eq!(labels["app.kubernetes.io/name"], "servebench");
        assert_eq!(labels["app.kubernetes.io/instance"], "bench-a");
        assert!(doc["metadata"].get("namespace").is_none());
    }
}

#[test]
fn shard_job_is_indexed_with_one_pod_per_shard() {
    let o = opts();
    let d = docs(&o);
    let job = kind(&d, "Job", "bench-a-shards");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    assert_eq!(spec["backoffLimit"], 0);
    assert!(spec.get("activeDeadlineSeconds").is_none());
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        spec["template"]["metadata"]["labels"]["app.kubernetes.io/instance"],
        "bench-a"
    );
    let c = &pod["containers"][0];
    assert_eq!(strings(&c["command"]), [DEFAULT_COMMAND]);
    assert_eq!(
        strings(&c["args"]),
        [
            "run",
            "--plan",
            "/etc/servebench/plan.json",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/4",
            "--out",
            &format!("{}/shard-$(JOB_COMPLETION_INDEX)", o.run_dir()),
        ]
    );
    // The variable that `$(JOB_COMPLETION_INDEX)` expands is defined in the container,
    // first, from the completion-index annotation.
    assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
}

#[test]
fn shards_spread_over_nodes_by_preference() {
    let d = docs(&opts());
    let pod = &kind(&d, "Job", "bench-a-shards")["spec"]["template"]["spec"];
    let anti = &pod["affinity"]["podAntiAffinity"];
    assert!(anti
        .get("requiredDuringSchedulingIgnoredDuringExecution")
        .is_none());
    let term = &anti["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        term["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let sel = &term["podAffinityTerm"]["labelSelector"]["matchLabels"];
    let pod_labels = &kind(&d, "Job", "bench-a-shards")["spec"]["template"]["metadata"]["labels"];
    for (k, v) in sel.as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "selector must match the shard pods");
    }
}

#[test]
fn plan_is_stored_and_mounted_read_only() {
    let d = docs(&opts());
    let cm = kind(&d, "ConfigMap", "bench-a-plan");
    assert_eq!(cm["data"]["plan.json"], PLAN);
    assert_eq!(cm["immutable"], true);
    let pod = &kind(&d, "Job", "bench-a-shards")["spec"]["template"]["spec"];
    let vol = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "plan")
        .unwrap();
    assert_eq!(vol["configMap"]["name"], "bench-a-plan");
    assert_eq!(vol["configMap"]["items"][0]["path"], "plan.json");
    let mount = &pod["containers"][0]["volumeMounts"][0];
    assert_eq!(mount["name"], "plan");
    assert_eq!(
        format!("{}/plan.json", mount["mountPath"].as_str().unwrap()),
        PLAN_PATH
    );
    assert_eq!(mount["readOnly"], true);
}

#[test]
fn secrets_are_references_never_values() {
    let mut o = opts();
    o.secret_env = vec![("OPENAI_API_KEY".into(), "llm-keys".into(), "openai".into())];
    o.env = vec![("RUST_LOG".into(), "info".into())];
    let d = docs(&o);
    let env =
        &kind(&d, "Job", "bench-a-shards")["spec"]["template"]["spec"]["containers"][0]["env"];
    let key = env
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "OPENAI_API_KEY")
        .unwrap();
    assert!(key.get("value").is_none());
    assert_eq!(key["valueFrom"]["secretKeyRef"]["name"], "llm-keys");
    assert_eq!(key["valueFrom"]["secretKeyRef"]["key"], "openai");
    let log = env
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "RUST_LOG")
        .unwrap();
    assert_eq!(log["value"], "info");
    // The merge Job does not need the keys at all.
    let merge = kind(&d, "Job", "bench-a-merge");
    assert!(!merge.to_string().contains("llm-keys"));
}

#[test]
fn credentials_inline_are_refused() {
    for name in [
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "db_password",
        "MY_SECRET",
        "X_AUTH",
    ] {
        let mut o = opts();
        o.env = vec![(name.into(), "sk-123".into())];
        assert!(
            matches!(manifests(&o), Err(K8sError::InlineCredential(_))),
            "{name} accepted as plain env"
        );
    }
    let mut o = opts();
    o.env = vec![("TOKENIZERS_PARALLELISM".into(), "false".into())];
    assert!(manifests(&o).is_ok(), "not a credential");

    for args in [
        vec!["--header", "Authorization: Bearer sk-1"],
        vec!["--header=X-Api-Key: abc"],
        vec!["--url", "http://user:pw@host:8000/v1"],
    ] {
        let mut o = opts();
        o.extra_run_args = args.iter().map(|s| s.to_string()).collect();
        assert!(
            matches!(manifests(&o), Err(K8sError::InlineCredential(_))),
            "{args:?}"
        );
    }
    // References to variables from Secrets are fine: the kubelet expands them.
    let mut o = opts();
    o.secret_env = vec![("API_TOKEN".into(), "llm-keys".into(), "token".into())];
    o.extra_run_args = vec![
        "--header".into(),
        "Authorization: Bearer $(API_TOKEN)".into(),
    ];
    assert!(manifests(&o).is_ok());
}

#[test]
fn merge_job_waits_for_every_shard_then_merges() {
    let o = opts();
    let run_dir = o.run_dir();
    let d = docs(&o);
    let job = kind(&d, "Job", "bench-a-merge");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    assert!(job["spec"].get("completionMode").is_none());
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let wait = &pod["initContainers"][0];
    assert_eq!(strings(&wait["command"])[..2], ["/bin/sh", "-c"]);
    assert_eq!(strings(&wait["args"]), ["4", "86400", run_dir.as_str()]);
    let script = wait["command"][2].as_str().unwrap();
    assert!(script.contains("\"$dir/shard-$i/shard.json\""));
    let merge = &pod["containers"][0];
    assert_eq!(strings(&merge["command"]), [DEFAULT_COMMAND]);
    assert_eq!(
        strings(&merge["args"]),
        [
            "merge".to_string(),
            format!("{run_dir}/shard-0"),
            format!("{run_dir}/shard-1"),
            format!("{run_dir}/shard-2"),
            format!("{run_dir}/shard-3"),
            "-o".to_string(),
            format!("{run_dir}/merged"),
        ]
    );
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "bench-a-results"
    );
}

#[test]
fn merge_wait_follows_the_deadline() {
    let mut o = opts();
    o.active_deadline_s = Some(3600);
    let d = docs(&o);
    assert_eq!(
        kind(&d, "Job", "bench-a-shards")["spec"]["activeDeadlineSeconds"],
        3600
    );
    let wait = &kind(&d, "Job", "bench-a-merge")["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(strings(&wait["args"])[..2], ["4", "4500"]);
}

#[test]
fn scripts_hold_nothing_the_kubelet_would_expand() {
    // `$(NAME)` is a kubelet variable reference; the scripts may only use `$((`.
    for script in [UPLOAD_SCRIPT, WAIT_SCRIPT] {
        for (i, _) in script.match_indices("$(") {
            assert_eq!(
                &script[i..i + 3],
                "$((",
                "kubelet would expand {}",
                &script[i..]
            );
        }
    }
}

#[test]
fn existing_claim_is_used_not_created() {
    let mut o = opts();
    o.storage = Storage::Pvc {
        claim_name: Some("shared-results".into()),
        size: "ignored".into(),
        storage_class: None,
    };
    let d = docs(&o);
    assert!(d.iter().all(|d| d["kind"] != "PersistentVolumeClaim"));
    for job in ["bench-a-shards", "bench-a-merge"] {
        let vols = &kind(&d, "Job", job)["spec"]["template"]["spec"]["volumes"];
        assert!(vols
            .to_string()
            .contains("\"claimName\":\"shared-results\""));
    }
}

#[test]
fn created_claim_is_read_write_many() {
    let mut o = opts();
    o.storage = Storage::Pvc {
        claim_name: None,
        size: "20Gi".into(),
        storage_class: Some("nfs-client".into()),
    };
    let d = docs(&o);
    let pvc = kind(&d, "PersistentVolumeClaim", "bench-a-results");
    assert_eq!(strings(&pvc["spec"]["accessModes"]), ["ReadWriteMany"]);
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "20Gi");
    assert_eq!(pvc["spec"]["storageClassName"], "nfs-client");
}

#[test]
fn upload_mode_wraps_the_run_and_has_no_merge_job() {
    let mut o = opts();
    o.storage = Storage::EmptyDirWithUpload {
        upload_url: "https://uploads.example/runs/bench-a/".into(),
    };
    o.extra_run_args = vec!["--quiet".into()];
    let d = docs(&o);
    assert_eq!(d.len(), 2, "config map and shard job only");
    let pod = &kind(&d, "Job", "bench-a-shards")["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let cmd = strings(&c["command"]);
    assert_eq!(cmd[..2], ["/bin/sh", "-c"]);
    assert_eq!(cmd[3], "shard");
    let args = strings(&c["args"]);
    let shard_dir = format!("{}/shard-$(JOB_COMPLETION_INDEX)", o.run_dir());
    assert_eq!(args[..3], [shard_dir.as_str(), DEFAULT_COMMAND, "run"]);
    assert_eq!(args.last(), Some(&"--quiet"));
    assert_eq!(c["env"][1]["name"], "SERVEBENCH_UPLOAD_URL");
    assert_eq!(pod["volumes"][1]["emptyDir"], json!({}));
}

#[test]
fn options_reach_the_pods() {
    let mut o = opts();
    o.namespace = Some("load".into());
    o.command = Some(vec!["/opt/sb/servebench".into()]);
    o.cpu_limit = Some("4".into());
    o.memory_limit = Some("8Gi".into());
    o.node_selector = vec![("node.kubernetes.io/pool".into(), "loadgen".into())];
    o.backoff_limit = 2;
    let d = docs(&o);
    assert!(d.iter().all(|d| d["metadata"]["namespace"] == "load"));
    let shards = &kind(&d, "Job", "bench-a-shards")["spec"];
    assert_eq!(shards["backoffLimit"], 2);
    let pod = &shards["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["node.kubernetes.io/pool"], "loadgen");
    let c = &pod["containers"][0];
    assert_eq!(strings(&c["command"]), ["/opt/sb/servebench"]);
    assert_eq!(
        c["resources"]["limits"],
        json!({"cpu": "4", "memory": "8Gi"})
    );
    assert_eq!(
        c["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    let merge = &kind(&d, "Job", "bench-a-merge")["spec"]["template"]["spec"];
    assert_eq!(
        strings(&merge["containers"][0]["command"]),
        ["/opt/sb/servebench"]
    );
    assert_eq!(merge["nodeSelector"]["node.kubernetes.io/pool"], "loadgen");
}

#[test]
fn pods_run_as_non_root() {
    let d = docs(&opts());
    for job in ["bench-a-shards", "bench-a-merge"] {
        let pod = &kind(&d, "Job", job)["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        let containers = pod["containers"].as_array().unwrap().iter();
        let init = pod["initContainers"].as_array().into_iter().flatten();
        for c in containers.chain(init) {
            assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
        }
    }
}

#[test]
fn invalid_names_are_rejected() {
    let long = "a".repeat(MAX_NAME_LEN + 1);
    for name in [
        "",
        "Bench",
        "bench_a",
        "-bench",
        "bench-",
        "bench.a",
        "bénch",
        long.as_str(),
    ] {
        let mut o = opts();
        o.name = name.into();
        assert!(
            matches!(manifests(&o), Err(K8sError::Invalid { what: "--name", .. })),
            "{name:?} accepted"
        );
    }
    let mut o = opts();
    o.name = "a".repeat(MAX_NAME_LEN);
    o.plan_json = "{}".into();
    o.shards = MAX_SHARDS;
    let d = manifests(&o).expect("52 characters and three-digit indexes fit");
    let job = kind(&d, "Job", &o.shard_job_name());
    let hostname = format!(
        "{}-{}",
        job["metadata"]["name"].as_str().unwrap(),
        MAX_SHARDS - 1
    );
    assert_eq!(hostname.len(), 63);
    let mut o = opts();
    o.namespace = Some("Load".into());
    assert!(manifests(&o).is_err());
}

/// One bad option each, and a piece of the message it must produce.
type Case = (&'static str, fn(&mut K8sOptions));

#[test]
fn other_invalid_options_are_rejected() {
    let cases: &[Case] = &[
        ("--shards 0", |o| o.shards = 0),
        ("--shards 1001", |o| o.shards = MAX_SHARDS + 1),
        ("not valid JSON", |o| o.plan_json = "seed: 1".into()),
        ("made for 4 shards but 3", |o| o.shards = 3),
        ("invalid cpu request", |o| o.cpu_request = "two".into()),
        ("invalid memory limit", |o| {
            o.memory_limit = Some("1GB".into())
        }),
        ("invalid volume size", |o| {
            o.storage = Storage::Pvc {
                claim_name: None,
                size: "lots".into(),
                storage_class: None,
            }
        }),
        ("invalid environment variable \"1X\"", |o| {
            o.env = vec![("1X".into(), "v".into())]
        }),
        ("defined twice or reserved", |o| {
            o.env = vec![("JOB_COMPLETION_INDEX".into(), "0".into())]
        }),
        ("defined twice or reserved", |o| {
            o.env = vec![("A".into(), "1".into())];
            o.secret_env = vec![("A".into(), "s".into(), "k".into())];
        }),
        ("invalid secret name", |o| {
            o.secret_env = vec![("A".into(), "S".into(), "k".into())]
        }),
        ("invalid secret key", |o| {
            o.secret_env = vec![("A".into(), "s".into(), "k/1".into())]
        }),
        ("set by the manifests", |o| {
            o.extra_run_args = vec!["--out=/tmp/x".into()]
        }),
        ("set by the manifests", |o| {
            o.extra_run_args = vec!["--shard".into(), "0/4".into()]
        }),
        ("invalid node selector key", |o| {
            o.node_selector = vec![("bad key".into(), "v".into())]
        }),
        ("invalid node selector value", |o| {
            o.node_selector = vec![("pool".into(), "-x".into())]
        }),
        ("invalid --image", |o| o.image = "".into()),
        ("invalid command", |o| o.command = Some(vec![])),
        ("invalid active deadline", |o| o.active_deadline_s = Some(0)),
        ("invalid --namespace", |o| o.namespace = Some("Load".into())),
        ("must be an http", |o| {
            o.storage = Storage::EmptyDirWithUpload {
                upload_url: "ftp://x".into(),
            }
        }),
        ("must be a prefix", |o| {
            o.storage = Storage::EmptyDirWithUpload {
                upload_url: "https://x/r?sig=1".into(),
            }
        }),
        ("the upload URL: credentials", |o| {
            o.storage = Storage::EmptyDirWithUpload {
                upload_url: "https://u:p@x/r".into(),
            }
        }),
    ];
    for (message, change) in cases {
        let mut o = opts();
        change(&mut o);
        match manifests(&o) {
            Ok(_) => panic!("accepted; expected an error with {message:?}"),
            Err(e) => assert!(e.to_string().contains(message), "{e} lacks {message:?}"),
        }
    }
    let mut o = opts();
    o.plan_json = format!("{{\"pad\": \"{}\"}}", "x".repeat(MAX_PLAN_BYTES));
    assert!(matches!(manifests(&o), Err(K8sError::PlanTooLarge(_))));
}

#[test]
fn quantities() {
    for q in [
        "1", "500m", "0.5", "1Gi", "512Mi", "1e3", "2E-2", "10k", "1.5G",
    ] {
        assert!(quantity("q", q).is_ok(), "{q}");
    }
    for q in ["", "m", "1GB", "-1", "1..5", "1 Gi", "1e", "Gi"] {
        assert!(quantity("q", q).is_err(), "{q}");
    }
}

#[test]
fn yaml_of_the_manifests_names_every_object() {
    let y = to_yaml(&docs(&opts()));
    assert_eq!(y.matches("---\n").count(), 4);
    assert!(y.contains("\n  name: bench-a-shards\n"));
    assert!(y.contains("completionMode: Indexed\n"));
    // The pretty-printed plan stays readable as a literal block.
    assert!(y.contains("  plan.json: |\n    {\n      \"seed\": 42,\n"));
}

#[test]
fn each_plan_gets_its_own_results_folder() {
    assert_eq!(fingerprint(""), "cbf29ce48422");
    assert_eq!(fingerprint("a"), "af63dc4c8601");
    let a = opts();
    let mut b = opts();
    b.plan_json = PLAN.replace("42", "43");
    assert!(a.run_dir().starts_with("/results/bench-a-"));
    assert_eq!(a.run_dir(), opts().run_dir());
    assert_ne!(a.run_dir(), b.run_dir());
}

#[test]
fn upload_script_reads_the_variables_the_manifest_defines() {
    assert!(UPLOAD_SCRIPT.contains(&format!("${{{UPLOAD_URL_ENV}%/}}")));
    assert!(UPLOAD_SCRIPT.contains(&format!("${{{UPLOAD_AUTH_ENV}:-}}")));
    let mut o = opts();
    o.storage = Storage::EmptyDirWithUpload {
        upload_url: "https://x/r".into(),
    };
    o.secret_env = vec![(UPLOAD_AUTH_ENV.into(), "upload".into(), "header".into())];
    assert!(
        manifests(&o).is_ok(),
        "the upload header comes from a Secret"
    );
    o.secret_env.clear();
    o.env = vec![(UPLOAD_AUTH_ENV.into(), "Bearer x".into())];
    assert!(matches!(manifests(&o), Err(K8sError::InlineCredential(_))));
}
