"""The peer of `infer serve` in bench/serve/bench_serve.py: what a user writes instead, KServe's
Python model server (kserve.ModelServer) with ONNX Runtime inside, serving an ONNX model on the
same open inference protocol (v2, HTTP and gRPC).

    kserve_onnx.py --model_name NAME --onnx PATH --http_port P --grpc_port Q [--threads N]

Input: the model's one FP32 input, named "input" as ours; output "scores", as ours.

perf_analyzer reads the model's configuration (Triton's extension), which KServe does not serve:
a shim answers that one query, over HTTP (a route on KServe's FastAPI app) and gRPC (a handler
beside KServe's servicer), with what Triton would say of the model. Inference is KServe's own."""
import argparse

import grpc
import kserve
import kserve.model_server
import kserve.protocol.grpc.server as kserve_grpc_server
import numpy as np
import onnxruntime as ort
from kserve import InferOutput, InferRequest, InferResponse


# Protobuf's wire format, for the one message of the shim (Triton's ModelConfigResponse): KServe's own
# classes of the protocol occupy the package "inference" in protobuf's descriptor pool, so Triton's
# generated classes cannot be loaded beside them.
def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    return key + (varint(payload) if wire == 0 else varint(len(payload)) + payload)


TYPE_FP32 = 11  # Triton's DataType enum


def tensor_config(t, dims_field):
    return (field(1, 2, t["name"].encode()) + field(2, 0, TYPE_FP32) +
            field(dims_field, 2, b"".join(varint(d) for d in t["dims"])))


def model_config_response(c):
    config = (field(1, 2, c["name"].encode()) + field(2, 2, c["platform"].encode()) + field(4, 0, c["max_batch_size"]) +
              field(5, 2, tensor_config(c["input"][0], 4)) + field(6, 2, tensor_config(c["output"][0], 3)))
    return field(1, 2, config)


class OnnxModel(kserve.Model):
    def __init__(self, name, path, threads):
        super().__init__(name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.input_dims = [int(d) for d in self.session.get_inputs()[0].shape[1:]]
        self.output_dims = [int(d) for d in self.session.get_outputs()[0].shape[1:]]
        self.ready = True

    def get_input_types(self):
        return [{"name": "input", "datatype": "FP32", "shape": [-1] + self.input_dims}]

    def get_output_types(self):
        return [{"name": "scores", "datatype": "FP32", "shape": [-1] + self.output_dims}]

    def triton_config(self):
        return {"name": self.name, "platform": "onnxruntime_onnx", "max_batch_size": 64,
                "input": [{"name": "input", "data_type": "TYPE_FP32", "dims": self.input_dims}],
                "output": [{"name": "scores", "data_type": "TYPE_FP32", "dims": self.output_dims}]}

    def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        x = payload.inputs[0].as_numpy().astype(np.float32, copy=False)
        y = self.session.run(None, {self.input_name: x})[0]
        out = InferOutput(name="scores", shape=list(y.shape), datatype="FP32")
        out.set_data_from_numpy(y, binary_data=True)
        return InferResponse(model_name=self.name, infer_outputs=[out], response_id=payload.id)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--model_name", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--http_port", type=int, required=True)
    p.add_argument("--grpc_port", type=int, required=True)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    model = OnnxModel(a.model_name, a.onnx, a.threads)
    config = model.triton_config()

    @kserve.model_server.app.get(f"/v2/models/{a.model_name}/config")
    def http_config():
        return config

    config_bytes = model_config_response(config)

    async def grpc_config(request, context):
        return config_bytes

    add_servicer = kserve_grpc_server.grpc_predict_v2_pb2_grpc.add_GRPCInferenceServiceServicer_to_server

    def add_with_config(servicer, server):
        add_servicer(servicer, server)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("inference.GRPCInferenceService", {
            "ModelConfig": grpc.unary_unary_rpc_method_handler(
                grpc_config, request_deserializer=lambda b: b, response_serializer=lambda b: b)}),))

    kserve_grpc_server.grpc_predict_v2_pb2_grpc.add_GRPCInferenceServiceServicer_to_server = add_with_config
    kserve.ModelServer(http_port=a.http_port, grpc_port=a.grpc_port, workers=1).start([model])
