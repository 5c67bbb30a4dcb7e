#pragma once
// The GPU's current SM clock and throttle state through NVML, loaded at run time with
// dlopen("libnvidia-ml.so.1") so the build needs neither NVML's header nor its library (the
// driver ships it). Every query degrades to "unknown" when NVML is missing.
#include <string>

namespace modsim::kernels::cuda {

class nvml_clocks {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId writes it (NVML's index order may differ from CUDA's).
  explicit nvml_clocks(const std::string& pci_bus_id);
  ~nvml_clocks();
  nvml_clocks(const nvml_clocks&) = delete;
  nvml_clocks& operator=(const nvml_clocks&) = delete;

  bool available() const { return m_device != nullptr; }
  // Current SM clock in MHz, or 0 when unknown.
  unsigned sm_clock_mhz() const;
  // True when the clocks are held down by a power cap, thermal or hardware slowdown (idle and
  // application-clock settings do not count).
  bool throttled() const;

 private:
  void* m_lib = nullptr;
  void* m_device = nullptr;
  void* m_clock_info = nullptr;
  void* m_reasons = nullptr;
};

}  // namespace modsim::kernels::cuda
