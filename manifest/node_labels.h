// The environment check as Kubernetes node labels, and those labels as a Node Feature Discovery
// (NFD) local feature file, the file `infer --check --nfd PATH` writes (docs/kubernetes.md).
//
// NFD's nfd-worker reads every file in /etc/kubernetes/node-feature-discovery/features.d/ (the
// "local" feature source), one `name=value` per line, and publishes each as a label of its node.
// A label is a prefix (a DNS subdomain) and a name, each name and value at most 63 characters of
// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? (a value may also be empty). Our prefix is a
// sub-namespace of feature.node.kubernetes.io, which NFD accepts without configuration.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "manifest/probe.h"
#include "manifest/report.h"

namespace infer::manifest {

inline constexpr std::string_view kNodeLabelPrefix = "infer.feature.node.kubernetes.io/";
inline constexpr std::size_t kMaxLabelLength = 63;
inline constexpr std::size_t kMaxFeatureFileBytes = 64 * 1024;  // NFD skips a larger feature file

struct NodeLabel {
  std::string name;   // without the prefix: "driver-release"
  std::string value;  // a valid label value, never empty
};

// Kubernetes' rules: a label name (the part after the prefix) or a value.
bool is_label_name(std::string_view name);
bool is_label_value(std::string_view value);

// raw made a valid label value, as NVIDIA's GPU Feature Discovery does for gpu.product: each run
// of characters a label may not hold becomes one '-', the result is cut to 63 characters and
// trimmed to start and end with a letter or digit. Empty when nothing is left.
std::string label_value(std::string_view raw);

// What the check found, as labels (docs/kubernetes.md has the table): manifest-holds, backend,
// cuda-major, driver-release, driver-major, cuda-driver, cuda-runtime, cudnn-version, gpu-count,
// gpu-product, gpu-compute-capability, gpu-compute-major, manifest-sha256 (its first 32 hex digits:
// a value holds 63 characters at most), first-failure, standin (only when a probed library is the
// project's CPU stand-in), version. probe is the probe of the backend that runs, or of the first
// backend when none does. A label whose value is unknown is left out rather than written empty.
std::vector<NodeLabel> node_labels(const Report& report, const MachineProbe& probe, std::string_view manifest_sha256,
                                   std::string_view infer_version);

// The feature file: comment lines, "# +expiry-time=<UTC, RFC 3339>" (NFD drops the labels after
// it, so a node whose checker stopped loses them), then "<prefix><name>=<value>" per label.
// Throws std::length_error past kMaxFeatureFileBytes (which the labels above cannot reach).
std::string nfd_feature_file(const std::vector<NodeLabel>& labels, std::chrono::system_clock::time_point expiry,
                             std::string_view manifest_sha256);

// "2026-12-05T23:34:15Z".
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

}  // namespace infer::manifest
