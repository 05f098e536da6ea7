// Windows DLL headers (manifest/windows/pe_file.h), structure-aware: the input is applied as patches to a
// valid image written by tests/support/pe_builder.h (imports, delay imports, a version resource), so the
// fuzzer starts deep in the format without a seed corpus; the input is also parsed as it is.
// Input: 2 bytes, the length to cut the image to (modulo its size + 1); then 3-byte patches,
// (offset: 2 bytes little-endian, modulo the size; the new byte).
// Invariant: parse_pe returns or throws InputError, and never reads outside the bytes it is given.
#include <cstdint>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "manifest/windows/pe_file.h"
#include "infer/errors.h"
#include "tests/support/pe_builder.h"

namespace {

void parse(const std::vector<unsigned char>& bytes) {
  // Exactly the bytes: ASan sees a read past the end of this allocation.
  std::vector<unsigned char> exact(bytes);
  exact.shrink_to_fit();
  try {
    infer::manifest::parse_pe(exact.data(), exact.size(), "fuzz.dll");
  } catch (const infer::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<unsigned char> image = [] {
    infer::test::PeSpec spec;
    spec.imports = {"cudnn_graph64_9.dll", "KERNEL32.dll"};
    spec.delay_imports = {"nvcuda.dll"};
    spec.strings = {{"ProductName", "NVIDIA CUDA Deep Neural Network library"}, {"FileVersion", "9.19.0.56"}};
    return infer::test::PeBuilder::build(spec).bytes;
  }();
  parse(std::vector<unsigned char>(data, data + size));
  if (size < 2) return 0;
  std::vector<unsigned char> bytes = image;
  bytes.resize((data[0] | data[1] << 8) % (image.size() + 1));
  for (std::size_t at = 2; at + 3 <= size && !bytes.empty(); at += 3) {
    bytes[(data[at] | data[at + 1] << 8) % bytes.size()] = data[at + 2];
  }
  parse(bytes);
  return 0;
}
