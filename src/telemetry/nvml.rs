//! NVIDIA GPUs through NVML (`nvml-wrapper`), loaded at run time: a machine without the
//! driver gets "not measured: no NVIDIA driver", never zeros, and the binary needs no CUDA
//! to build or start.

use super::gpu::NvmlReading;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;

/// An open NVML session.
pub struct NvmlSource {
    nvml: Nvml,
    count: u32,
}

impl NvmlSource {
    /// Loads `libnvidia-ml` and counts GPUs; the error says why GPUs are not measured.
    pub fn open() -> Result<NvmlSource, String> {
        let nvml = Nvml::init().map_err(|e| {
            format!("not measured: no NVIDIA driver (NVML could not be loaded: {e})")
        })?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("not measured: NVML could not count GPUs: {e}"))?;
        if count == 0 {
            return Err("not measured: NVML found no GPU".into());
        }
        Ok(NvmlSource { nvml, count })
    }

    /// The name of the source, for reports.
    pub fn describe(&self) -> String {
        let version = self.nvml.sys_driver_version().unwrap_or_default();
        format!("NVML, {} GPUs, driver {version}", self.count)
    }

    /// One reading per GPU; a field NVML refuses (unsupported on the GPU) stays `None`.
    pub fn read(&self) -> Vec<NvmlReading> {
        (0..self.count)
            .filter_map(|i| {
                let d = self.nvml.device_by_index(i).ok()?;
                let mem = d.memory_info().ok();
                Some(NvmlReading {
                    index: i,
                    uuid: d.uuid().ok(),
                    name: d.name().ok(),
                    utilization_gpu_pct: d.utilization_rates().ok().map(|u| u.gpu),
                    memory_used_bytes: mem.as_ref().map(|m| m.used),
                    memory_total_bytes: mem.as_ref().map(|m| m.total),
                    power_mw: d.power_usage().ok(),
                    total_energy_mj: d.total_energy_consumption().ok(),
                    temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
                    sm_clock_mhz: d.clock_info(Clock::SM).ok(),
                    throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
                })
            })
            .collect()
    }
}
