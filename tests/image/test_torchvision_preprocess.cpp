// The crop mode against torchvision itself: fresh random pictures (gradients, waves, edges and
// noise; RGB, RGBA, grey and 16-bit PNGs; shrunk, enlarged, thin, odd crop margins) written as PNGs,
// put through torchvision's Resize + CenterCrop + ToTensor + Normalize by
// tests/image/torchvision_preprocess.py (Debian's /usr/bin/python3 with python3-torchvision), and
// through decode_image + preprocess here. And the alpha choice: decoding, and a model file's default.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "formats/model_file.h"
#include "image/load_image.h"
#include "image/preprocess.h"
#include "tests/support/model_cases.h"
#include "tests/support/png_writer.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

enum class Kind { Rgb8, Rgba8, Grey8, Rgb16 };

struct Picture {
  std::string name;
  int w, h;
  Kind kind;
};

// A natural-ish picture, 8-bit per channel: a gradient, a wave, a few flat rectangles with hard
// edges and per-pixel noise, so that both the smooth and the sharp parts of the filter are used.
std::vector<std::uint8_t> natural(Random& rng, int w, int h, int ch) {
  std::vector<float> gx(ch), gy(ch), amp(ch), phase(ch);
  for (int c = 0; c < ch; ++c) {
    gx[c] = rng.uniform(-120, 120), gy[c] = rng.uniform(-120, 120);
    amp[c] = rng.uniform(0, 60), phase[c] = rng.uniform(0, 6.3f);
  }
  const float fx = rng.uniform(0.01f, 0.3f), fy = rng.uniform(0.01f, 0.3f), noise = rng.uniform(2, 25);
  std::vector<float> v(static_cast<std::size_t>(w) * h * ch);
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const float u = static_cast<float>(x), t = static_cast<float>(y);
      for (int c = 0; c < ch; ++c) {
        v[(static_cast<std::size_t>(y) * w + x) * ch + c] = 128 + gx[c] * (u / fw - 0.5f) + gy[c] * (t / fh - 0.5f) +
                                                            amp[c] * std::sin(fx * u + fy * t + phase[c]) +
                                                            rng.uniform(-noise, noise);
      }
    }
  }
  for (int r = 0; r < 4; ++r) {
    const int x0 = rng.integer(0, w - 1), y0 = rng.integer(0, h - 1);
    const int x1 = rng.integer(x0, w - 1), y1 = rng.integer(y0, h - 1);
    std::vector<float> colour(ch);
    for (float& c : colour) c = rng.uniform(0, 255);
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        for (int c = 0; c < ch; ++c) v[(static_cast<std::size_t>(y) * w + x) * ch + c] = colour[c];
      }
    }
  }
  std::vector<std::uint8_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<std::uint8_t>(std::lround(std::clamp(v[i], 0.0f, 255.0f)));
  return out;
}

// The picture as a PNG of its kind (a 16-bit one has random low bytes: the decoders keep the high).
std::string png_of(Random& rng, const Picture& p) {
  const int ch = p.kind == Kind::Grey8 ? 1 : p.kind == Kind::Rgba8 ? 4 : 3;
  std::vector<std::uint8_t> v = natural(rng, p.w, p.h, ch);
  if (p.kind == Kind::Rgba8) {
    // Alpha: clear in one corner, opaque in another, a ramp between.
    for (int y = 0; y < p.h; ++y) {
      for (int x = 0; x < p.w; ++x) {
        const float t = 2.0f * static_cast<float>(x) / static_cast<float>(p.w) +
                        2.0f * static_cast<float>(y) / static_cast<float>(p.h) - 1.5f;
        v[(static_cast<std::size_t>(y) * p.w + x) * 4 + 3] =
            static_cast<std::uint8_t>(std::lround(std::clamp(t, 0.0f, 1.0f) * 255.0f));
      }
    }
  }
  std::vector<std::string> rows;
  for (int y = 0; y < p.h; ++y) {
    std::string row;
    for (int i = 0; i < p.w * ch; ++i) {
      row += static_cast<char>(v[static_cast<std::size_t>(y) * p.w * ch + i]);
      if (p.kind == Kind::Rgb16) row += static_cast<char>(rng.integer(0, 255));
    }
    rows.push_back(row);
  }
  const int colour_type = p.kind == Kind::Grey8 ? 0 : p.kind == Kind::Rgba8 ? 6 : 2;
  return encode_png(static_cast<std::uint32_t>(p.w), static_cast<std::uint32_t>(p.h), p.kind == Kind::Rgb16 ? 16 : 8,
                    colour_type, rows);
}

std::vector<float> read_f32(const std::filesystem::path& path) {
  const std::string bytes = slurp(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

// How the model crops, and the arguments that make torchvision do the same.
struct CropSetting {
  const char* suffix;
  int resize_size;  // the model's; 0: max(height, width)
  int height, width;
};

TEST(TorchvisionPreprocess, CropIsTorchvisionsTransformToTheBit) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  std::vector<Picture> pictures = {
      {"landscape_500x375", 500, 375, Kind::Rgb8}, {"portrait_375x500", 375, 500, Kind::Rgb8},
      {"vga_640x480", 640, 480, Kind::Rgb8},       {"small_100x80", 100, 80, Kind::Rgb8},  // enlarged
      {"thin_1x300", 1, 300, Kind::Rgb8},          {"flat_300x2", 300, 2, Kind::Rgb8},
      {"exact_224x224", 224, 224, Kind::Rgb8},     {"odd_margin_261x256", 261, 256, Kind::Rgb8},
      {"alpha_320x240", 320, 240, Kind::Rgba8},    {"grey_150x200", 150, 200, Kind::Grey8},
      {"deep_200x150", 200, 150, Kind::Rgb16},
  };
  for (int i = 0; i < 2; ++i) {
    const int w = rng.integer(16, 700), h = rng.integer(16, 700);
    pictures.push_back(
        {"random" + std::to_string(i) + "_" + std::to_string(w) + "x" + std::to_string(h), w, h, Kind::Rgb8});
  }
  TempDir dir;
  for (const Picture& p : pictures) write_file(dir / (p.name + ".png"), png_of(rng, p));

  const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, std = {0.229f, 0.224f, 0.225f};
  // torchvision's usual 256 -> 224, and a non-square crop from the shorter side at its default.
  const CropSetting settings[] = {{"imagenet", 256, 224, 224}, {"wide", 0, 200, 240}};
  for (const CropSetting& s : settings) {
    SCOPED_TRACE(s.suffix);
    const int size = s.resize_size > 0 ? s.resize_size : std::max(s.height, s.width);
    std::vector<std::string> args = {std::string(INFER_SOURCE_DIR) + "/tests/image/torchvision_preprocess.py",
                                     dir.path().string(),
                                     "--size",
                                     std::to_string(size),
                                     "--height",
                                     std::to_string(s.height),
                                     "--width",
                                     std::to_string(s.width),
                                     "--suffix",
                                     s.suffix,
                                     "--mean"};
    for (float m : mean) args.push_back(std::to_string(m));
    args.push_back("--std");
    for (float d : std) args.push_back(std::to_string(d));
    // Debian's Python, which has python3-torchvision (tools/dev/install-deps.sh), as the other
    // Python tests use. What this process has buffered goes out first, not through the child.
    std::cout.flush();
    const ProcessResult r = run_process("/usr/bin/python3", args);
    ASSERT_EQ(r.exit_code, 0) << "the torchvision reference failed (is python3-torchvision installed? "
                                 "tools/dev/install-deps.sh):\n"
                              << r.err;
    std::cout << "[ reference] " << r.out;

    InputSpec spec;
    spec.dims = {3, s.height, s.width};
    // The values torchvision gets: std::to_string's six decimals, parsed back.
    for (int c = 0; c < 3; ++c) {
      spec.mean.push_back(std::stof(std::to_string(mean[c])));
      spec.std.push_back(std::stof(std::to_string(std[c])));
    }
    spec.preprocessing.resize = ResizeMode::Crop;
    spec.preprocessing.resize_size = s.resize_size;
    spec.preprocessing.alpha = AlphaMode::Drop;
    double worst_all = 0.0;
    for (const Picture& p : pictures) {
      SCOPED_TRACE(p.name);
      const std::string bytes = slurp(dir / (p.name + ".png"));
      const Image image = decode_image(p.name, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 3,
                                       spec.preprocessing.alpha);
      std::vector<float> ours(spec.dims.size());
      preprocess(image, spec, ours.data());
      const std::vector<float> theirs = read_f32(dir / (p.name + "." + s.suffix + ".f32"));
      ASSERT_EQ(theirs.size(), ours.size());
      // Difference in steps of 1/255 before normalisation: |a - b| * std * 255.
      const std::size_t plane = static_cast<std::size_t>(s.height) * s.width;
      double worst = 0.0;
      std::size_t differ = 0;
      for (std::size_t i = 0; i < ours.size(); ++i) {
        ASSERT_TRUE(std::isfinite(ours[i])) << i;
        const double d = std::fabs(static_cast<double>(ours[i]) - theirs[i]) * spec.std[i / plane] * 255.0;
        worst = std::max(worst, d);
        if (d >= 0.5) ++differ;
      }
      worst_all = std::max(worst_all, worst);
      std::cout << "[ compared ] " << s.suffix << " " << p.name << ": worst difference " << worst
                << " x 1/255, values off by a step or more: " << differ << " of " << ours.size() << "\n";
      // Both sides compute the same 8-bit values by the same integer arithmetic (pil_resize.h),
      // then (k / 255 - mean) / std in float32, in the same order: the tensors are expected equal.
      // Any real difference is at least one 8-bit step, so half a step separates "the same value,
      // float rounding at most" from "a different value".
      EXPECT_LT(worst, 0.5) << differ << " values differ by a step or more";
    }
    std::cout << "[ worst    ] " << s.suffix << ": " << worst_all << " x 1/255 over " << pictures.size()
              << " pictures\n";
  }
}

// One RGBA pixel (200, 100, 50) at alpha 0, 128 and 255, as a 1x3 PNG.
std::string alpha_png() {
  const std::string row =
      std::string("\xc8\x64\x32\x00", 4) + std::string("\xc8\x64\x32\x80", 4) + std::string("\xc8\x64\x32\xff", 4);
  return encode_png(3, 1, 8, 6, {row});
}

TEST(Alpha, WhiteCompositesAndDropKeepsTheStoredColour) {
  const std::string png = alpha_png();
  const auto* bytes = reinterpret_cast<const unsigned char*>(png.data());
  const Image white = decode_image("white", bytes, png.size(), 3, AlphaMode::White);
  const Image drop = decode_image("drop", bytes, png.size(), 3, AlphaMode::Drop);
  const float stored[3] = {200 / 255.0f, 100 / 255.0f, 50 / 255.0f};
  const float half = 128 / 255.0f;
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(white.pixels[c], 1.0f) << c;  // clear: the white behind it
    EXPECT_FLOAT_EQ(white.pixels[3 + c], stored[c] * half + (1.0f - half)) << c;
    EXPECT_EQ(white.pixels[6 + c], stored[c]) << c;  // opaque: the colour
    for (int x = 0; x < 3; ++x) EXPECT_EQ(drop.pixels[x * 3 + c], stored[c]) << x << " " << c;
  }
  // Grey for a one-channel model is taken after the choice.
  const Image grey = decode_image("drop", bytes, png.size(), 1, AlphaMode::Drop);
  EXPECT_FLOAT_EQ(grey.pixels[0], 0.299f * stored[0] + 0.587f * stored[1] + 0.114f * stored[2]);
  EXPECT_EQ(decode_image("white", bytes, png.size(), 1, AlphaMode::White).pixels[0], 1.0f);
}

// The tiny model with `extra` added to its [input] table, loaded.
InputSpec tiny_input(const std::string& extra) {
  Random rng;
  TempDir dir;
  std::string toml = kTinyToml;
  const std::string anchor = "labels = [\"a\", \"b\", \"c\"]\n";
  toml.replace(toml.find(anchor), anchor.size(), anchor + extra);
  write_file(dir / "tiny.toml", toml);
  write_file(dir / "tiny.safetensors", safetensors_bytes(tiny_tensors(rng)));
  return load_model(dir / "tiny.toml").network.input();
}

TEST(Alpha, AModelFileDefaultsToTorchvisionsDropForCropAndWhiteOtherwise) {
  EXPECT_EQ(tiny_input("").preprocessing.alpha, AlphaMode::Drop);  // resize defaults to crop
  EXPECT_EQ(tiny_input("resize = \"crop\"\n").preprocessing.alpha, AlphaMode::Drop);
  EXPECT_EQ(tiny_input("resize = \"trim_fit\"\n").preprocessing.alpha, AlphaMode::White);
  EXPECT_EQ(tiny_input("resize = \"stretch\"\n").preprocessing.alpha, AlphaMode::White);
  EXPECT_EQ(tiny_input("alpha = \"white\"\n").preprocessing.alpha, AlphaMode::White);
  EXPECT_EQ(tiny_input("resize = \"trim_fit\"\nalpha = \"drop\"\n").preprocessing.alpha, AlphaMode::Drop);
  try {
    tiny_input("alpha = \"black\"\n");
    ADD_FAILURE() << "alpha = \"black\" was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("key 'alpha' must be one of \"white\", \"drop\""), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace infer::test
