// The HTTP/REST request parser and response writer (serve/http_json.h): tensors in JSON (flat and
// nested) and in binary, on fresh random data, and every malformed request refused with its reason.
#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/http_json.h"
#include "serve/serve_error.h"

namespace infer::serve {
namespace {

using nlohmann::json;

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::string binary_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string bytes_binary(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const auto n = static_cast<std::uint32_t>(e.size());
    const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>(n >> 8 & 0xff),
                         static_cast<char>(n >> 16 & 0xff), static_cast<char>(n >> 24)};
    out.append(len, 4);
    out += e;
  }
  return out;
}

TEST(HttpJson, Fp32InJsonFlatAndNestedGiveTheSameElements) {
  std::mt19937 rng(1);
  const std::vector<float> v = random_floats(2 * 3 * 4, rng);
  json nested = json::array();
  for (int a = 0; a < 2; ++a) {
    json row = json::array();
    for (int b = 0; b < 3; ++b)
      row.push_back(std::vector<float>(v.begin() + (a * 3 + b) * 4, v.begin() + (a * 3 + b + 1) * 4));
    nested.push_back(row);
  }
  for (const json& data : {json(v), nested}) {
    const json req = {{"id", "r1"},
                      {"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {2, 3, 4}}, {"data", data}}}}};
    const InferRequest r = parse_infer_request(req.dump(), std::nullopt, "m", "");
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_EQ(r.id, "r1");
    EXPECT_EQ(r.inputs[0].shape, (std::vector<std::int64_t>{2, 3, 4}));
    EXPECT_EQ(r.inputs[0].fp32, v);  // JSON numbers print and parse back exactly (nlohmann round-trips floats)
  }
}

TEST(HttpJson, BinaryTensorsFollowTheHeaderInInputOrder) {
  std::mt19937 rng(2);
  const std::vector<float> v = random_floats(5 * 7, rng);
  std::vector<std::string> images;
  std::uniform_int_distribution<int> len(0, 300), byte(0, 255);
  for (int i = 0; i < 6; ++i) {
    std::string e(static_cast<std::size_t>(len(rng)), '\0');
    for (char& c : e) c = static_cast<char>(byte(rng));
    images.push_back(e);
  }
  const std::string fp32 = binary_of(v), bytes = bytes_binary(images);
  const json req = {
      {"inputs",
       {{{"name", "a"}, {"datatype", "BYTES"}, {"shape", {6}}, {"parameters", {{"binary_data_size", bytes.size()}}}},
        {{"name", "b"}, {"datatype", "FP32"}, {"shape", {5, 7}}, {"parameters", {{"binary_data_size", fp32.size()}}}}}},
      {"outputs", {{{"name", "scores"}, {"parameters", {{"binary_data", true}, {"classification", 3}}}}}}};
  const std::string header = req.dump();
  const InferRequest r = parse_infer_request(header + bytes + fp32, header.size(), "m", "1");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].bytes, images);
  ASSERT_EQ(r.inputs[1].fp32.size(), v.size());
  EXPECT_EQ(std::memcmp(r.inputs[1].fp32.data(), v.data(), fp32.size()), 0);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].binary);
  EXPECT_EQ(r.outputs[0].classification, 3);
  EXPECT_EQ(r.version, "1");
}

TEST(HttpJson, BinaryDataOutputIsTheDefaultOfOutputsThatDoNotSay) {
  const json req = {{"parameters", {{"binary_data_output", true}}},
                    {"inputs", {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {1.5}}}}},
                    {"outputs", {{{"name", "scores"}}, {{"name", "s2"}, {"parameters", {{"binary_data", false}}}}}}};
  const InferRequest r = parse_infer_request(req.dump(), std::nullopt, "m", "");
  EXPECT_TRUE(r.binary_output);
  EXPECT_TRUE(r.outputs[0].binary);
  EXPECT_FALSE(r.outputs[1].binary);
}

struct Refusal {
  const char* what;
  std::string body;
  std::optional<std::size_t> header_length;
  const char* message;  // a part of the error's text
};

std::string with_input(const json& input) { return json{{"inputs", {input}}}.dump(); }

TEST(HttpJson, MalformedRequestsAreRefusedWithTheirReason) {
  const json ok = {{"name", "input"}, {"datatype", "FP32"}, {"shape", {2}}, {"data", {1, 2}}};
  auto changed = [&](const char* key, const json& value) {
    json in = ok;
    in[key] = value;
    return with_input(in);
  };
  auto without = [&](const char* key) {
    json in = ok;
    in.erase(key);
    return with_input(in);
  };
  const std::string header =
      with_input({{"name", "input"}, {"datatype", "FP32"}, {"shape", {2}}, {"parameters", {{"binary_data_size", 8}}}});
  const std::string bytes_header =
      with_input({{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"parameters", {{"binary_data_size", 6}}}});
  const std::vector<Refusal> cases = {
      {"not JSON", "{\"inputs\": [", std::nullopt, "not valid JSON"},
      {"empty body", "", std::nullopt, "not valid JSON"},
      {"not an object", "[1, 2]", std::nullopt, "must be a JSON object"},
      {"no inputs", "{}", std::nullopt, "\"inputs\" must be a non-empty list"},
      {"empty inputs", "{\"inputs\": []}", std::nullopt, "\"inputs\" must be a non-empty list"},
      {"input not an object", "{\"inputs\": [3]}", std::nullopt, "each input must be an object"},
      {"no name", without("name"), std::nullopt, "\"name\" is missing"},
      {"name not a string", changed("name", 5), std::nullopt, "\"name\" must be a string"},
      {"no datatype", without("datatype"), std::nullopt, "\"datatype\" is missing"},
      {"unknown datatype", changed("datatype", "FLOAT"), std::nullopt, "unknown datatype \"FLOAT\""},
      {"unsupported datatype", changed("datatype", "INT64"), std::nullopt, "datatype INT64 is not taken here"},
      {"no shape", without("shape"), std::nullopt, "\"shape\" is missing"},
      {"negative size", changed("shape", {-1}), std::nullopt, "non-negative integers"},
      {"fractional size", changed("shape", {1.5}), std::nullopt, "non-negative integers"},
      {"rank 9", changed("shape", std::vector<int>(9, 1)), std::nullopt, "at most 8 sizes"},
      {"huge shape", changed("shape", {1 << 30, 1 << 30, 1 << 30}), std::nullopt, "is too large"},
      {"too few elements", changed("data", {1}), std::nullopt, "\"data\" has 1 elements, its shape says 2"},
      {"too many elements", changed("data", {1, 2, 3}), std::nullopt, "more elements than its shape's 2"},
      {"nested too deep", changed("data", {{1}, {2}}), std::nullopt, "nested deeper than its shape"},
      {"a string in FP32", changed("data", {1, "2"}), std::nullopt, "FP32 data must be numbers"},
      {"data not a list", changed("data", 1), std::nullopt, "\"data\" must be a list"},
      {"no data", without("data"), std::nullopt, "neither \"data\" nor binary_data_size"},
      {"parameters not an object", changed("parameters", 1), std::nullopt, "\"parameters\" must be an object"},
      {"a number in BYTES", with_input({{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {1}}}),
       std::nullopt, "BYTES data must be strings"},
      {"header length past the body", "{}", 10, "Inference-Header-Content-Length is 10"},
      {"binary size past the body", header + "1234", header.size(), "only 4 bytes of binary data are left"},
      {"binary left over", header + "123456789", header.size(), "1 bytes of binary data are not claimed"},
      {"FP32 binary of the wrong size",
       with_input(
           {{"name", "input"}, {"datatype", "FP32"}, {"shape", {2}}, {"parameters", {{"binary_data_size", 4}}}}) +
           "1234",
       with_input({{"name", "input"}, {"datatype", "FP32"}, {"shape", {2}}, {"parameters", {{"binary_data_size", 4}}}})
           .size(),
       "2 FP32 elements take 8"},
      {"BYTES element length past the data", bytes_header + std::string("\x09\0\0\0ab", 6), bytes_header.size(),
       "says 9 bytes, but only 2 are left"},
      {"BYTES length cut short", bytes_header + std::string("\x01\0\0\0a\x01", 6), bytes_header.size(),
       "ends inside an element's length"},
      {"both data and binary",
       with_input({{"name", "input"},
                   {"datatype", "FP32"},
                   {"shape", {1}},
                   {"data", {1}},
                   {"parameters", {{"binary_data_size", 4}}}}) +
           "1234",
       with_input({{"name", "input"},
                   {"datatype", "FP32"},
                   {"shape", {1}},
                   {"data", {1}},
                   {"parameters", {{"binary_data_size", 4}}}})
           .size(),
       "both \"data\" and binary_data_size"},
      {"classification 0",
       json{{"inputs", {ok}}, {"outputs", {{{"name", "scores"}, {"parameters", {{"classification", 0}}}}}}}.dump(),
       std::nullopt, "classification must be a positive integer"},
      {"outputs not a list", json{{"inputs", {ok}}, {"outputs", 1}}.dump(), std::nullopt, "\"outputs\" must be a list"},
      {"binary_data_output not a bool", json{{"inputs", {ok}}, {"parameters", {{"binary_data_output", 1}}}}.dump(),
       std::nullopt, "must be true or false"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.what);
    try {
      parse_infer_request(c.body, c.header_length, "m", "");
      ADD_FAILURE() << "accepted";
    } catch (const ServeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
  }
}

TEST(HttpJson, DeepNestingIsRefusedWithoutRecursingIntoIt) {
  // A million nested lists as a shape's size: the message once printed the value, and printing it
  // recursed a million frames deep, past a thread's stack (a review found it; the fuzzer's inputs
  // are too short to nest that far).
  const std::size_t depth = 1'000'000;
  const std::string body = "{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\", \"shape\": [" +
                           std::string(depth, '[') + std::string(depth, ']') + "], \"data\": []}]}";
  try {
    parse_infer_request(body, std::nullopt, "m", "");
    ADD_FAILURE() << "accepted";
  } catch (const ServeError& e) {
    EXPECT_NE(std::string(e.what()).find("must hold non-negative integers, found array"), std::string::npos)
        << e.what();
  }
}

TEST(HttpJson, MoreElementsThanTheModelHoldsAreRefusedBeforeTheyAreRead) {
  const RequestLimits limits{100, 4};
  const std::string fp32 = with_input(
      {{"name", "input"}, {"datatype", "FP32"}, {"shape", {1000}}, {"parameters", {{"binary_data_size", 4000}}}});
  const std::string bytes = with_input(
      {{"name", "image"}, {"datatype", "BYTES"}, {"shape", {5}}, {"parameters", {{"binary_data_size", 20}}}});
  // JSON values are counted as they are parsed: 100000 of them are refused before the document is built.
  std::string values = "{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP32\", \"shape\": [10], \"data\": [";
  for (int i = 0; i < 100'000; ++i) values += i ? ",0" : "0";
  values += "]}]}";
  const std::vector<Refusal> cases = {
      {"FP32 over the limit", fp32 + std::string(4000, '\0'), fp32.size(), "1000 elements, over the 100"},
      {"BYTES over the limit", bytes + std::string(20, '\0'), bytes.size(), "5 elements, over the 4"},
      {"JSON values over the limit", values, std::nullopt, "more values than the model's batch holds"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.what);
    try {
      parse_infer_request(c.body, c.header_length, "m", "", limits);
      ADD_FAILURE() << "accepted";
    } catch (const ServeError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // Within the limits, the same forms are taken.
  const std::string ok = with_input(
      {{"name", "input"}, {"datatype", "FP32"}, {"shape", {100}}, {"parameters", {{"binary_data_size", 400}}}});
  EXPECT_EQ(parse_infer_request(ok + std::string(400, '\0'), ok.size(), "m", "", limits).inputs[0].fp32.size(), 100u);
}

TEST(HttpJson, ResponseCarriesJsonAndBinaryOutputsInOrder) {
  std::mt19937 rng(3);
  InferResponse r;
  r.model = "m";
  r.version = "1";
  r.id = "7";
  OutputTensor scores{"scores", "FP32", {2, 3}, random_floats(6, rng), {}, true};
  OutputTensor classes{"classes", "BYTES", {2, 1}, {}, {"0.5:1:a", "0.25:0:b"}, false};
  OutputTensor binary_classes{"c2", "BYTES", {1}, {}, {"xyz"}, true};
  r.outputs = {scores, classes, binary_classes};
  const HttpBody out = encode_infer_response(r);
  ASSERT_GT(out.header_length, 0u);
  const json doc = json::parse(out.body.substr(0, out.header_length));
  EXPECT_EQ(doc["model_name"], "m");
  EXPECT_EQ(doc["id"], "7");
  EXPECT_EQ(doc["outputs"][0]["parameters"]["binary_data_size"], 24);
  EXPECT_EQ(doc["outputs"][1]["data"], json({"0.5:1:a", "0.25:0:b"}));
  EXPECT_EQ(doc["outputs"][2]["parameters"]["binary_data_size"], 7);
  const std::string binary = out.body.substr(out.header_length);
  EXPECT_EQ(binary, binary_of(scores.fp32) + bytes_binary({"xyz"}));

  r.outputs = {classes};
  const HttpBody json_only = encode_infer_response(r);
  EXPECT_EQ(json_only.header_length, 0u);
  EXPECT_EQ(json::parse(json_only.body)["outputs"][0]["shape"], json({2, 1}));
}

TEST(HttpJson, ErrorJsonEscapesTheMessage) {
  const std::string e = error_json("bad \"x\"\n\xff");
  const json doc = json::parse(e);
  EXPECT_EQ(doc["error"].get<std::string>(), "bad \"x\"\n\xef\xbf\xbd");  // invalid UTF-8 replaced by U+FFFD
}

}  // namespace
}  // namespace infer::serve
