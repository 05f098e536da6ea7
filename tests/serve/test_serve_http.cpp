// The server in process (serve/server.h), on 127.0.0.1 and a free port, driven by an HTTP client:
// answers that went through dynamic batching agree with one-sample runs within the rounding bound
// (tests/support/error_bound.h: two float results within B of the exact value are within 2B of each
// other), images sent as BYTES give what the Classifier gives for the same files, a bad image fails
// its own request only, a full queue answers 503 at once, and a drain answers what is in flight.
#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "formats/model_file.h"
#include "infer/classifier.h"
#include "serve/server.h"
#include "tests/support/error_bound.h"
#include "tests/support/test_util.h"

namespace infer::serve {
namespace {

using nlohmann::json;
using test::Random;

const std::string kModel = "fashion";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ClassifierOptions cpu_options() {
  ClassifierOptions o;
  o.device = Device::Cpu;
  o.verify = false;
  return o;
}

// A server of the shipped model on the CPU, started.
struct TestServer {
  explicit TestServer(BatcherOptions batching) : decoders(2) {
    repo.add(std::make_unique<ServedModel>(kModel,
                                           Classifier(test::shipped_file("weights/fashion.toml"), cpu_options()),
                                           batching, decoders, metrics.add_model(kModel)));
    ServerOptions o;
    o.metrics.port = -1;
    o.http.threads = 16;
    server = std::make_unique<Server>(repo, metrics, o, [](const std::string&) {});
    port = server->start().http;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  }
  Metrics metrics;
  WorkerPool decoders;
  Repository repo;
  std::unique_ptr<Server> server;
  int port = 0;
};

// An infer request of n preprocessed samples in binary, asking for binary scores.
std::string tensor_request(const std::vector<float>& samples, int n, std::size_t& header_length) {
  const json header = {{"inputs",
                        {{{"name", "input"},
                          {"datatype", "FP32"},
                          {"shape", {n, 1, 28, 28}},
                          {"parameters", {{"binary_data_size", samples.size() * sizeof(float)}}}}}},
                       {"outputs", {{{"name", "scores"}, {"parameters", {{"binary_data", true}}}}}}};
  const std::string h = header.dump();
  header_length = h.size();
  return h + std::string(reinterpret_cast<const char*>(samples.data()), samples.size() * sizeof(float));
}

std::vector<float> binary_scores(const httplib::Result& r) {
  const std::size_t json_size = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  const std::string data = r->body.substr(json_size);
  std::vector<float> out(data.size() / sizeof(float));
  std::memcpy(out.data(), data.data(), out.size() * sizeof(float));
  return out;
}

TEST(ServeHttp, BatchedAnswersAgreeWithOneSampleRunsWithinTheRoundingBound) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  BatcherOptions batching;
  batching.max_batch = 16;
  batching.max_delay = std::chrono::milliseconds(3);  // requests from 6 clients ride together
  TestServer s(batching);
  Classifier oracle(test::shipped_file("weights/fashion.toml"), cpu_options());
  const Network net = load_model(test::shipped_file("weights/fashion.toml")).network;
  const std::size_t size = oracle.input_size(), classes = oracle.output_size();

  constexpr int kClients = 6, kRequests = 12;
  std::vector<std::vector<float>> inputs(kClients * kRequests), answers(inputs.size());
  std::vector<int> counts(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    counts[i] = rng.integer(1, 4);
    inputs[i] = rng.vector(static_cast<std::size_t>(counts[i]) * size, -2.0f, 2.0f);
  }
  std::atomic<int> failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client client = s.client();
      for (int r = 0; r < kRequests; ++r) {
        const std::size_t i = static_cast<std::size_t>(c * kRequests + r);
        std::size_t header_length = 0;
        const std::string body = tensor_request(inputs[i], counts[i], header_length);
        const httplib::Headers headers = {{"Inference-Header-Content-Length", std::to_string(header_length)}};
        const httplib::Result res = client.Post("/v2/models/fashion/infer", headers, body, "application/octet-stream");
        if (!res || res->status != 200) {
          ++failed;
          continue;
        }
        answers[i] = binary_scores(res);
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(failed.load(), 0);

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(answers[i].size(), static_cast<std::size_t>(counts[i]) * classes);
    for (int k = 0; k < counts[i]; ++k) {
      const std::vector<float> sample(inputs[i].begin() + static_cast<std::ptrdiff_t>(k * size),
                                      inputs[i].begin() + static_cast<std::ptrdiff_t>((k + 1) * size));
      std::vector<float> alone(classes);
      oracle.run(sample.data(), 1, alone.data());
      const std::vector<double> bound =
          test::rounding_error_bound(net, sample, 1, net.layers().size(), test::kFp32Rounding);
      const std::vector<float> served(answers[i].begin() + static_cast<std::ptrdiff_t>(k * classes),
                                      answers[i].begin() + static_cast<std::ptrdiff_t>((k + 1) * classes));
      std::vector<double> want(alone.begin(), alone.end()), twice(bound.size());
      for (std::size_t j = 0; j < bound.size(); ++j) twice[j] = 2.0 * bound[j];
      test::expect_close(served, want, twice, "request " + std::to_string(i) + " sample " + std::to_string(k));
    }
  }
  // Not vacuous: some forward pass held samples of more than one request (at most 4 per request).
  const std::string m = s.metrics.render();
  const auto count_at = [&](const std::string& le) {
    const std::string key = "infer_batch_size_bucket{model=\"fashion\",le=\"" + le + "\"} ";
    const std::size_t at = m.find(key);
    return std::stoull(m.substr(at + key.size()));
  };
  EXPECT_LT(count_at("4"), count_at("+Inf")) << "no batch held more than one request's samples";
}

TEST(ServeHttp, ImagesAsBytesGiveTheClassifiersScores) {
  TestServer s(BatcherOptions{});
  Classifier oracle(test::shipped_file("weights/fashion.toml"), cpu_options());
  const Network net = load_model(test::shipped_file("weights/fashion.toml")).network;
  const std::vector<std::string> files = {"ankle-boot.png", "bag.png", "photo-sneaker.jpg", "trouser.png"};
  std::string binary;
  for (const std::string& f : files) {
    const std::string bytes = read_file(test::shipped_file("samples/" + f));
    const auto n = static_cast<std::uint32_t>(bytes.size());
    const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>(n >> 8 & 0xff),
                         static_cast<char>(n >> 16 & 0xff), static_cast<char>(n >> 24)};
    binary.append(len, 4);
    binary += bytes;
  }
  const std::string header = json{{"inputs",
                                   {{{"name", "image"},
                                     {"datatype", "BYTES"},
                                     {"shape", {files.size(), 1}},
                                     {"parameters", {{"binary_data_size", binary.size()}}}}}},
                                  {"outputs",
                                   {{{"name", "scores"}, {"parameters", {{"binary_data", true}}}},
                                    {{"name", "scores"}, {"parameters", {{"classification", 2}}}}}}}
                                 .dump();
  httplib::Client client = s.client();
  const httplib::Result res = client.Post("/v2/models/fashion/versions/1/infer",
                                          {{"Inference-Header-Content-Length", std::to_string(header.size())}},
                                          header + binary, "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::vector<float> scores = binary_scores(res);
  const json doc =
      json::parse(res->body.substr(0, std::stoul(res->get_header_value("Inference-Header-Content-Length"))));
  const json& classes = doc["outputs"][1];
  EXPECT_EQ(classes["datatype"], "BYTES");
  EXPECT_EQ(classes["shape"], json({files.size(), 2}));
  const std::size_t size = oracle.input_size(), k = oracle.output_size();
  for (std::size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i]);
    std::vector<float> sample(size), alone(k);
    oracle.preprocess(test::shipped_file("samples/" + files[i]), sample.data());
    oracle.run(sample.data(), 1, alone.data());
    const std::vector<double> bound =
        test::rounding_error_bound(net, sample, 1, net.layers().size(), test::kFp32Rounding);
    std::vector<double> want(alone.begin(), alone.end()), twice(k);
    for (std::size_t j = 0; j < k; ++j) twice[j] = 2.0 * bound[j];
    test::expect_close(std::vector<float>(scores.begin() + static_cast<std::ptrdiff_t>(i * k),
                                          scores.begin() + static_cast<std::ptrdiff_t>((i + 1) * k)),
                       want, twice, "scores");
    // Triton's "score:index:label", best first, the label the model gives that index.
    const std::vector<Prediction> top = oracle.classify(test::shipped_file("samples/" + files[i]), 2);
    for (std::size_t j = 0; j < 2; ++j) {
      const std::string entry = classes["data"][i * 2 + j];
      const std::size_t colon = entry.find(':'), second = entry.find(':', colon + 1);
      EXPECT_NEAR(std::stod(entry.substr(0, colon)), top[j].score,
                  5e-7 + 2.0 * bound[static_cast<std::size_t>(top[j].index)]);
      EXPECT_EQ(std::stoi(entry.substr(colon + 1, second - colon - 1)), top[j].index) << entry;
      EXPECT_EQ(entry.substr(second + 1), top[j].label);
    }
  }
}

TEST(ServeHttp, ABadImageFailsItsOwnRequestNamingTheElement) {
  TestServer s(BatcherOptions{});
  const std::string good = read_file(test::shipped_file("samples/bag.png"));
  const json bad = {
      {"inputs",
       {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {2}}, {"data", {"not an image", "GIF89a\x01\x00"}}}}}};
  httplib::Client client = s.client();
  const httplib::Result res = client.Post("/v2/models/fashion/infer", bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const std::string error = json::parse(res->body)["error"];
  EXPECT_NE(error.find("input \"image\" element 0: not a supported image"), std::string::npos) << error;
  // The server goes on: a good image right after.
  std::string binary(4, '\0');
  const auto size = static_cast<std::uint32_t>(good.size());
  std::memcpy(binary.data(), &size, 4);
  binary += good;
  const std::string header = json{{"inputs",
                                   {{{"name", "image"},
                                     {"datatype", "BYTES"},
                                     {"shape", {1}},
                                     {"parameters", {{"binary_data_size", binary.size()}}}}}}}
                                 .dump();
  const httplib::Result ok =
      client.Post("/v2/models/fashion/infer", {{"Inference-Header-Content-Length", std::to_string(header.size())}},
                  header + binary, "application/octet-stream");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(s.metrics.render().find("reason=\"invalid\"} 1"), std::string::npos);
}

TEST(ServeHttp, AFullQueueAnswers503AtOnce) {
  BatcherOptions batching;
  batching.max_batch = 4;
  batching.max_queue = 4;
  batching.max_delay = std::chrono::seconds(2);  // the first request waits, holding the queue
  TestServer s(batching);
  Random rng;
  std::size_t h = 0;
  const std::string four = tensor_request(rng.vector(4 * 784), 4, h);
  std::atomic<int> first_status{0};
  std::thread first([&] {
    httplib::Client c = s.client();
    // Four samples fill a batch, which runs at once: a batch of 3 waits its delay instead.
    std::size_t h3 = 0;
    const std::string three = tensor_request(rng.vector(3 * 784), 3, h3);
    const httplib::Result r =
        c.Post("/v2/models/fashion/infer", {{"Inference-Header-Content-Length", std::to_string(h3)}}, three,
               "application/octet-stream");
    first_status = r ? r->status : -1;
  });
  // Until the 3 samples are queued (a sleep was not enough on a loaded machine).
  for (int i = 0; s.repo.find(kModel)->queued_samples() < 3; ++i) {
    ASSERT_LT(i, 20'000) << "the first request never queued";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  httplib::Client c = s.client();
  const auto start = std::chrono::steady_clock::now();
  const httplib::Result r = c.Post("/v2/models/fashion/infer", {{"Inference-Header-Content-Length", std::to_string(h)}},
                                   four, "application/octet-stream");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_NE(r->body.find("the queue is full"), std::string::npos) << r->body;
  EXPECT_EQ(first_status.load(), 0) << "the queued request finished before the refusal: not at once";
  EXPECT_LT(took, std::chrono::seconds(1));
  first.join();
  EXPECT_EQ(first_status.load(), 200);
}

TEST(ServeHttp, ADrainAnswersTheRequestInFlightAndThenRefusesConnections) {
  BatcherOptions batching;
  batching.max_delay = std::chrono::milliseconds(800);
  TestServer s(batching);
  Random rng;
  std::size_t h = 0;
  const std::string one = tensor_request(rng.vector(784), 1, h);
  std::atomic<int> status{0};
  std::thread inflight([&] {
    httplib::Client c = s.client();
    const httplib::Result r =
        c.Post("/v2/models/fashion/infer", {{"Inference-Header-Content-Length", std::to_string(h)}}, one,
               "application/octet-stream");
    status = r ? r->status : -1;
  });
  for (int i = 0; s.repo.find(kModel)->queued_samples() < 1; ++i) {  // the request is in the server
    ASSERT_LT(i, 20'000) << "the request never queued";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.server->drain();
  // The server's side: answered (written) before drain() returned; the client reads it after.
  EXPECT_EQ(s.metrics.answered.load(), 1u) << "drain() returned before the request in flight was answered";
  inflight.join();
  EXPECT_EQ(status.load(), 200);
  EXPECT_EQ(s.metrics.received.load(), 1u);
  httplib::Client late = s.client();
  EXPECT_FALSE(late.Get("/v2/health/live")) << "a connection was taken after the drain";
}

}  // namespace
}  // namespace infer::serve
