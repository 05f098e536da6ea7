// Printing results: one line per image on stdout (text or a JSON object), one line per failed
// input on stderr. Every line is one line: names and labels from outside (a file name with a
// newline, a label with an escape sequence) are shown with such characters written as \xNN.
// Every line is written whole and flushed at once, so a run stopped by a signal ends on a whole line.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "app/inputs.h"
#include "app/options.h"
#include "infer/classifier.h"

namespace infer::app {

class Printer {
 public:
  Printer(const Options& options, const Classifier& classifier, std::ostream& out, std::ostream& err);

  // A failed input: its message on stderr, and with --json an error object in its place on stdout.
  void error(const Input& input, const std::string& message);
  // The k best classes of one image, best first, with their probabilities, or with the network's
  // raw scores when `scores` (a model without a final softmax, run without --softmax): JSON says
  // "score" instead of "prob", the text line ends with "(scores)".
  void result(const Input& input, const std::vector<Prediction>& top, bool scores);
  // Pushes what was printed to the output; throws OutputError when it cannot be written.
  void flush();

 private:
  // One line on out_, written and flushed inside a WholeOutput (app/interrupt.h): a signal never
  // leaves half of it in a pipe.
  void emit(const std::string& line);
  void write_out(const std::string& line);  // inside a WholeOutput

  const Options& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::string device_;
  std::string backend_;  // "gpu: NVIDIA H200 (sm_90), cuDNN 9.19.0, ...": names the GPU, or the CPU stand-in in tests
  std::string tag_;
  int write_errno_ = 0;  // why the first write to out_ failed
};

// RFC 4648 base64 (with padding): how --json carries a file name that is not UTF-8.
std::string base64(std::string_view bytes);

}  // namespace infer::app
