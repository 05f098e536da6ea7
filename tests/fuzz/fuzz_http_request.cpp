// infer serve's HTTP/REST request parser (serve/http_json.h) on arbitrary bytes, and the BYTES path
// behind it: every image element that parses is decoded as the server decodes it. The input is the
// Inference-Header-Content-Length (4 bytes, little-endian; 0xffffffff: no header) and then the body.
// Invariants: the parser throws ServeError(InvalidArgument) only, and what it accepts is consistent:
// each tensor holds exactly the elements its shape says; decoding an element throws InputError only,
// or gives an image of the size its header allowed.
#include <cstring>
#include <optional>
#include <string_view>

#include "image/load_image.h"
#include "infer/errors.h"
#include "serve/http_json.h"
#include "serve/serve_error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint32_t length = 0;
  std::memcpy(&length, data, 4);
  const std::string_view body(reinterpret_cast<const char*>(data) + 4, size - 4);
  const std::optional<std::size_t> header = length == 0xFFFFFFFFu ? std::nullopt : std::optional<std::size_t>(length);
  try {
    // Limits of a large model (a batch of 64 at 3x224x224), so that they are reached and refused too.
    const infer::serve::RequestLimits limits{std::size_t{64} * 3 * 224 * 224, 64};
    const infer::serve::InferRequest r = infer::serve::parse_infer_request(body, header, "m", "", limits);
    FUZZ_CHECK(!r.inputs.empty());
    for (const infer::serve::InputTensor& t : r.inputs) {
      FUZZ_CHECK(t.shape.size() <= infer::serve::kMaxTensorRank);
      std::size_t count = 1;
      for (std::int64_t d : t.shape) {
        FUZZ_CHECK(d >= 0);
        count *= static_cast<std::size_t>(d);
      }
      FUZZ_CHECK(t.datatype == "FP32" || t.datatype == "BYTES");
      FUZZ_CHECK((t.datatype == "FP32" ? t.fp32.size() : t.bytes.size()) == count);
      FUZZ_CHECK(count <= (t.datatype == "FP32" ? limits.fp32_elements : limits.bytes_elements));
      for (std::size_t i = 0; i < t.bytes.size() && i < 4; ++i) {
        const std::string& e = t.bytes[i];
        try {
          const infer::Image img =
              infer::decode_image("element", reinterpret_cast<const unsigned char*>(e.data()), e.size(), 3);
          FUZZ_CHECK(img.width > 0 && img.height > 0);
          FUZZ_CHECK(static_cast<long long>(img.width) * img.height <= infer::kMaxImagePixels);
          FUZZ_CHECK(img.pixels.size() == static_cast<std::size_t>(img.width) * img.height * 3);
        } catch (const infer::InputError&) {
        }
      }
    }
    for (const infer::serve::RequestedOutput& o : r.outputs) FUZZ_CHECK(o.classification >= 0);
  } catch (const infer::serve::ServeError& e) {
    FUZZ_CHECK(e.kind() == infer::serve::ErrorKind::InvalidArgument);
  }
  return 0;
}
