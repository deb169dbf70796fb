//! GPU telemetry without I/O: DCGM exporter pages and NVML readings become per-GPU samples,
//! and samples over a run become an energy figure (joules, joules per token, tokens per joule).
//!
//! Energy is the quantity most easily got wrong, so the rules are explicit. The cumulative
//! energy counter (NVML `total_energy_consumption`, DCGM `TOTAL_ENERGY_CONSUMPTION`, both in
//! mJ since the driver loaded) is exact, so its end − start delta is preferred per GPU. When a
//! GPU lacks the counter (pre-Volta, some MIG setups), or the counter went down inside the
//! window (driver reload), power readings are integrated with the trapezoid rule instead, and
//! the result says so. A GPU with neither is reported as skipped, never as 0 J.
//! Unit traps: DCGM gives power in W and memory in MiB; NVML gives mW and bytes.
//!
//! CPU energy through RAPL (`/sys/class/powercap/*/energy_uj`) wraps at
//! `max_energy_range_uj`; [`rapl_delta_uj`] handles that.

use serde::{Deserialize, Serialize};

use super::prometheus::{parse, ParseError, Scrape};

/// One reading of one GPU. Every field the source did not give is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// Device index (DCGM `gpu` label, NVML index).
    pub index: u32,
    /// `GPU-xxxxxxxx-...`.
    pub uuid: Option<String>,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: Option<String>,
    /// Share of time a kernel was running, 0–100 %.
    pub util_pct: Option<f64>,
    /// Framebuffer memory in use, MiB.
    pub mem_used_mib: Option<f64>,
    /// Framebuffer memory in total, MiB.
    pub mem_total_mib: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Energy since the driver loaded, mJ (a counter).
    pub energy_mj: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// GPU temperature, °C.
    pub temp_c: Option<f64>,
    /// NVML clock throttle (event) reason bits; see [`throttle_reason_names`].
    pub throttle_reasons: Option<u64>,
}

/// NVML clock throttle reason bits (`nvmlClocksThrottleReason*`, later renamed
/// `nvmlClocksEventReason*`), with short names for reports.
pub const THROTTLE_REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// Names of the throttle reasons set in `mask` (unknown bits are left out).
pub fn throttle_reason_names(mask: u64) -> Vec<&'static str> {
    THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// Per-GPU accumulator: total memory needs FB_FREE and FB_RESERVED, which are not kept.
struct DcgmGpu {
    sample: GpuSample,
    fb_free: Option<f64>,
    fb_reserved: Option<f64>,
}

/// Reads a DCGM exporter page (`:9400/metrics`) into one sample per `gpu` label, sorted by
/// index. Series without a numeric `gpu` label are ignored. Under MIG one GPU can appear
/// several times (per instance); the first value of each field wins.
pub fn from_dcgm(scrape: &Scrape) -> Vec<GpuSample> {
    let mut gpus: Vec<DcgmGpu> = Vec::new();
    for s in scrape.samples() {
        let Some(field) = s.name.strip_prefix("DCGM_FI_") else {
            continue;
        };
        let Some(index) = s.label("gpu").and_then(|g| g.parse::<u32>().ok()) else {
            continue;
        };
        let pos = match gpus.iter().position(|g| g.sample.index == index) {
            Some(pos) => pos,
            None => {
                gpus.push(DcgmGpu {
                    sample: GpuSample {
                        index,
                        ..GpuSample::default()
                    },
                    fb_free: None,
                    fb_reserved: None,
                });
                gpus.len() - 1
            }
        };
        let gpu = &mut gpus[pos];
        if gpu.sample.uuid.is_none() {
            gpu.sample.uuid = s.label("UUID").or(s.label("uuid")).map(str::to_string);
        }
        if gpu.sample.name.is_none() {
            gpu.sample.name = s.label("modelName").map(str::to_string);
        }
        let v = s.value;
        let g = &mut gpu.sample;
        match field {
            "DEV_GPU_UTIL" => first(&mut g.util_pct, v),
            "DEV_FB_USED" => first(&mut g.mem_used_mib, v),
            "DEV_FB_FREE" => first(&mut gpu.fb_free, v),
            "DEV_FB_RESERVED" => first(&mut gpu.fb_reserved, v),
            "DEV_POWER_USAGE" => first(&mut g.power_w, v),
            "DEV_TOTAL_ENERGY_CONSUMPTION" => first(&mut g.energy_mj, v),
            "DEV_SM_CLOCK" => first(&mut g.sm_clock_mhz, v),
            "DEV_GPU_TEMP" => first(&mut g.temp_c, v),
            // Renamed in DCGM 3.3 along with NVML's "clock event reasons".
            "DEV_CLOCK_THROTTLE_REASONS" | "DEV_CLOCKS_EVENT_REASONS"
                if g.throttle_reasons.is_none() =>
            {
                g.throttle_reasons = as_bitmask(v);
            }
            _ => {}
        }
    }
    let mut out: Vec<GpuSample> = gpus
        .into_iter()
        .map(|mut g| {
            // Total = used + free (+ reserved, which newer drivers hold back and report).
            g.sample.mem_total_mib = match (g.sample.mem_used_mib, g.fb_free) {
                (Some(used), Some(free)) => Some(used + free + g.fb_reserved.unwrap_or(0.0)),
                _ => None,
            };
            g.sample
        })
        .collect();
    out.sort_by_key(|g| g.index);
    out
}

/// Parses the text of a DCGM exporter page, then [`from_dcgm`].
pub fn from_dcgm_text(text: &str) -> Result<Vec<GpuSample>, ParseError> {
    Ok(from_dcgm(&parse(text)?))
}

fn first(slot: &mut Option<f64>, value: f64) {
    if slot.is_none() && !value.is_nan() {
        *slot = Some(value);
    }
}

/// A bitmask sent as a float: only whole, non-negative values that fit are accepted.
fn as_bitmask(v: f64) -> Option<u64> {
    // 2^64 as f64; anything at or above it would saturate the cast.
    const LIMIT: f64 = 18_446_744_073_709_551_616.0;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < LIMIT).then_some(v as u64)
}

/// NVML readings in NVML's own units (as `nvml-wrapper` returns them); the I/O layer fills
/// this and [`NvmlReading::to_sample`] converts units once, here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvmlReading {
    pub index: u32,
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// `utilization_rates().gpu`, %.
    pub utilization_gpu_pct: Option<u32>,
    /// `memory_info().used`, bytes.
    pub memory_used_bytes: Option<u64>,
    /// `memory_info().total`, bytes.
    pub memory_total_bytes: Option<u64>,
    /// `power_usage()`, mW.
    pub power_mw: Option<u32>,
    /// `total_energy_consumption()`, mJ.
    pub total_energy_mj: Option<u64>,
    /// `temperature(Gpu)`, °C.
    pub temperature_c: Option<u32>,
    /// `clock_info(Clock::SM)`, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// `current_throttle_reasons()` bits.
    pub throttle_reasons: Option<u64>,
}

impl NvmlReading {
    /// The same reading in [`GpuSample`] units (W, MiB).
    pub fn to_sample(&self) -> GpuSample {
        const MIB: f64 = 1024.0 * 1024.0;
        GpuSample {
            index: self.index,
            uuid: self.uuid.clone(),
            name: self.name.clone(),
            util_pct: self.utilization_gpu_pct.map(f64::from),
            mem_used_mib: self.memory_used_bytes.map(|b| b as f64 / MIB),
            mem_total_mib: self.memory_total_bytes.map(|b| b as f64 / MIB),
            power_w: self.power_mw.map(|mw| f64::from(mw) / 1000.0),
            energy_mj: self.total_energy_mj.map(|e| e as f64),
            sm_clock_mhz: self.sm_clock_mhz.map(f64::from),
            temp_c: self.temperature_c.map(f64::from),
            throttle_reasons: self.throttle_reasons,
        }
    }
}

/// How an energy figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyMethod {
    /// End − start of the cumulative energy counter.
    CounterDelta,
    /// Trapezoidal integral of the power readings.
    TrapezoidPower,
    /// Some GPUs one way, some the other (whole-run figure only).
    Mixed,
}

/// Energy of one GPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuEnergy {
    pub index: u32,
    /// Energy used, J.
    pub joules: f64,
    /// Span the figure covers, s (first to last reading used: the window's edges, where
    /// the readings were interpolated to them).
    pub duration_s: f64,
    /// `joules − idle_power_w · duration_s`, J, when an idle power was given. Negative means
    /// the idle figure was higher than the run's mean power.
    pub active_joules: Option<f64>,
    /// `CounterDelta` or `TrapezoidPower`.
    pub method: EnergyMethod,
    /// The energy counter went down inside the window (driver reload), so power was used.
    pub counter_reset: bool,
}

/// Energy of all GPUs over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyEstimate {
    /// Sum over GPUs, J.
    pub joules: f64,
    /// Sum of the per-GPU active energy, J, when an idle power was given.
    pub active_joules: Option<f64>,
    pub method: EnergyMethod,
    /// Per GPU, by index.
    pub gpus: Vec<GpuEnergy>,
    /// GPUs seen but left out: fewer than two usable readings of both energy and power.
    pub skipped: Vec<u32>,
}

/// Energy used over a window from `(time in seconds, reading)` pairs of any number of GPUs
/// (grouped by `index`; any order). `idle_power_w` is one GPU's idle draw in W; given, each
/// GPU's active energy is its energy minus idle power × its duration.
/// `None` when no GPU has enough data.
pub fn energy_over_window(
    samples: &[(f64, GpuSample)],
    idle_power_w: Option<f64>,
) -> Option<EnergyEstimate> {
    let mut indices: Vec<u32> = samples.iter().map(|(_, g)| g.index).collect();
    indices.sort_unstable();
    indices.dedup();
    let mut gpus = Vec::new();
    let mut skipped = Vec::new();
    for index in indices {
        let mut series: Vec<(f64, &GpuSample)> = samples
            .iter()
            .filter(|(t, g)| g.index == index && t.is_finite())
            .map(|(t, g)| (*t, g))
            .collect();
        series.sort_by(|a, b| a.0.total_cmp(&b.0));
        match gpu_energy(index, &series, idle_power_w) {
            Some(e) => gpus.push(e),
            None => skipped.push(index),
        }
    }
    let first_method = gpus.first()?.method;
    let method = if gpus.iter().all(|g| g.method == first_method) {
        first_method
    } else {
        EnergyMethod::Mixed
    };
    Some(EnergyEstimate {
        joules: gpus.iter().map(|g| g.joules).sum(),
        active_joules: idle_power_w.map(|_| gpus.iter().filter_map(|g| g.active_joules).sum()),
        method,
        gpus,
        skipped,
    })
}

/// One GPU's energy from its readings sorted by time.
fn gpu_energy(index: u32, series: &[(f64, &GpuSample)], idle_w: Option<f64>) -> Option<GpuEnergy> {
    let energy: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|(t, g)| g.energy_mj.filter(|e| e.is_finite()).map(|e| (*t, e)))
        .collect();
    let mut counter_reset = false;
    if let (Some(&(t0, e0)), Some(&(t1, e1))) = (energy.first(), energy.last()) {
        // Check every step, not just the ends: a reload mid-window followed by growth past
        // the start value would otherwise pass as a small, wrong delta.
        if energy.windows(2).any(|w| w[1].1 < w[0].1) {
            counter_reset = true;
        } else if t1 > t0 {
            return Some(finish(
                index,
                (e1 - e0) / 1000.0,
                t1 - t0,
                idle_w,
                EnergyMethod::CounterDelta,
                false,
            ));
        }
    }
    let power: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|(t, g)| g.power_w.filter(|p| p.is_finite()).map(|p| (*t, p)))
        .collect();
    let (&(t0, _), &(t1, _)) = (power.first()?, power.last()?);
    if t1 <= t0 {
        return None;
    }
    // A missing reading between two present ones is bridged by the straight line.
    let joules = power
        .windows(2)
        .map(|w| (w[0].1 + w[1].1) / 2.0 * (w[1].0 - w[0].0))
        .sum();
    Some(finish(
        index,
        joules,
        t1 - t0,
        idle_w,
        EnergyMethod::TrapezoidPower,
        counter_reset,
    ))
}

fn finish(
    index: u32,
    joules: f64,
    duration_s: f64,
    idle_w: Option<f64>,
    method: EnergyMethod,
    counter_reset: bool,
) -> GpuEnergy {
    GpuEnergy {
        index,
        joules,
        duration_s,
        active_joules: idle_w.map(|w| joules - w * duration_s),
        method,
        counter_reset,
    }
}

/// Joules per output token; `None` without tokens.
pub fn joules_per_token(joules: f64, output_tokens: u64) -> Option<f64> {
    (output_tokens > 0).then(|| joules / output_tokens as f64)
}

/// Joules per completed request; `None` without requests.
pub fn joules_per_request(joules: f64, requests: u64) -> Option<f64> {
    (requests > 0).then(|| joules / requests as f64)
}

/// Output tokens per joule; `None` unless the energy is positive and finite.
pub fn tokens_per_joule(output_tokens: u64, joules: f64) -> Option<f64> {
    (joules > 0.0 && joules.is_finite()).then(|| output_tokens as f64 / joules)
}

/// Energy between two reads of a RAPL `energy_uj` counter, µJ. The counter wraps to 0 after
/// `max_energy_range_uj`; `after < before` is taken as exactly one wrap (read more often
/// than the wrap period: ~60 s at 4 kW for a 262 J range). Saturates instead of panicking
/// on inconsistent input (`before` above the range).
pub fn rapl_delta_uj(before: u64, after: u64, max_energy_range_uj: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        max_energy_range_uj
            .saturating_sub(before)
            .saturating_add(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DCGM: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/metrics/dcgm.txt"
    ));

    fn reading(index: u32, energy_mj: Option<f64>, power_w: Option<f64>) -> GpuSample {
        GpuSample {
            index,
            energy_mj,
            power_w,
            ..GpuSample::default()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn dcgm_fixture_two_gpus() {
        let gpus = from_dcgm_text(DCGM).unwrap();
        assert_eq!(gpus.len(), 2);
        let g0 = &gpus[0];
        assert_eq!(g0.index, 0);
        assert_eq!(
            g0.uuid.as_deref(),
            Some("GPU-8d2c3f4a-1b5e-4c6d-9e7f-0a1b2c3d4e5f")
        );
        assert_eq!(g0.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(g0.util_pct, Some(87.0));
        assert_eq!(g0.mem_used_mib, Some(71_234.0));
        // 71234 used + 9916 free + 409 reserved.
        assert_eq!(g0.mem_total_mib, Some(81_559.0));
        assert_eq!(g0.power_w, Some(612.345));
        assert_eq!(g0.energy_mj, Some(123_456_789.0));
        assert_eq!(g0.sm_clock_mhz, Some(1980.0));
        assert_eq!(g0.temp_c, Some(61.0));
        assert_eq!(g0.throttle_reasons, Some(0));
        let g1 = &gpus[1];
        assert_eq!(g1.mem_total_mib, Some(81_559.0)); // 70100 + 11050 + 409
        assert_eq!(g1.throttle_reasons, Some(4));
        assert_eq!(throttle_reason_names(4), ["sw_power_cap"]);
        assert_eq!(
            throttle_reason_names(0x41),
            ["gpu_idle", "hw_thermal_slowdown"]
        );
    }

    #[test]
    fn dcgm_partial_pages() {
        let page = "DCGM_FI_DEV_FB_USED{gpu=\"3\"} 100\n\
            DCGM_FI_DEV_FB_FREE{gpu=\"3\"} 900\n\
            DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"3\"} 8\n\
            DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 250.5\n\
            DCGM_FI_DEV_POWER_USAGE 99\n\
            DCGM_FI_DEV_GPU_UTIL{gpu=\"x\"} 50\n";
        let gpus = from_dcgm_text(page).unwrap();
        assert_eq!(gpus.iter().map(|g| g.index).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(gpus[1].mem_total_mib, Some(1000.0)); // no reserved field: used + free
        assert_eq!(gpus[1].throttle_reasons, Some(8));
        assert_eq!(gpus[0].power_w, Some(250.5));
        assert_eq!(gpus[0].mem_total_mib, None); // missing, not 0
        assert_eq!(gpus[0].util_pct, None);
        assert!(from_dcgm_text("llamacpp:n_decode_total 5\n")
            .unwrap()
            .is_empty());
        assert!(from_dcgm_text("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 5\n").is_err());
        assert_eq!(as_bitmask(-1.0), None);
        assert_eq!(as_bitmask(2.5), None);
        assert_eq!(as_bitmask(f64::INFINITY), None);
    }

    #[test]
    fn nvml_units_convert() {
        let r = NvmlReading {
            index: 2,
            utilization_gpu_pct: Some(55),
            memory_used_bytes: Some(42_949_672_960), // 40 GiB
            memory_total_bytes: Some(85_899_345_920), // 80 GiB
            power_mw: Some(350_500),
            total_energy_mj: Some(9_000_000),
            ..NvmlReading::default()
        };
        let s = r.to_sample();
        assert_eq!(s.index, 2);
        assert_eq!(s.mem_used_mib, Some(40_960.0));
        assert_eq!(s.mem_total_mib, Some(81_920.0));
        assert_eq!(s.power_w, Some(350.5));
        assert_eq!(s.energy_mj, Some(9_000_000.0));
        assert_eq!(s.temp_c, None);
    }

    #[test]
    fn counter_delta_two_gpus_with_idle() {
        let samples = [
            (0.0, reading(0, Some(1_000_000.0), Some(250.0))),
            (0.0, reading(1, Some(500_000.0), Some(150.0))),
            (1.0, reading(0, Some(1_300_000.0), Some(350.0))),
            (1.0, reading(1, Some(700_000.0), Some(250.0))),
            (2.0, reading(0, Some(1_600_000.0), Some(300.0))),
            (2.0, reading(1, Some(900_000.0), Some(200.0))),
        ];
        let e = energy_over_window(&samples, Some(100.0)).unwrap();
        assert_eq!(e.method, EnergyMethod::CounterDelta);
        // GPU 0: (1_600_000 − 1_000_000) mJ = 600 J; GPU 1: 400 J.
        assert!(close(e.gpus[0].joules, 600.0));
        assert!(close(e.gpus[1].joules, 400.0));
        assert!(close(e.joules, 1000.0));
        // Idle 100 W × 2 s per GPU: (600 − 200) + (400 − 200).
        assert!(close(e.active_joules.unwrap(), 600.0));
        assert!(e.skipped.is_empty());
        // Order of the input does not matter.
        let mut reversed = samples.to_vec();
        reversed.reverse();
        assert_eq!(energy_over_window(&reversed, Some(100.0)), Some(e));
    }

    #[test]
    fn trapezoid_without_counter() {
        let samples = [
            (10.0, reading(0, None, Some(100.0))),
            (11.0, reading(0, None, Some(300.0))),
            (12.0, reading(0, None, None)), // a gap is bridged
            (13.0, reading(0, None, Some(300.0))),
        ];
        let e = energy_over_window(&samples, None).unwrap();
        // (100 + 300)/2 × 1 s + (300 + 300)/2 × 2 s = 200 + 600.
        assert!(close(e.joules, 800.0));
        assert_eq!(e.method, EnergyMethod::TrapezoidPower);
        assert!(close(e.gpus[0].duration_s, 3.0));
        assert_eq!(e.active_joules, None);
        assert!(!e.gpus[0].counter_reset);
    }

    #[test]
    fn counter_reset_falls_back_to_power() {
        let samples = [
            // GPU 0: the driver reloads between t=1 and t=2, and the counter then climbs
            // past its first value, so end − start (+1 J) would look plausible but be wrong.
            (0.0, reading(0, Some(1000.0), Some(200.0))),
            (1.0, reading(0, Some(500.0), Some(200.0))),
            (2.0, reading(0, Some(2000.0), Some(400.0))),
            // GPU 1: a clean counter, 300 J.
            (0.0, reading(1, Some(0.0), None)),
            (2.0, reading(1, Some(300_000.0), None)),
        ];
        let e = energy_over_window(&samples, None).unwrap();
        // GPU 0 by power: (200 + 200)/2 × 1 + (200 + 400)/2 × 1 = 500 J.
        assert!(close(e.gpus[0].joules, 500.0));
        assert!(e.gpus[0].counter_reset);
        assert_eq!(e.gpus[0].method, EnergyMethod::TrapezoidPower);
        assert_eq!(e.gpus[1].method, EnergyMethod::CounterDelta);
        assert_eq!(e.method, EnergyMethod::Mixed);
        assert!(close(e.joules, 800.0));
    }

    #[test]
    fn too_little_data_is_skipped_not_zero() {
        let one_each = [
            (0.0, reading(0, Some(5.0), Some(100.0))),
            (0.0, reading(1, Some(5.0), Some(100.0))),
        ];
        assert_eq!(energy_over_window(&one_each, None), None);
        assert_eq!(energy_over_window(&[], None), None);
        let samples = [
            (0.0, reading(0, Some(0.0), None)),
            (4.0, reading(0, Some(2_000.0), None)),
            (0.0, reading(1, Some(7.0), Some(100.0))),
            // Reset counter and no power at all: nothing to fall back on.
            (0.0, reading(2, Some(9.0), None)),
            (4.0, reading(2, Some(1.0), None)),
        ];
        let e = energy_over_window(&samples, None).unwrap();
        assert_eq!(e.gpus.len(), 1);
        assert!(close(e.joules, 2.0));
        assert_eq!(e.skipped, [1, 2]);
    }

    #[test]
    fn derived_ratios() {
        assert_eq!(joules_per_token(1000.0, 4000), Some(0.25));
        assert_eq!(joules_per_request(1000.0, 8), Some(125.0));
        assert_eq!(tokens_per_joule(4000, 1000.0), Some(4.0));
        assert_eq!(joules_per_token(1000.0, 0), None);
        assert_eq!(joules_per_request(1000.0, 0), None);
        assert_eq!(tokens_per_joule(4000, 0.0), None);
        assert_eq!(tokens_per_joule(4000, f64::NAN), None);
    }

    #[test]
    fn rapl_wraps_once() {
        assert_eq!(rapl_delta_uj(100, 250, 262_143_328_850), 150);
        // 850 µJ up to the top of the range, then 1000 after the wrap.
        assert_eq!(rapl_delta_uj(262_143_328_000, 1000, 262_143_328_850), 1850);
        // Inconsistent input saturates instead of panicking.
        assert_eq!(rapl_delta_uj(500, 10, 100), 10);
        assert_eq!(rapl_delta_uj(u64::MAX, 0, u64::MAX), 0);
    }
}
