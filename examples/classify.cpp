// The smallest program built on infer's API: classify images and print the three best classes as
// `infer` does.   classify IMAGE... [--model MODEL]   (default: the model installed with infer)
// Build it against an installed infer with examples/CMakeLists.txt (find_package(infer)).
#include <infer/infer.h>

#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::filesystem::path model;
  std::vector<std::filesystem::path> images;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      model = argv[++i];
    } else {
      images.emplace_back(argv[i]);
    }
  }
  infer::ClassifierOptions options;  // Device::Auto: the GPU when the environment checks out
  options.notice = [](const infer::Notice& n) { std::cerr << "classify: notice: " << n.message << '\n'; };
  try {
    infer::Classifier classifier(model, options);
    const std::string tag = classifier.device() == std::string("cpu") ? "cpu" : classifier.backend();
    int failed = 0;
    const std::vector<infer::Classification> results = classifier.classify_batch(images, 3);
    for (std::size_t i = 0; i < images.size(); ++i) {
      if (!results[i].ok()) {
        std::cerr << "classify: " << results[i].error << '\n';
        ++failed;
        continue;
      }
      std::cout << images[i].string() << ':' << std::fixed << std::setprecision(3);
      const char* separator = " ";
      for (const infer::Prediction& p : results[i].top) {
        std::cout << separator << p.label << ' ' << p.score;
        separator = " | ";
      }
      std::cout << (classifier.outputs_probabilities() ? "   [" : "   (scores) [") << tag << "]\n";
    }
    return failed == 0 ? 0 : 3;
  } catch (const infer::Error& e) {  // the model, the manifest, the GPU under Device::Gpu
    std::cerr << "classify: " << e.what() << '\n';
    return 3;
  } catch (const std::exception& e) {  // out of memory, say
    std::cerr << "classify: internal error: " << e.what() << '\n';
    return 1;
  }
}
