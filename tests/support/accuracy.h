// The accuracy goal, measured the way a user would: the 10,000 Fashion-MNIST test images written
// as PNG files, classified by the infer executable (PNG decode, preprocessing, network, softmax),
// its JSON output compared with the labels. Shared by test_accuracy.cpp (the CPU) and
// test_gpu_accuracy.cpp (the GPU in each precision, label gpu).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <stb_image_write.h>
#include <nlohmann/json.hpp>

#include "tests/support/fashion_mnist.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {

// The goal from the foundation issue; weights/README.md gives the measured value.
constexpr double kRequiredAccuracy = 0.930;

inline ProcessResult classify_test_set(const std::string& device, double& accuracy,
                                       const std::string& precision = "fp32") {
  const FashionMnist data = load_fashion_mnist_test();
  TempDir dir;
  std::map<std::string, int> label_of;
  for (int i = 0; i < data.count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%05d.png", i);
    const std::string path = (dir / name).string();
    EXPECT_TRUE(stbi_write_png(path.c_str(), 28, 28, 1, data.images.data() + static_cast<std::size_t>(i) * 784, 28));
    label_of[path] = data.labels[static_cast<std::size_t>(i)];
  }
  std::vector<std::string> args = {"--json",   "--top-k", "1",           "--batch", "256",
                                   "--device", device,    "--precision", precision, dir.path().string()};
  // $INFER_TEST_MANIFEST: another environment manifest than the shipped VERSIONS.toml. The device
  // check (tools/release/gpu-check.sh) sets it to the machine's own when that machine fails the shipped one,
  // so that the GPU path is still measured there.
  if (const char* manifest = std::getenv("INFER_TEST_MANIFEST"); manifest != nullptr && *manifest != '\0') {
    args.insert(args.begin(), {"--manifest", manifest});
  }
  ProcessResult r = run_process(infer_exe(), args);
  int correct = 0, seen = 0;
  std::string backend;  // as infer names it: on the CPU stand-in, the result is the stand-in's
  for (const std::string& line : r.out_lines()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    backend = j.value("backend", "");
    const auto it = label_of.find(j.at("file").get<std::string>());
    EXPECT_NE(it, label_of.end()) << line;
    if (it == label_of.end()) continue;
    ++seen;
    correct += j.at("top").at(0).at("index").get<int>() == it->second;
  }
  EXPECT_EQ(seen, data.count);
  accuracy = static_cast<double>(correct) / data.count;
  std::printf("top-1 accuracy through infer --device %s --precision %s: %d / %d = %.4f [%s]\n", device.c_str(),
              precision.c_str(), correct, data.count, accuracy, backend.c_str());
  return r;
}

}  // namespace infer::test
