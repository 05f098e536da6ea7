#include "manifest/node_labels.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "platform/nvidia_versions.h"

namespace infer::manifest {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool inner(char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; }

// The digits before the first '.': "580" of "580.82.07", "9" of "9.0".
std::string major_of(const std::string& dotted) { return dotted.substr(0, dotted.find('.')); }

// Civil date from days since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithm).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
}

}  // namespace

bool is_label_name(std::string_view name) { return !name.empty() && is_label_value(name); }

bool is_label_value(std::string_view value) {
  if (value.empty()) return true;
  if (value.size() > kMaxLabelLength || !alnum(value.front()) || !alnum(value.back())) return false;
  for (char c : value) {
    if (!inner(c)) return false;
  }
  return true;
}

std::string label_value(std::string_view raw) {
  std::string out;
  bool replaced = false;  // the last character written stands for a run of refused ones
  for (char c : raw) {
    if (inner(c)) {
      out += c;
      replaced = false;
    } else if (!replaced) {
      out += '-';
      replaced = true;
    }
  }
  if (out.size() > kMaxLabelLength) out.resize(kMaxLabelLength);
  const auto first = out.find_first_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  if (first == std::string::npos) return "";
  const auto last = out.find_last_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  return out.substr(first, last - first + 1);
}

std::vector<NodeLabel> node_labels(const Report& report, const MachineProbe& probe, std::string_view manifest_sha256,
                                   std::string_view infer_version) {
  std::vector<NodeLabel> labels;
  const auto add = [&labels](const char* name, std::string_view raw) {
    std::string value = label_value(raw);
    if (!value.empty()) labels.push_back({name, std::move(value)});
  };
  add("manifest-holds", report.ok ? "true" : "false");
  for (const BackendOutcome& b : report.backends) {
    if (b.name != report.backend) continue;
    add("backend", b.name);
    add("cuda-major", std::to_string(b.cuda_major));
  }
  if (probe.driver_release) {
    add("driver-release", *probe.driver_release);
    add("driver-major", major_of(*probe.driver_release));
  }
  if (probe.driver_cuda) add("cuda-driver", cuda_version_string(*probe.driver_cuda));
  if (probe.cudart_version) add("cuda-runtime", *probe.cudart_version);
  if (probe.cudnn_version) add("cudnn-version", cudnn_version_string(*probe.cudnn_version));
  if (probe.gpus_known) {
    add("gpu-count", std::to_string(probe.gpus.size()));
    if (!probe.gpus.empty()) {
      const GpuProbe& gpu = probe.gpus.front();
      add("gpu-product", gpu.name);
      if (gpu.compute_capability) {
        add("gpu-compute-capability", *gpu.compute_capability);
        add("gpu-compute-major", major_of(*gpu.compute_capability));
      }
    }
  }
  add("manifest-sha256", manifest_sha256.substr(0, 32));
  if (const ReportRow* failed = report.first_failure()) add("first-failure", failed->item);
  if (!report.standins.empty()) add("standin", "true");
  add("version", infer_version);
  return labels;
}

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const std::int64_t s = duration_cast<seconds>(t.time_since_epoch()).count();
  std::int64_t days = s / 86400, rest = s % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  char text[40];
  std::snprintf(text, sizeof text, "%04lld-%02u-%02uT%02d:%02d:%02dZ", static_cast<long long>(y), m, d,
                static_cast<int>(rest / 3600), static_cast<int>(rest % 3600 / 60), static_cast<int>(rest % 60));
  return text;
}

std::string nfd_feature_file(const std::vector<NodeLabel>& labels, std::chrono::system_clock::time_point expiry,
                             std::string_view manifest_sha256) {
  std::string text =
      "# Node Feature Discovery local feature file, written by `infer --check --nfd` (docs/kubernetes.md).\n";
  std::string digest;  // hex digits only: nothing from outside may start a line of its own
  for (char c : manifest_sha256) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) digest += c;
  }
  text += "# manifest sha256 " + digest + "\n";
  text += "# +expiry-time=" + rfc3339_utc(expiry) + "\n";
  for (const NodeLabel& l : labels) {
    text.append(kNodeLabelPrefix).append(l.name).append("=").append(l.value).append("\n");
  }
  if (text.size() > kMaxFeatureFileBytes) {
    throw std::length_error("the feature file would be " + std::to_string(text.size()) + " bytes, over NFD's " +
                            std::to_string(kMaxFeatureFileBytes));
  }
  return text;
}

}  // namespace infer::manifest
