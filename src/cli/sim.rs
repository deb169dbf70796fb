//! `servebench sim`: serve the simulator in the foreground.

use super::args::SimArgs;
use super::exit;
use crate::sim::{SimConfig, SimServer};
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
    let config = SimConfig {
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        itl_jitter_ms: args.itl_jitter_ms,
        tokens_per_chunk: args.tokens_per_chunk,
        time_scale: args.time_scale,
        seed: args.seed,
        ..SimConfig::default()
    };
    let server = SimServer::spawn_on(config, SocketAddr::new(ip, args.port), args.threads)
        .with_context(|| format!("binding {ip}:{}", args.port))?;
    println!("{}", server.base_url());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let _ = tokio::signal::ctrl_c().await;
    });
    drop(server);
    Ok(exit::OK)
}
