"""`infer serve` end to end, as a client sees it: NVIDIA's tritonclient (HTTP with JSON and binary
tensors, and gRPC) against the running command, hostile requests and clients, the signals, and a
bounded load and soak.

    test_serve.py INFER_EXE SAMPLES_DIR [unittest arguments]

Every server binds 127.0.0.1 on free ports (--http-port 0); every load is bounded in requests and
time. Run by CTest with the tritonclient venv (tools/dev/serve-venv.sh)."""
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
import zlib

import numpy as np
import grpc
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

INFER = SAMPLES = None
MODEL = "fashion"
SHAPE = [1, 28, 28]


class Served:
    """An `infer serve` process of the shipped model on the CPU, on free ports of 127.0.0.1."""

    def __init__(self, *extra):
        self.proc = subprocess.Popen(
            [INFER, "serve", "--model", MODEL, "--device", "cpu", "--http-port", "0", "--grpc-port", "0",
             "--metrics-port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("infer serve did not start: " + self.proc.stderr.read())
        ports = json.loads(line)
        self.port, self.grpc_port, self.metrics_port = ports["http_port"], ports["grpc_port"], ports["metrics_port"]
        self.url = f"127.0.0.1:{self.port}"
        self.grpc_url = f"127.0.0.1:{self.grpc_port}"

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        self.log = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code

    def metric(self, name):
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)

    def wait_for(self, name, value, limit_s=20):
        """Until the metric `name` is at least `value` (a request in flight, samples queued)."""
        deadline = time.time() + limit_s
        while self.metric(name) < value:
            if time.time() > deadline:
                raise AssertionError(f"{name} never reached {value}")
            time.sleep(0.01)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])


def binary_request(x, outputs=None):
    """An infer request of FP32 samples in binary: (body, headers)."""
    header = {"inputs": [{"name": "input", "datatype": "FP32", "shape": list(x.shape),
                          "parameters": {"binary_data_size": x.nbytes}}]}
    if outputs is not None:
        header["outputs"] = outputs
    h = json.dumps(header).encode()
    return h + x.tobytes(), {"Inference-Header-Content-Length": str(len(h)), "Content-Type": "application/octet-stream"}


def post(port, body, headers=None, path=f"/v2/models/{MODEL}/infer", method="POST", timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def cli_probabilities(files):
    out = subprocess.run([INFER, "--json", "--top-k", "10", "--device", "cpu", *files], check=True,
                         capture_output=True, text=True).stdout
    probs = []
    for line in out.splitlines():
        row = [0.0] * 10
        for t in json.loads(line)["top"]:
            row[t["index"]] = t["prob"]
        probs.append(row)
    return np.array(probs, dtype=np.float32)


class Conformance(unittest.TestCase):
    """The protocol through tritonclient, HTTP with JSON and with binary tensor data."""

    @classmethod
    def setUpClass(cls):
        cls.served = Served()
        cls.client = triton_http.InferenceServerClient(cls.served.url)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        assert cls.served.stop() == 0, cls.served.log

    def test_health_and_metadata(self):
        c = self.client
        self.assertTrue(c.is_server_live())
        self.assertTrue(c.is_server_ready())
        self.assertTrue(c.is_model_ready(MODEL))
        self.assertTrue(c.is_model_ready(MODEL, "1"))
        self.assertFalse(c.is_model_ready("nope"))
        meta = c.get_server_metadata()
        self.assertEqual(meta["name"], "infer")
        self.assertIn("classification", meta["extensions"])
        self.assertIn("binary_tensor_data", meta["extensions"])
        model = c.get_model_metadata(MODEL)
        self.assertEqual(model["versions"], ["1"])
        self.assertEqual([(t["name"], t["datatype"], t["shape"]) for t in model["inputs"]],
                         [("input", "FP32", [-1] + SHAPE), ("image", "BYTES", [-1, 1])])
        self.assertEqual(model["outputs"], [{"name": "scores", "datatype": "FP32", "shape": [-1, 10]}])
        config = c.get_model_config(MODEL)
        self.assertEqual(config["max_batch_size"], 64)
        self.assertEqual(config["input"][0]["dims"], SHAPE)
        self.assertEqual(config["output"][0]["data_type"], "TYPE_FP32")
        status, body = post(self.served.port, None, path="/v2/health/ready", method="GET")
        ready = json.loads(body)
        self.assertEqual((status, ready["models"][0]["device"]), (200, "cpu"))
        self.assertTrue(ready["models"][0]["backend"].startswith("cpu: "))

    def test_images_give_what_the_command_line_gives(self):
        # One request of every sample: the same batch as `infer` makes of them, so the same numbers.
        files = sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES))
        images = np.array([[open(f, "rb").read()] for f in files], dtype=object)
        want = cli_probabilities(files)
        for binary in (True, False):
            i = triton_http.InferInput("image", [len(files), 1], "BYTES")
            if binary:
                i.set_data_from_numpy(images, binary_data=True)
            else:  # JSON strings carry text only: send the images' bytes as Latin-1 text is not possible; skip
                continue
            r = self.client.infer(MODEL, [i], outputs=[
                triton_http.InferRequestedOutput("scores", binary_data=True),
                triton_http.InferRequestedOutput("scores", binary_data=False, class_count=3)], request_id="req-7")
            self.assertEqual(r.get_response()["id"], "req-7")
            scores = r.as_numpy("scores")
            np.testing.assert_array_equal(scores, want)
        # The classification extension: "score:index:label", best first.
        i = triton_http.InferInput("image", [len(files), 1], "BYTES")
        i.set_data_from_numpy(images)
        r = self.client.infer(MODEL, [i], outputs=[triton_http.InferRequestedOutput("scores", class_count=3)])
        classes = r.as_numpy("scores")
        self.assertEqual(classes.shape, (len(files), 3))
        for row, probs in zip(classes, want):
            order = np.argsort(-probs, kind="stable")[:3]
            for entry, index in zip(row, order):
                score, idx, label = entry.decode().split(":", 2)
                self.assertEqual(int(idx), index)
                self.assertAlmostEqual(float(score), probs[index], delta=5e-7)  # printed with 6 decimals
                self.assertTrue(label)

    def test_tensors_in_json_and_in_binary_give_the_same_scores(self):
        rng = np.random.default_rng()
        x = rng.standard_normal([5] + SHAPE).astype(np.float32)
        results = []
        for binary_in in (True, False):
            for binary_out in (True, False):
                i = triton_http.InferInput("input", list(x.shape), "FP32")
                i.set_data_from_numpy(x, binary_data=binary_in)
                r = self.client.infer(MODEL, [i], outputs=[triton_http.InferRequestedOutput("scores", binary_data=binary_out)])
                results.append(r.as_numpy("scores"))
        for r in results[1:]:
            np.testing.assert_array_equal(r, results[0])  # the same batch: the same numbers, however carried
        self.assertEqual(results[0].shape, (5, 10))
        np.testing.assert_allclose(results[0].sum(axis=1), 1.0, rtol=1e-5)  # the shipped model ends in a softmax

    def test_grpc_answers_as_http_does(self):
        g = triton_grpc.InferenceServerClient(self.served.grpc_url)
        self.assertTrue(g.is_server_live())
        self.assertTrue(g.is_server_ready())
        self.assertTrue(g.is_model_ready(MODEL))
        self.assertFalse(g.is_model_ready("nope"))
        self.assertIn("classification", g.get_server_metadata(as_json=True)["extensions"])
        meta = g.get_model_metadata(MODEL, as_json=True)  # int64 fields come as strings in protobuf's JSON
        self.assertEqual([(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in meta["inputs"]],
                         [(t["name"], t["datatype"], t["shape"]) for t in self.client.get_model_metadata(MODEL)["inputs"]])
        config = g.get_model_config(MODEL, as_json=True)["config"]
        self.assertEqual((config["max_batch_size"], config["input"][0]["dims"]), (64, [str(d) for d in SHAPE]))
        # The same tensors over both protocols: the same numbers.
        x = np.random.default_rng().standard_normal([6] + SHAPE).astype(np.float32)
        gi = triton_grpc.InferInput("input", list(x.shape), "FP32")
        gi.set_data_from_numpy(x)
        hi = triton_http.InferInput("input", list(x.shape), "FP32")
        hi.set_data_from_numpy(x)
        np.testing.assert_array_equal(g.infer(MODEL, [gi]).as_numpy("scores"),
                                      self.client.infer(MODEL, [hi]).as_numpy("scores"))
        # Images and the classification extension.
        files = sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES))
        images = triton_grpc.InferInput("image", [len(files), 1], "BYTES")
        images.set_data_from_numpy(np.array([[open(f, "rb").read()] for f in files], dtype=object))
        r = g.infer(MODEL, [images], outputs=[triton_grpc.InferRequestedOutput("scores"),
                                              triton_grpc.InferRequestedOutput("scores", class_count=2)],
                    request_id="g1")
        self.assertEqual(r.get_response().id, "g1")
        want = cli_probabilities(files)
        outputs = r.get_response().outputs
        self.assertEqual([(o.datatype, list(o.shape)) for o in outputs], [("FP32", [len(files), 10]),
                                                                          ("BYTES", [len(files), 2])])
        raw = r.get_response().raw_output_contents
        np.testing.assert_array_equal(np.frombuffer(raw[0], np.float32).reshape(len(files), 10), want)
        # Errors: gRPC's codes.
        bad = triton_grpc.InferInput("input", [1, 1, 28, 27], "FP32")
        bad.set_data_from_numpy(np.ones([1, 1, 28, 27], np.float32))
        for model, inputs, code, message in [(MODEL, [bad], "StatusCode.INVALID_ARGUMENT", "shape must be [n, 1, 28, 28]"),
                                             ("nope", [gi], "StatusCode.NOT_FOUND", "unknown model")]:
            with self.assertRaises(InferenceServerException) as e:
                g.infer(model, inputs)
            self.assertEqual(e.exception.status(), code)
            self.assertIn(message, e.exception.message())
        g.close()

    def test_errors_come_back_as_the_protocols(self):
        i = triton_http.InferInput("input", [1, 1, 28, 27], "FP32")
        i.set_data_from_numpy(np.ones([1, 1, 28, 27], np.float32))
        with self.assertRaises(InferenceServerException) as e:
            self.client.infer(MODEL, [i])
        self.assertEqual(e.exception.status(), "400")
        self.assertIn("shape must be [n, 1, 28, 28]", e.exception.message())
        with self.assertRaises(InferenceServerException) as e:
            self.client.infer("nope", [i])
        self.assertEqual(e.exception.status(), "404")


def bytes_tensor(*elements):
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


def image_request(*elements):
    data = bytes_tensor(*elements)
    h = json.dumps({"inputs": [{"name": "image", "datatype": "BYTES", "shape": [len(elements)],
                                "parameters": {"binary_data_size": len(data)}}]}).encode()
    return h + data, {"Inference-Header-Content-Length": str(len(h))}


def png_claiming(width, height):
    """A PNG whose header claims width x height, with one tiny IDAT."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


class BadInput(unittest.TestCase):
    """Every bad request gets its status and the protocol's error, and the server goes on."""

    @classmethod
    def setUpClass(cls):
        cls.served = Served("--max-request-bytes", "1048576")

    @classmethod
    def tearDownClass(cls):
        assert cls.served.stop() == 0, cls.served.log

    def test_each_bad_request_gets_its_status_and_error(self):
        good_png = open(os.path.join(SAMPLES, "bag.png"), "rb").read()
        ok = {"name": "input", "datatype": "FP32", "shape": [1] + SHAPE, "data": [0.5] * 784}

        def infer_json(**changes):
            t = dict(ok, **changes)
            return json.dumps({"inputs": [t]}).encode(), {"Content-Type": "application/json"}

        gzip_bomb = zlib.compress(b"\0" * (64 << 20), 9)
        cases = [
            ("malformed JSON", "POST", None, b'{"inputs": [', {}, 400, "not valid JSON"),
            ("JSON not an object", "POST", None, b"[]", {}, 400, "must be a JSON object"),
            ("wrong datatype", "POST", None, *infer_json(datatype="INT64"), 400, "datatype INT64 is not taken"),
            ("FP32 for the image input", "POST", None, *infer_json(name="image"), 400, "datatype must be BYTES"),
            ("wrong shape", "POST", None, *infer_json(shape=[1, 28, 28, 1]), 400, "shape must be [n, 1, 28, 28]"),
            ("data shorter than its shape", "POST", None, *infer_json(data=[1.0] * 10), 400, "has 10 elements"),
            ("batch over max_batch", "POST", None, *infer_json(shape=[65] + SHAPE, data=[0.0] * 65 * 784), 400,
             "50960 elements, over the 50176 that the model's batch holds"),
            ("batch over max_batch, shape only", "POST", None, *infer_json(shape=[65] + SHAPE, data=[]), 400,
             "50960 elements, over the 50176"),
            ("empty batch", "POST", None, *infer_json(shape=[0] + SHAPE, data=[]), 400, "batch 0 is outside"),
            ("unknown input", "POST", None, *infer_json(name="pixels"), 400, "has no input \"pixels\""),
            ("unknown output", "POST", None,
             json.dumps({"inputs": [ok], "outputs": [{"name": "logits"}]}).encode(), {}, 400, "has no output \"logits\""),
            ("unknown model", "POST", "/v2/models/nope/infer", *infer_json(), 404, "unknown model \"nope\""),
            ("unknown version", "POST", f"/v2/models/{MODEL}/versions/2/infer", *infer_json(), 404, "no version \"2\""),
            ("a path as the model", "POST", "/v2/models/..%2F..%2Fetc%2Fpasswd/infer", *infer_json(), 404,
             "no such endpoint: /v2/models/../../etc/passwd/infer"),
            ("a parent folder as the model", "POST", "/v2/models/%2E%2E/infer", *infer_json(), 404,
             "unknown model \"..\""),
            ("text as an image", "POST", None, *image_request(b"hello, world"), 400,
             "input \"image\" element 0: not a supported image"),
            ("a good image and a truncated one", "POST", None, *image_request(good_png, good_png[:200]), 400,
             "element 1:"),
            ("an image claiming 100000x100000 pixels", "POST", None, *image_request(png_claiming(100000, 100000)), 400,
             "over the limit"),
            ("an empty image", "POST", None, *image_request(b""), 400, "element 0: empty file"),
            ("BYTES length past the data", "POST", None,
             json.dumps({"inputs": [{"name": "image", "datatype": "BYTES", "shape": [1],
                                     "parameters": {"binary_data_size": 8}}]}).encode() + b"\xff\xff\xff\x7fabcd",
             {"Inference-Header-Content-Length": "84"}, 400, "BYTES element says"),
            ("header length past the body", "POST", None, b"{}", {"Inference-Header-Content-Length": "99"}, 400,
             "Inference-Header-Content-Length is 99"),
            ("header length not a number", "POST", None, b"{}", {"Inference-Header-Content-Length": "-1"}, 400,
             "must be a byte count"),
            ("body over --max-request-bytes", "POST", None, b"x" * (1 << 21), {}, 413, "over the limit"),
            ("gzip body inflating over the limit", "POST", None, gzip_bomb, {"Content-Encoding": "deflate"}, 413,
             "over the limit"),
            ("unknown content encoding", "POST", None, b"{}", {"Content-Encoding": "br2"}, 415, "not taken"),
            ("GET on infer", "GET", None, None, {}, 405, "infer takes POST"),
            ("POST on health", "POST", "/v2/health/live", b"{}", {}, 405, "takes GET"),
            ("unknown endpoint", "GET", "/v2/models/fashion/stats/more", None, {}, 404, "no such endpoint"),
            ("path of 4000 bytes", "GET", "/v2/" + "a" * 4000, None, {}, 404, "path too long"),
        ]
        # The header length of the "BYTES length past the data" case is its JSON's.
        for k, c in enumerate(cases):
            if c[0] == "BYTES length past the data":
                body = c[3]
                n = len(body) - 8
                cases[k] = (c[0], c[1], c[2], body, {"Inference-Header-Content-Length": str(n)}, c[5], c[6])
        for name, method, path, body, headers, status, message in cases:
            with self.subTest(name):
                got, data = post(self.served.port, body, headers, path=path or f"/v2/models/{MODEL}/infer", method=method)
                error = json.loads(data).get("error", "")
                print(f"  {name}: {got} {error}", file=sys.stderr)
                self.assertEqual(got, status, error)
                self.assertIn(message, error)
                self.assertNotIn("\n", error)
        # Still serving, and it counted the model's failures.
        x = np.random.default_rng().standard_normal([2] + SHAPE).astype(np.float32)
        self.assertEqual(post(self.served.port, *binary_request(x))[0], 200)
        self.assertGreaterEqual(self.served.metric('infer_request_failures_total{model="fashion",reason="invalid"}'), 15)

    def test_each_bad_grpc_request_gets_its_code(self):
        """Requests built by hand (tritonclient checks some of these before sending)."""
        from tritonclient.grpc import service_pb2, service_pb2_grpc
        channel = grpc.insecure_channel(self.served.grpc_url, options=[("grpc.max_send_message_length", 1 << 24)])
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)

        def request(name="input", datatype="FP32", shape=(1, 1, 28, 28), raw=None, model=MODEL, contents=None):
            r = service_pb2.ModelInferRequest(model_name=model)
            t = r.inputs.add(name=name, datatype=datatype, shape=list(shape))
            if contents is not None:
                t.contents.fp32_contents.extend(contents)
            elif raw is not None:
                r.raw_input_contents.extend(raw)
            return r

        good = np.zeros(784, np.float32).tobytes()
        cases = [
            ("raw data of the wrong size", request(raw=[good[:100]]), "INVALID_ARGUMENT", "its binary data is 100 bytes"),
            ("two raw entries for one input", request(raw=[good, good]), "INVALID_ARGUMENT", "2 raw_input_contents for 1"),
            ("contents shorter than the shape", request(contents=[1.0, 2.0]), "INVALID_ARGUMENT",
             "fp32_contents has 2 elements"),
            ("a negative size", request(shape=(1, -1, 28, 28), raw=[good]), "INVALID_ARGUMENT", "negative size"),
            ("an unsupported datatype", request(datatype="INT8", raw=[good]), "INVALID_ARGUMENT", "not taken here"),
            ("text as an image", request(name="image", datatype="BYTES", shape=(1,), raw=[bytes_tensor(b"hello")]),
             "INVALID_ARGUMENT", "element 0: not a supported image"),
            ("unknown model", request(model="nope", raw=[good]), "NOT_FOUND", "unknown model"),
            ("a message over --max-request-bytes", request(name="image", datatype="BYTES", shape=(1,),
                                                           raw=[bytes_tensor(b"x" * (2 << 20))]),
             "RESOURCE_EXHAUSTED", ""),
        ]
        for name, req, code, message in cases:
            with self.subTest(name):
                with self.assertRaises(grpc.RpcError) as e:
                    stub.ModelInfer(req, timeout=30)
                print(f"  gRPC {name}: {e.exception.code().name} {e.exception.details()}", file=sys.stderr)
                self.assertEqual(e.exception.code().name, code)
                self.assertIn(message, e.exception.details())
        ok = stub.ModelInfer(request(raw=[good]), timeout=30)
        self.assertEqual(len(ok.raw_output_contents[0]), 40)
        channel.close()

    def read_all(self, sock):
        sock.settimeout(10)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
        return data

    def test_a_body_left_unread_is_never_taken_for_a_request(self):
        # A request answered before its body is read (here 405) must end its connection: the body's
        # bytes, a whole request of their own, would otherwise be answered as the next request.
        smuggled = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
        for path in (b"/v2", b"/v2/health/ready", b"/nowhere", f"/v2/models/{MODEL}/infer".encode()):
            with self.subTest(path.decode()):
                sock = socket.create_connection(("127.0.0.1", self.served.port), timeout=10)
                method = b"PUT" if path.endswith(b"infer") else b"POST"
                sock.sendall(method + b" " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                             str(len(smuggled)).encode() + b"\r\n\r\n" + smuggled)
                data = self.read_all(sock)
                sock.close()
                self.assertEqual(data.count(b"HTTP/1.1 "), 1, data[:400])
                self.assertIn(b"Connection: close", data)

    def test_a_declared_length_over_the_limit_is_refused_before_it_is_read(self):
        sock = socket.create_connection(("127.0.0.1", self.served.port), timeout=10)
        sock.sendall(f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {1 << 40}\r\n\r\n"
                     .encode() + b"{")
        start = time.time()
        sock.settimeout(10)
        first = sock.recv(4096)
        self.assertTrue(first.startswith(b"HTTP/1.1 413"), first[:200])
        self.assertLess(time.time() - start, 3, "the server waited for the declared terabyte before answering")
        self.assertIn(b"Connection: close", first)
        sock.close()

    def test_chunked_body_over_the_limit(self):
        sock = socket.create_connection(("127.0.0.1", self.served.port), timeout=10)
        sock.sendall(f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"x" * 65536
        try:
            for _ in range(40):  # 2.5 MiB, over the 1 MiB limit
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: it answered already
        response = sock.recv(4096).decode(errors="replace")
        sock.close()
        self.assertTrue(response.startswith("HTTP/1.1 413"), response[:200])


def read_until_closed(sock, limit_s):
    """Seconds until the server closes the connection (recv gives b"" or a reset), or None."""
    start = time.time()
    sock.settimeout(limit_s)
    try:
        while sock.recv(65536):
            pass
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass
    return time.time() - start


class SlowAndVanishingClients(unittest.TestCase):
    """Clients that stall, idle or leave mid-request cost a connection for a bounded time, and no more."""

    @classmethod
    def setUpClass(cls):
        cls.served = Served("--read-timeout", "1", "--idle-timeout", "1")

    @classmethod
    def tearDownClass(cls):
        assert cls.served.stop() == 0, cls.served.log

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.served.port), timeout=10)

    def test_a_stalled_request_line_is_dropped(self):
        s = self.connect()
        s.sendall(b"POST /v2/models/fashion/infer HTTP/1.1\r\nHost: x\r\n")
        self.assertIsNotNone(read_until_closed(s, 10), "a client stalled in its headers kept its connection")

    def test_a_stalled_body_is_dropped(self):
        s = self.connect()
        s.sendall(b"POST /v2/models/fashion/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inp")
        self.assertIsNotNone(read_until_closed(s, 10), "a client stalled in its body kept its connection")

    def test_an_idle_connection_is_closed(self):
        s = self.connect()
        s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(10)
        self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
        self.assertIsNotNone(read_until_closed(s, 10), "an idle kept-alive connection stayed open")

    def test_clients_that_leave_mid_request(self):
        x = np.random.default_rng().standard_normal([8] + SHAPE).astype(np.float32)
        body, headers = binary_request(x)
        head = (f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                f"Inference-Header-Content-Length: {headers['Inference-Header-Content-Length']}\r\n\r\n").encode()
        for k in range(40):
            s = self.connect()
            # Half the body then gone; or the whole request, gone before the answer.
            s.sendall(head + (body[: len(body) // 2] if k % 2 else body))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, not a FIN
            s.close()
        deadline = time.time() + 20
        while self.served.metric("infer_requests_in_flight") != 0:
            self.assertLess(time.time(), deadline, "requests of departed clients never finished")
            time.sleep(0.1)
        self.assertEqual(post(self.served.port, body, headers)[0], 200)


def grpc_load(url, x, threads, per_thread, deadline_s):
    """threads tritonclient gRPC clients, each sending per_thread requests until the first error:
    (successes, errors, seconds)."""
    ok, errors = [0], []
    lock = threading.Lock()
    end = time.time() + deadline_s

    def run():
        c = triton_grpc.InferenceServerClient(url)
        i = triton_grpc.InferInput("input", list(x.shape), "FP32")
        i.set_data_from_numpy(x)
        mine = 0
        for _ in range(per_thread):
            if time.time() > end:
                break
            try:
                c.infer(MODEL, [i])
                mine += 1
            except InferenceServerException as e:
                with lock:
                    errors.append(e.status())
                break
        c.close()
        with lock:
            ok[0] += mine

    start = time.time()
    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return ok[0], errors, time.time() - start


BURST, BURST_ROUNDS = 200, 5  # test_a_burst_of_connections_overflows_no_listen_queue: connections at once, times


def listen_overflows():
    """The kernel's count of connections dropped for a full listen queue (TcpExt ListenOverflows)."""
    with open("/proc/net/netstat") as f:
        lines = [line.split() for line in f if line.startswith("TcpExt:")]
    names, values = lines[0], lines[1]
    return int(values[names.index("ListenOverflows")])


def load(port, x, threads, per_thread, deadline_s):
    """threads keep-alive clients, each sending per_thread binary requests: (statuses, errors, seconds)."""
    body, headers = binary_request(x)
    statuses, errors = [], []
    lock = threading.Lock()
    end = time.time() + deadline_s

    def run():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine, errs = [], []
        for _ in range(per_thread):
            if time.time() > end:
                break
            try:
                conn.request("POST", f"/v2/models/{MODEL}/infer", body=body, headers=headers)
                r = conn.getresponse()
                r.read()
                mine.append(r.status)
            except (OSError, http.client.HTTPException) as e:
                errs.append(type(e).__name__)
                conn.close()
                if isinstance(e, ConnectionRefusedError):
                    break  # the server is gone
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        with lock:
            statuses.extend(mine)
            errors.extend(errs)

    start = time.time()
    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return statuses, errors, time.time() - start


class QueueFull(unittest.TestCase):
    def test_a_full_queue_answers_unavailable_and_503_at_once(self):
        served = Served("--max-batch", "4", "--max-queue", "4", "--max-queue-delay-us", "3000000")
        rng = np.random.default_rng()
        first = []
        t = threading.Thread(target=lambda: first.append(post(served.port, *binary_request(
            rng.standard_normal([3] + SHAPE).astype(np.float32)))[0]))
        t.start()
        served.wait_for('infer_queue_samples{model="fashion"}', 3)  # three samples wait for a fourth, up to 3 s
        four = rng.standard_normal([4] + SHAPE).astype(np.float32)
        start = time.time()
        status, body = post(served.port, *binary_request(four))
        self.assertEqual((status, json.loads(body)["error"].split(":")[1].strip()), (503, "the queue is full (4 samples, --max-queue); retry later"))
        g = triton_grpc.InferenceServerClient(served.grpc_url)
        i = triton_grpc.InferInput("input", list(four.shape), "FP32")
        i.set_data_from_numpy(four)
        with self.assertRaises(InferenceServerException) as e:
            g.infer(MODEL, [i])
        self.assertEqual(e.exception.status(), "StatusCode.UNAVAILABLE")
        self.assertLess(time.time() - start, 2.0, "the refusals waited for the queue")
        self.assertEqual(first, [], "the queued request finished before the refusals")
        t.join()
        self.assertEqual(first, [200])
        g.close()
        self.assertEqual(served.stop(), 0)


class Signals(unittest.TestCase):
    """SIGTERM drains: nothing accepted is lost; a second signal, or the drain timeout, stops at once."""

    def slow_request(self, served, result):
        x = np.random.default_rng().standard_normal([1] + SHAPE).astype(np.float32)
        try:
            result.append(post(served.port, *binary_request(x))[0])
        except OSError as e:
            result.append(type(e).__name__)

    def test_sigterm_answers_the_request_in_flight(self):
        served = Served("--max-queue-delay-us", "1500000")
        result = []
        t = threading.Thread(target=self.slow_request, args=(served, result))
        t.start()
        served.wait_for('infer_queue_samples{model="fashion"}', 1)
        self.assertEqual(served.stop(signal.SIGTERM), 0)
        t.join()
        self.assertEqual(result, [200])
        self.assertIn("stopped: 1 of 1 inference requests received were answered", served.log)

    def test_sigterm_under_load_loses_no_accepted_request(self):
        served = Served()
        x = np.random.default_rng().standard_normal([2] + SHAPE).astype(np.float32)
        out = {}
        t = threading.Thread(target=lambda: out.update(r=load(served.port, x, 6, 100000, 60)))
        u = threading.Thread(target=lambda: out.update(g=grpc_load(served.grpc_url, x, 4, 100000, 60)))
        t.start()
        u.start()
        time.sleep(1.5)
        self.assertEqual(served.stop(signal.SIGTERM), 0)
        t.join()
        u.join()
        statuses, errors, _ = out["r"]
        grpc_ok, grpc_errors, _ = out["g"]
        # Answered requests are all 200; every other attempt failed to connect or found the connection
        # closed before it was read: the server's count of answered requests is the clients' count of 200s.
        self.assertEqual(set(statuses), {200})
        line = [l for l in served.log.splitlines() if "stopped:" in l][0]
        answered, received = (int(w) for w in line.split("stopped: ")[1].split(" inference")[0].split(" of "))
        self.assertEqual(answered, received, line)
        self.assertEqual(answered, len(statuses) + grpc_ok,
                         f"{line}; HTTP client errors: {sorted(set(errors))}; gRPC: {sorted(set(grpc_errors))}")
        # gRPC refuses what arrives after the drain began (UNAVAILABLE), and cancels a call it had read
        # but not yet handed to a handler thread (CANCELLED): neither reached the model.
        self.assertTrue(set(grpc_errors) <= {"StatusCode.UNAVAILABLE", "StatusCode.CANCELLED"}, grpc_errors)
        print(f"  SIGTERM under load: {len(statuses)} HTTP and {grpc_ok} gRPC requests answered; refused after the "
              f"drain began: {len(errors)} HTTP ({sorted(set(errors))}), {len(grpc_errors)} gRPC", file=sys.stderr)

    def test_a_second_signal_stops_at_once(self):
        served = Served("--max-queue-delay-us", "5000000")
        result = []
        t = threading.Thread(target=self.slow_request, args=(served, result))
        t.start()
        served.wait_for('infer_queue_samples{model="fashion"}', 1)
        served.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        start = time.time()
        self.assertEqual(served.stop(signal.SIGINT), 128 + signal.SIGINT)
        self.assertLess(time.time() - start, 2.0)
        t.join()
        self.assertNotEqual(result, [200])

    def test_the_drain_timeout_stops_it(self):
        served = Served("--max-queue-delay-us", "5000000", "--drain-timeout", "1")
        result = []
        t = threading.Thread(target=self.slow_request, args=(served, result))
        t.start()
        served.wait_for('infer_queue_samples{model="fashion"}', 1)
        start = time.time()
        self.assertEqual(served.stop(signal.SIGTERM), 7)
        self.assertLess(time.time() - start, 3.0)
        t.join()
        self.assertIn("did not finish within 1 s", served.log)


class Load(unittest.TestCase):
    """Bounded: concurrent clients all answered; a soak of 100,000 requests with resident memory flat."""

    def test_concurrent_clients_are_all_answered(self):
        served = Served("--max-queue-delay-us", "200")
        x = np.random.default_rng().standard_normal([1] + SHAPE).astype(np.float32)
        statuses, errors, seconds = load(served.port, x, 16, 250, 120)
        self.assertEqual(served.stop(), 0)
        self.assertEqual((len(statuses), set(statuses), errors), (4000, {200}, []))
        print(f"  16 clients x 250 requests: {len(statuses) / seconds:.0f} requests/s", file=sys.stderr)

    def test_concurrent_grpc_clients_are_all_answered(self):
        served = Served("--max-queue-delay-us", "200")
        x = np.random.default_rng().standard_normal([1] + SHAPE).astype(np.float32)
        ok, errors, seconds = grpc_load(served.grpc_url, x, 8, 250, 120)
        self.assertEqual(served.stop(), 0)
        self.assertEqual((ok, errors), (2000, []))
        print(f"  8 gRPC clients x 250 requests: {ok / seconds:.0f} requests/s", file=sys.stderr)

    def test_as_many_grpc_clients_as_threads_are_all_answered(self):
        # gRPC's sync server counts its pollers against the thread quota too: a quota of exactly
        # --http-threads refused calls (RESOURCE_EXHAUSTED, "Server Threadpool Exhausted") at that concurrency.
        served = Served("--http-threads", "8")
        x = np.random.default_rng().standard_normal([1] + SHAPE).astype(np.float32)
        ok, errors, _ = grpc_load(served.grpc_url, x, 8, 150, 120)
        self.assertEqual(served.stop(), 0)
        self.assertEqual((ok, errors), (1200, []))

    def test_a_burst_of_connections_overflows_no_listen_queue(self):
        # BURST clients connect at the same moment, each asking once. A listen queue too short for
        # them (cpp-httplib's own is 5) makes the kernel drop connections it cannot queue: a client
        # then waits for its SYN's retry (1 s), and on a busy machine some were reset (CI: 2 of the
        # 4000 requests of test_concurrent_clients_are_all_answered). The kernel counts each such
        # drop (TcpExt ListenOverflows); this class runs alone (RUN_SERIAL), so the count is ours.
        served = Served()
        statuses, lock = [], threading.Lock()

        def ask():
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
            barrier.wait()  # the current round's
            try:
                conn.request("GET", "/v2/health/ready")
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
            finally:
                conn.close()
            with lock:
                statuses.append(status)

        before = listen_overflows()
        for _ in range(BURST_ROUNDS):  # one burst overflowed a queue of 5 about one time in three
            barrier = threading.Barrier(BURST)
            threads = [threading.Thread(target=ask) for _ in range(BURST)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        overflows = listen_overflows() - before
        self.assertEqual(served.stop(), 0)
        self.assertEqual(sorted(set(map(str, statuses))), ["200"], statuses)
        self.assertEqual(overflows, 0, f"the kernel dropped {overflows} of {BURST_ROUNDS} x {BURST} connections: "
                                       "listen queue full")

    def test_soak_resident_memory_stays_flat(self):
        served = Served()
        x = np.random.default_rng().standard_normal([1] + SHAPE).astype(np.float32)
        body, headers = binary_request(x)
        request = (f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                   + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() + body
        counts = [0]
        lock = threading.Lock()
        rss = {}
        total, threads = 100_000, 4
        end = time.time() + 400

        def client():
            s = socket.create_connection(("127.0.0.1", served.port), timeout=30)
            buf = b""
            while time.time() < end:
                with lock:
                    if counts[0] >= total:
                        break
                    counts[0] += 1
                    n = counts[0]
                s.sendall(request)
                while b"\r\n\r\n" not in buf:
                    buf += s.recv(65536)
                head, buf = buf.split(b"\r\n\r\n", 1)
                assert head.startswith(b"HTTP/1.1 200"), head
                length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
                while len(buf) < length:
                    buf += s.recv(65536)
                buf = buf[length:]
                if n in (10_000, total):
                    rss[n] = served.rss_kib()
            s.close()

        start = time.time()
        ts = [threading.Thread(target=client) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        seconds = time.time() - start
        self.assertEqual(served.stop(), 0)
        self.assertEqual(counts[0], total, f"only {counts[0]} requests in the time bound")
        print(f"  soak: {total} requests in {seconds:.0f} s; resident {rss[10_000]} KiB after 10,000, "
              f"{rss[total]} KiB after {total}", file=sys.stderr)
        self.assertLessEqual(rss[total], rss[10_000] * 1.10)


if __name__ == "__main__":
    INFER, SAMPLES = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
