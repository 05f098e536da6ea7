#include "app/options.h"

#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include <CLI/CLI.hpp>

#include "app/exit_codes.h"
#include "app/memory_limit.h"

namespace infer::app {
namespace {

// "0.485,0.456,0.406" -> three floats; false for anything else (an empty item, trailing text).
bool parse_floats(const std::string& text, std::vector<float>& out) {
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    try {
      out.push_back(std::stof(item, &used));
    } catch (const std::exception&) {
      return false;
    }
    if (used != item.size()) return false;
  }
  return !out.empty() && text.back() != ',';
}

// "3/16" -> {3, 16}: digits only, 0 <= I < N <= 1000000.
bool parse_shard(const std::string& text, Shard& out) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return false;
  const auto number = [](const std::string& digits, int& value) {
    if (digits.empty() || digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    value = std::stoi(digits);
    return true;
  };
  Shard s;
  if (!number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count)) return false;
  if (s.count < 1 || s.count > 1000000 || s.index >= s.count) return false;
  out = s;
  return true;
}

}  // namespace

ParseResult parse_options(int argc, char** argv) {
  ParseResult result;
  Options& o = result.options;
  CLI::App cli{
      "infer: classify images with a small CNN, on the GPU through cuDNN when one is usable.\n"
      "Images: PNG, JPEG, BMP, PBM/PGM/PPM, GIF, TGA; a directory means every image in it.",
      "infer"};
  // Options are --long and -s on every system. CLI11 would also take /name on Windows, and so
  // read a root-relative path (/photos/cat.png) as an unknown option.
  cli.allow_windows_style_options(false);
  cli.footer(
      "Exit codes: 0 ok, 1 internal error, 2 usage, 3 invalid input (image, model, weights, manifest)\n"
      "            or a model that needs more than --max-memory for one image,\n"
      "            4 GPU demanded but unusable (or failed during the run),\n"
      "            5 the environment does not match the manifest (--check),\n"
      "            6 standard output (or --output's file) could not be written. See README.md.");
  cli.add_option("inputs", o.inputs, "Image files or directories")->type_name("IMAGE|DIR");
  cli.add_option("--model", o.model,
                 "Model: infer's TOML, an ONNX file (not in the Windows build), or a TOML naming one (default: the "
                 "shipped Fashion-MNIST model)")
      ->type_name("PATH");
  const std::map<std::string, Device> devices{{"auto", Device::Auto}, {"gpu", Device::Gpu}, {"cpu", Device::Cpu}};
  cli.add_option("--device", o.device,
                 "auto: the GPU if usable, else the CPU with a notice saying why; gpu: fail if unusable")
      ->transform(CLI::CheckedTransformer(devices).description(""))
      ->type_name("auto|gpu|cpu")
      ->default_str("auto");
  // Preprocessing: each overrides what the model declares ([input] in its TOML).
  InvertMode invert = InvertMode::No;
  const std::map<std::string, InvertMode> inverts{
      {"auto", InvertMode::Auto}, {"yes", InvertMode::Yes}, {"no", InvertMode::No}};
  CLI::Option* invert_option =
      cli.add_option("--invert", invert,
                     "Invert images (auto: those whose border is light); default: as the model says")
          ->transform(CLI::CheckedTransformer(inverts).description(""))
          ->type_name("auto|yes|no");
  ResizeMode resize = ResizeMode::Crop;
  const std::map<std::string, ResizeMode> resizes{
      {"trim_fit", ResizeMode::TrimFit}, {"stretch", ResizeMode::Stretch}, {"crop", ResizeMode::Crop}};
  CLI::Option* resize_option =
      cli.add_option("--resize", resize,
                     "How an image of another size becomes the input: crop (shorter side to --resize-size, then "
                     "the centre), stretch, trim_fit (the foreground fitted, as Fashion-MNIST); default: the model's")
          ->transform(CLI::CheckedTransformer(resizes).description(""))
          ->type_name("crop|stretch|trim_fit");
  AlphaMode alpha = AlphaMode::Drop;
  const std::map<std::string, AlphaMode> alphas{{"white", AlphaMode::White}, {"drop", AlphaMode::Drop}};
  CLI::Option* alpha_option =
      cli.add_option("--alpha", alpha,
                     "Transparent pixels: white (composited over white) or drop (the stored colour, as "
                     "torchvision's convert(\"RGB\")); default: the model's")
          ->transform(CLI::CheckedTransformer(alphas).description(""))
          ->type_name("white|drop");
  int resize_size = 0;
  CLI::Option* resize_size_option =
      cli.add_option("--resize-size", resize_size, "--resize crop: the shorter side before cropping")
          ->check(CLI::Range(1, 1'000'000))
          ->type_name("N");
  ChannelOrder channel_order = ChannelOrder::Rgb;
  const std::map<std::string, ChannelOrder> orders{{"rgb", ChannelOrder::Rgb}, {"bgr", ChannelOrder::Bgr}};
  CLI::Option* order_option = cli.add_option("--channel-order", channel_order, "Colour channel order of the input")
                                  ->transform(CLI::CheckedTransformer(orders).description(""))
                                  ->type_name("rgb|bgr");
  std::string mean_text, std_text;
  cli.add_option("--mean", mean_text, "Per-channel mean subtracted from pixels in [0, 1] (default: the model's)")
      ->type_name("M[,M,M]");
  cli.add_option("--std", std_text, "Per-channel divisor after the mean (default: the model's)")->type_name("S[,S,S]");
  cli.add_flag("--softmax", o.softmax,
               "A model that does not end with a softmax prints its raw scores; this prints probabilities "
               "(a softmax over its outputs) instead");
  cli.add_option("--top-k", o.top_k, "Classes to print per image")->check(CLI::Range(1, 1000))->default_val(3);
  cli.add_option("--batch", o.batch,
                 "Images per forward pass (at most the images named, when the inputs are only files)")
      ->check(CLI::Range(1, 4096))
      ->default_val(64);
  cli.add_option("--threads", o.threads,
                 "CPU threads (default: every core or one, whichever ran the recent batches faster, so that "
                 "another job on a core does not stall every batch; one for a single image; OMP_NUM_THREADS "
                 "or this fixes the count)")
      ->check(CLI::Range(1, 1024));
  std::string max_memory;
  CLI::Option* max_memory_option =
      cli.add_option("--max-memory", max_memory,
                     "Memory a run may plan for the model (weights, activations of a batch, workspace): bytes, or "
                     "with K, M, G, T (powers of 1024). A model over it is refused (exit 3); a batch over it is "
                     "made smaller")
          ->type_name("SIZE")
          ->default_str("4G");
  cli.add_flag("--json", o.json,
               "One JSON object per image per line on stdout; with --check, the report as one JSON object");
  cli.add_flag("--check", o.check,
               "Check this machine against the manifest (driver, CUDA, cuDNN, GPU, model digests) and exit; "
               "0 if every required item holds, 5 if not");
  cli.add_option("--manifest", o.manifest, "Environment manifest (default: the shipped VERSIONS.toml)")
      ->type_name("PATH");
  cli.add_option("--write-manifest", o.write_manifest,
                 "Write a manifest describing this machine (and the model's digests) to PATH and exit")
      ->type_name("PATH");
  CLI::Option* nfd_option =
      cli.add_option("--nfd", o.nfd,
                     "With --check: also write the result as a Node Feature Discovery feature file (node labels "
                     "infer.feature.node.kubernetes.io/...; docs/kubernetes.md), atomically")
          ->type_name("PATH");
  cli.add_option("--nfd-expiry", o.nfd_expiry, "Seconds until NFD drops the labels of --nfd unless rewritten")
      ->check(CLI::Range(60, 31 * 24 * 3600))
      ->default_val(3600)
      ->needs(nfd_option);
  std::string shard_text;
  CLI::Option* shard_option =
      cli.add_option("--shard", shard_text,
                     "Classify part I of N of the inputs (0 <= I < N), chosen by a stable hash of each image's "
                     "path relative to its directory argument: N processes over the same inputs classify each "
                     "image once (a Kubernetes Indexed Job: --shard $(JOB_COMPLETION_INDEX)/N)")
          ->type_name("I/N");
  cli.add_option("--output", o.output,
                 "Write the results to FILE instead of stdout, atomically when the run ends (a temporary "
                 "dot-file beside it, then renamed): an interrupted run leaves no FILE, a rerun replaces it")
      ->type_name("FILE");
  cli.add_flag("--no-verify", o.no_verify, "Skip the start-up environment check and the model digest check");
  const std::map<std::string, Precision> precisions{
      {"fp32", Precision::Fp32}, {"tf32", Precision::Tf32}, {"fp16", Precision::Fp16}};
  cli.add_option("--precision", o.precision,
                 "GPU arithmetic: fp32 (within 1e-4 of the CPU), tf32 (tensor cores, float data), fp16 (half "
                 "storage, tensor cores); tf32 and fp16 need the GPU")
      ->transform(CLI::CheckedTransformer(precisions).description(""))
      ->type_name("fp32|tf32|fp16")
      ->default_str("fp32");
  const std::map<std::string, int> cuda_majors{{"auto", 0}, {"12", 12}, {"13", 13}};
  cli.add_option("--cuda", o.cuda_major,
                 "GPU backend by CUDA major: 13 (drivers >= 580, GPUs >= 7.5), 12 (drivers >= 525, GPUs >= 5.0), "
                 "or auto (default: $INFER_CUDA, else the newest that runs here); a forced backend that cannot "
                 "run is an error (exit 4), never a fallback to the CPU")
      ->transform(CLI::CheckedTransformer(cuda_majors).description(""))
      ->type_name("12|13|auto")
      ->default_str("auto");
  cli.add_flag("--autotune", o.autotune,
               "GPU: measure the convolution algorithms once and cache the fastest (see --autotune-cache)");
  cli.add_option("--autotune-cache", o.autotune_cache,
                 "Autotune cache file (default: $INFER_AUTOTUNE_CACHE, else $XDG_CACHE_HOME/infer/autotune.json, "
                 "else ~/.cache/infer/autotune.json; on Windows %LOCALAPPDATA%\\infer\\autotune.json)")
      ->type_name("PATH");
  cli.add_flag("-v,--verbose", o.verbose,
               "GPU: say on stderr which algorithm each convolution uses, cache use and CUDA graph fallbacks");
  cli.add_flag("--version", o.version, "Build-time and run-time versions (compiler, CUDA, cuDNN) and the model");

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    result.exit_code = cli.exit(e);
    return result;
  } catch (const CLI::ParseError& e) {
    std::cerr << "infer: " << e.what() << "\nRun 'infer --help' for usage.\n";
    result.exit_code = kExitUsage;
    return result;
  }
  for (auto [name, text, values] : {std::tuple{"--mean", &mean_text, &o.preprocessing.mean},
                                    std::tuple{"--std", &std_text, &o.preprocessing.std}}) {
    if (!text->empty() && !parse_floats(*text, *values)) {
      std::cerr << "infer: " << name << ": '" << *text << "' is not a list of numbers (0.485,0.456,0.406)\n"
                << "Run 'infer --help' for usage.\n";
      result.exit_code = kExitUsage;
      return result;
    }
  }
  if (shard_option->count() > 0 && !parse_shard(shard_text, o.shard)) {
    std::cerr << "infer: --shard: '" << shard_text
              << "' is not I/N with 0 <= I < N <= 1000000 (0/4 is the first of four parts)\nRun 'infer --help' for "
                 "usage.\n";
    result.exit_code = kExitUsage;
    return result;
  }
  if (!o.nfd.empty() && !o.check) {
    std::cerr << "infer: --nfd writes the result of --check: add --check\nRun 'infer --help' for usage.\n";
    result.exit_code = kExitUsage;
    return result;
  }
  if (invert_option->count() > 0) o.preprocessing.invert = invert;
  if (alpha_option->count() > 0) o.preprocessing.alpha = alpha;
  if (resize_option->count() > 0) o.preprocessing.resize = resize;
  if (resize_size_option->count() > 0) o.preprocessing.resize_size = resize_size;
  if (order_option->count() > 0) o.preprocessing.channel_order = channel_order;
  if (max_memory_option->count() > 0) {
    const std::optional<std::uint64_t> bytes = parse_size(max_memory);
    if (!bytes) {
      std::cerr << "infer: --max-memory: '" << max_memory
                << "' is not a size (bytes, or a number with K, M, G or T: 512M, 4G, 1.5T)\nRun 'infer --help' for "
                   "usage.\n";
      result.exit_code = kExitUsage;
      return result;
    }
    o.max_memory = *bytes;
  }
  if (o.device == Device::Cpu && o.cuda_major != 0) {
    std::cerr << "infer: --cuda " << o.cuda_major
              << " picks a GPU backend; --device cpu uses none (drop one of them)\n";
    result.exit_code = kExitUsage;
    return result;
  }
  if (o.device == Device::Cpu && o.precision != Precision::Fp32) {
    std::cerr << "infer: --precision " << precision_name(o.precision)
              << " needs the GPU; --device cpu runs fp32 only (use --device gpu or auto, or --precision fp32)\n";
    result.exit_code = kExitUsage;
    return result;
  }
  if (!o.version && !o.check && o.write_manifest.empty() && o.inputs.empty()) {
    std::cerr << "infer: no input: give one or more images or directories\nRun 'infer --help' for usage.\n";
    result.exit_code = kExitUsage;
  }
  return result;
}

}  // namespace infer::app
