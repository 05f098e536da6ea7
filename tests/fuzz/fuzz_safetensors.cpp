// The safetensors reader on arbitrary bytes: header length, header JSON, dtypes, shapes, offsets,
// overlaps, huge declared sizes. Every tensor that validates is read back.
// Invariants: the only failure is InputError; every entry lies inside the data section, its size
// matches dtype x shape, and reading it returns exactly that many values.
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "infer/errors.h"
#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const infer::SafetensorsFile file("fuzz.safetensors", std::vector<std::uint8_t>(data, data + size));
    for (const auto& [name, e] : file.entries()) {
      FUZZ_CHECK(e.begin <= e.end && e.end <= size);
      std::size_t count = 1;
      for (long long d : e.shape) {
        FUZZ_CHECK(d >= 0);
        count *= static_cast<std::size_t>(d);
      }
      FUZZ_CHECK(count * infer::safetensors_dtype_size(e.dtype) == e.end - e.begin);
      if (e.dtype == "F32") FUZZ_CHECK(file.read_f32(name).size() == count);
      if (e.dtype == "U8") FUZZ_CHECK(file.read_u8(name).size() == count);
    }
  } catch (const infer::InputError&) {
  }
  return 0;
}
