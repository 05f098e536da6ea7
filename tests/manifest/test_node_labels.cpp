// The node labels of `infer --check --nfd` and their feature file (manifest/node_labels.h), checked
// against Kubernetes' label rules written independently here as a regular expression, on the values
// the probes can produce: NVML's names and versions as they are, and hostile ones.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "manifest/node_labels.h"

namespace infer::manifest {
namespace {

// k8s.io/apimachinery's qualified-name and label-value rules: a name part and a value are at most
// 63 characters of ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]; a value may be empty. A prefix is a
// DNS-1123 subdomain of at most 253 characters.
const std::regex kValue("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
const std::regex kSubdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

bool valid_value(const std::string& v) { return v.size() <= 63 && std::regex_match(v, kValue); }

// Strings drawn from characters that labels take and characters that they refuse (space, '+', ':',
// '/', '=', newline, '#', bytes of UTF-8), of lengths around the limit.
std::string random_text(std::mt19937_64& rng) {
  static const std::string kAlphabet = std::string("aZ09-_. +:/=#\n\t\"'") + "\xe2\x84\xa2" + '\0' + "\xff";
  std::uniform_int_distribution<int> length(0, 90), pick(0, static_cast<int>(kAlphabet.size()) - 1);
  std::string s(static_cast<std::size_t>(length(rng)), ' ');
  for (char& c : s) c = kAlphabet[static_cast<std::size_t>(pick(rng))];
  return s;
}

MachineProbe full_probe() {
  MachineProbe p;
  p.driver_release = "580.82.07";
  p.driver_cuda = 13000;
  p.cudart_version = "13.0";
  p.cudnn_version = 91900;
  p.gpus_known = true;
  GpuProbe gpu;
  gpu.name = "NVIDIA H200";
  gpu.compute_capability = "9.0";
  p.gpus = {gpu, gpu};
  return p;
}

Report report_that_holds() {
  Report r;
  r.ok = true;
  r.backend = "cu13";
  r.backends = {{"cu13", 13, true, "", ""}, {"cu12", 12, true, "", ""}};
  return r;
}

ReportRow failed_row(const std::string& item) {
  ReportRow row;
  row.item = item;
  row.status = Status::Fail;
  return row;
}

const std::string kDigest = "1f46edd59ffe51be0e94c345cf14524eae02621df892d704a03905c430c83e4f";

std::map<std::string, std::string> as_map(const std::vector<NodeLabel>& labels) {
  std::map<std::string, std::string> m;
  for (const NodeLabel& l : labels) EXPECT_TRUE(m.emplace(l.name, l.value).second) << "twice: " << l.name;
  return m;
}

// The lines of a feature file that are not comments, each "<prefix><name>=<value>" with a valid
// prefix, name and value; fails the test on any other line.
std::map<std::string, std::string> parse_feature_file(const std::string& text) {
  EXPECT_LE(text.size(), 64u * 1024);
  std::map<std::string, std::string> labels;
  std::istringstream in(text);
  int expiry_lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      if (line.rfind("# +expiry-time=", 0) == 0) ++expiry_lines;
      continue;
    }
    const auto slash = line.find('/'), equals = line.find('=');
    EXPECT_TRUE(slash != std::string::npos && equals != std::string::npos && slash < equals) << line;
    if (slash == std::string::npos || equals == std::string::npos || slash > equals) continue;
    const std::string prefix = line.substr(0, slash), name = line.substr(slash + 1, equals - slash - 1),
                      value = line.substr(equals + 1);
    EXPECT_TRUE(prefix.size() <= 253 && std::regex_match(prefix, kSubdomain)) << line;
    EXPECT_TRUE(!name.empty() && valid_value(name)) << line;
    EXPECT_TRUE(valid_value(value) && !value.empty()) << line;
    EXPECT_TRUE(labels.emplace(name, value).second) << "twice: " << line;
  }
  EXPECT_EQ(expiry_lines, 1) << text;
  return labels;
}

TEST(NodeLabels, TheValidatorAgreesWithKubernetesRuleOnRandomStrings) {
  std::mt19937_64 rng(std::random_device{}());
  for (const std::string& s :
       std::vector<std::string>{"", "a", "a-", "-a", "a.b_c-d", std::string(63, 'x'), std::string(64, 'x')}) {
    EXPECT_EQ(is_label_value(s), valid_value(s)) << '"' << s << '"';
  }
  for (int i = 0; i < 20000; ++i) {
    const std::string s = random_text(rng);
    EXPECT_EQ(is_label_value(s), valid_value(s)) << '"' << s << '"';
  }
}

TEST(NodeLabels, EverySanitisedValueIsValidAndKeepsWhatWasValid) {
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 20000; ++i) {
    const std::string raw = random_text(rng);
    const std::string v = label_value(raw);
    ASSERT_TRUE(valid_value(v)) << '"' << raw << "\" -> \"" << v << '"';
    EXPECT_EQ(v.find_first_of(" +:/=#\n"), std::string::npos) << v;
    if (!raw.empty() && valid_value(raw)) {
      EXPECT_EQ(v, raw);  // a value that is already valid is kept as it is
    }
  }
}

TEST(NodeLabels, HostileProbeValuesBecomeValidLabelsOrNone) {
  EXPECT_EQ(label_value("NVIDIA GeForce RTX 4090"), "NVIDIA-GeForce-RTX-4090");  // as GPU Feature Discovery
  EXPECT_EQ(label_value("580.82.07 beta+1:2"), "580.82.07-beta-1-2");
  EXPECT_EQ(label_value("NVIDIA GeForce RTX\xe2\x84\xa2 5090 "), "NVIDIA-GeForce-RTX-5090");
  EXPECT_EQ(label_value("  ++  "), "");
  const std::string overlong = "NVIDIA " + std::string(100, 'Z') + " Ti";
  EXPECT_EQ(label_value(overlong), "NVIDIA-" + std::string(56, 'Z'));
  EXPECT_EQ(label_value(std::string(62, 'a') + "-b"), std::string(62, 'a'));  // cut at 63, then trimmed

  MachineProbe p = full_probe();
  p.driver_release = "580.82.07 (beta) \n#+expiry-time=2099";
  p.gpus.front().name = "H100\ninfer.feature.node.kubernetes.io/manifest-holds=true " + std::string(200, 'x');
  p.gpus.front().compute_capability = "9.0 ";
  p.cudart_version = "+:+";  // nothing valid left: no label
  Report r;
  r.ok = false;
  r.rows = {failed_row("model:weights/fashion.toml")};
  const auto labels = as_map(node_labels(r, p, kDigest, "0.1.0"));
  const std::string file = nfd_feature_file(node_labels(r, p, kDigest, "0.1.0"), {}, kDigest);
  const auto parsed = parse_feature_file(file);
  EXPECT_EQ(parsed, labels) << file;
  EXPECT_EQ(labels.at("manifest-holds"), "false");                            // not the injected line's "true"
  EXPECT_EQ(labels.at("driver-release"), "580.82.07-beta-expiry-time-2099");  // one line, no comment
  EXPECT_EQ(labels.at("driver-major"), "580");
  EXPECT_EQ(labels.at("gpu-product").rfind("H100-infer.feature.node.kubernetes.io-manifest-holds-true-x", 0), 0u);
  EXPECT_EQ(labels.at("gpu-product").size(), 63u);
  EXPECT_EQ(labels.at("gpu-compute-capability"), "9.0");
  EXPECT_EQ(labels.count("cuda-runtime"), 0u);
  EXPECT_EQ(labels.at("first-failure"), "model-weights-fashion.toml");
}

TEST(NodeLabels, RandomProbesAlwaysGiveAValidFile) {
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 500; ++i) {
    MachineProbe p = full_probe();
    p.driver_release = random_text(rng);
    p.cudart_version = random_text(rng);
    p.gpus.front().name = random_text(rng);
    p.gpus.front().compute_capability = random_text(rng);
    p.gpus.resize(static_cast<std::size_t>(rng() % 9));
    Report r = report_that_holds();
    r.backend = random_text(rng);
    r.backends.front().name = r.backend;
    const auto labels = node_labels(r, p, random_text(rng), random_text(rng));
    const auto parsed =
        parse_feature_file(nfd_feature_file(labels, std::chrono::system_clock::now(), random_text(rng)));
    ASSERT_EQ(parsed, as_map(labels));
  }
}

TEST(NodeLabels, AMachineThatHoldsIsDescribedInFull) {
  const auto labels = as_map(node_labels(report_that_holds(), full_probe(), kDigest, "0.1.0"));
  const std::map<std::string, std::string> want = {{"manifest-holds", "true"},
                                                   {"backend", "cu13"},
                                                   {"cuda-major", "13"},
                                                   {"driver-release", "580.82.07"},
                                                   {"driver-major", "580"},
                                                   {"cuda-driver", "13.0"},
                                                   {"cuda-runtime", "13.0"},
                                                   {"cudnn-version", "9.19.0"},
                                                   {"gpu-count", "2"},
                                                   {"gpu-product", "NVIDIA-H200"},
                                                   {"gpu-compute-capability", "9.0"},
                                                   {"gpu-compute-major", "9"},
                                                   {"manifest-sha256", kDigest.substr(0, 32)},
                                                   {"version", "0.1.0"}};
  EXPECT_EQ(labels, want);
}

TEST(NodeLabels, AMachineWithoutADriverSaysOnlyWhatIsKnown) {
  MachineProbe p;  // nothing found: no driver, no GPUs known
  Report r;
  r.ok = false;
  r.rows = {failed_row("cu13.driver.release")};
  r.standins = {"/x/libcudart.so.13: the stand-in"};
  const auto labels = as_map(node_labels(r, p, kDigest, "0.1.0"));
  const std::map<std::string, std::string> want = {{"manifest-holds", "false"},
                                                   {"manifest-sha256", kDigest.substr(0, 32)},
                                                   {"first-failure", "cu13.driver.release"},
                                                   {"standin", "true"},
                                                   {"version", "0.1.0"}};
  EXPECT_EQ(labels, want);
}

TEST(NodeLabels, TheFileCarriesItsExpiryInUtc) {
  using namespace std::chrono;
  EXPECT_EQ(rfc3339_utc(system_clock::time_point{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339_utc(system_clock::time_point{seconds{951782400}}), "2000-02-29T00:00:00Z");
  EXPECT_EQ(rfc3339_utc(system_clock::time_point{seconds{1796514879}}), "2026-12-05T23:54:39Z");
  const std::string file =
      nfd_feature_file({{"manifest-holds", "true"}}, system_clock::time_point{seconds{951782400}}, kDigest);
  EXPECT_NE(file.find("\n# +expiry-time=2000-02-29T00:00:00Z\n"), std::string::npos) << file;
  EXPECT_NE(file.find("\n# manifest sha256 " + kDigest + "\n"), std::string::npos) << file;
  EXPECT_NE(file.find("\ninfer.feature.node.kubernetes.io/manifest-holds=true\n"), std::string::npos) << file;
}

TEST(NodeLabels, AFileOverNfdsLimitIsRefused) {
  std::vector<NodeLabel> many(2000, NodeLabel{"gpu-product", std::string(63, 'x')});
  EXPECT_THROW(nfd_feature_file(many, {}, kDigest), std::length_error);
}

}  // namespace
}  // namespace infer::manifest
