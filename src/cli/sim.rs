//! `servebench sim`: serve the simulator in the foreground.

use crate::flags::{sim_config, SimArgs};
use crate::pipeline::exit;
use crate::sim::SimServer;
use anyhow::{bail, Context, Result};
use std::net::{IpAddr, SocketAddr};

pub fn serve(args: SimArgs) -> Result<u8> {
    let ip: IpAddr = args
        .host
        .parse()
        .with_context(|| format!("--host `{}` is not an IP address", args.host))?;
    if !ip.is_loopback() && !args.allow_remote {
        bail!("refusing to bind {ip}: the simulator is for local testing; pass --allow-remote to expose it");
    }
    let mut config = sim_config(
        &args.preset,
        args.config.as_deref(),
        args.ttft_ms,
        args.itl_ms,
    )?;
    if let Some(f) = config.fixed.as_mut() {
        f.itl_jitter_ms = args.itl_jitter_ms;
        f.tokens_per_chunk = args.tokens_per_chunk;
    }
    if let Some(t) = args.time_scale {
        config.time_scale = t;
    }
    if let Some(s) = args.seed {
        config.seed = s;
    }
    let server = SimServer::spawn_on(config, SocketAddr::new(ip, args.port), args.threads)
        .with_context(|| format!("binding {ip}:{}", args.port))?;
    // A standalone server keeps no truth in memory (it would grow with every request served);
    // --truth-log writes it to a file instead.
    server.truth().keep_at_most(0);
    if let Some(path) = &args.truth_log {
        server
            .truth()
            .log_to(path)
            .with_context(|| format!("opening {}", path.display()))?;
    }
    println!("{}", server.base_url());
    // On stderr: scripts read the base URL as the only line of stdout.
    eprintln!(
        "gRPC (KServe v2 / Triton, --endpoint grpc): {}",
        server.grpc_url()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let _ = tokio::signal::ctrl_c().await;
    });
    drop(server);
    Ok(exit::OK)
}
