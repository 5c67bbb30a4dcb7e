#include "kernels/cuda/nvml.hpp"

#include <dlfcn.h>

namespace modsim::kernels::cuda {
namespace {

// The few NVML entry points used, declared by hand (NVML's C ABI: int return codes, 0 = success).
using init_fn = int (*)();
using by_pci_fn = int (*)(const char*, void**);
using clock_info_fn = int (*)(void*, int, unsigned*);
using reasons_fn = int (*)(void*, unsigned long long*);

constexpr int k_nvml_clock_sm = 1;
// nvmlClocksEventReason*: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
// HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
constexpr unsigned long long k_throttle_mask = 0x4ULL | 0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL;

}  // namespace

nvml_clocks::nvml_clocks(const std::string& pci_bus_id) {
  m_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!m_lib) return;
  auto init = reinterpret_cast<init_fn>(dlsym(m_lib, "nvmlInit_v2"));
  auto by_pci = reinterpret_cast<by_pci_fn>(dlsym(m_lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  m_clock_info = dlsym(m_lib, "nvmlDeviceGetClockInfo");
  m_reasons = dlsym(m_lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!m_reasons) m_reasons = dlsym(m_lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!init || !by_pci || init() != 0 || by_pci(pci_bus_id.c_str(), &m_device) != 0) m_device = nullptr;
}

nvml_clocks::~nvml_clocks() {
  if (m_lib) {
    if (auto shutdown = reinterpret_cast<init_fn>(dlsym(m_lib, "nvmlShutdown")); shutdown && m_device) shutdown();
    dlclose(m_lib);
  }
}

unsigned nvml_clocks::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (m_device && m_clock_info && reinterpret_cast<clock_info_fn>(m_clock_info)(m_device, k_nvml_clock_sm, &mhz) == 0)
    return mhz;
  return 0;
}

bool nvml_clocks::throttled() const {
  unsigned long long reasons = 0;
  if (m_device && m_reasons && reinterpret_cast<reasons_fn>(m_reasons)(m_device, &reasons) == 0)
    return (reasons & k_throttle_mask) != 0;
  return false;
}

}  // namespace modsim::kernels::cuda
