#!/usr/bin/env python3
"""Compile the backend's kernels to PTX with NVRTC, at build time, for the CUDA 12 backend.

    ptxgen.py --nvrtc LIBNVRTC --source FILE.cu --include DIR ... --arch compute_50 \
              --ptx-version 8.0 --kernel NAME ... --output FILE.cpp

NVRTC (libnvrtc.so.12 from the CUDA 12.0 wheel, tools/dev/fetch-cuda12.sh) writes PTX of its own
toolkit's ISA: 12.0 writes ISA 8.0, which every CUDA 12 driver (>= 525.60.13) can JIT-compile, for
the virtual architecture --arch, which every GPU of that compute capability or newer runs. This
script refuses any other result: the PTX must declare `.version` = --ptx-version and
`.target sm_NN` of --arch, so a newer NVRTC picked up by mistake fails the build instead of
making PTX that older drivers reject (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).

The output is a C++ file defining, in namespace infer::cudnn (backends/cudnn/kernels_ptx.h):
  kKernelsPtx       the PTX text
  kKernelNames      for each --kernel (a C++ name, like infer::cudnn::kernels::top_k_kernel), its
                    name in the PTX (NVRTC's lowered, mangled name), for cuModuleGetFunction
It is written to a temporary file and renamed, so a failed run leaves no half-written output.
Exit status: 0 done, 1 NVRTC failed (its log on stderr), 2 bad arguments or an unexpected PTX.
"""
import argparse, ctypes, os, re, sys, tempfile


def nvrtc_call(lib, name, *args):
    status = getattr(lib, name)(*args)
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise RuntimeError(f"{name}: {lib.nvrtcGetErrorString(status).decode()}")


def compile_ptx(lib, source_path, options, kernels):
    program = ctypes.c_void_p()
    with open(source_path, "rb") as f:
        source = f.read()
    nvrtc_call(lib, "nvrtcCreateProgram", ctypes.byref(program), source, os.path.basename(source_path).encode(),
               0, None, None)
    try:
        expressions = [("&" + k).encode() for k in kernels]
        for e in expressions:
            nvrtc_call(lib, "nvrtcAddNameExpression", program, ctypes.c_char_p(e))
        argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        status = lib.nvrtcCompileProgram(program, len(options), argv)
        size = ctypes.c_size_t()
        nvrtc_call(lib, "nvrtcGetProgramLogSize", program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc_call(lib, "nvrtcGetProgramLog", program, log)
        if status != 0:
            sys.stderr.write(log.value.decode(errors="replace"))
            raise RuntimeError(f"nvrtcCompileProgram of {source_path} failed (status {status})")
        nvrtc_call(lib, "nvrtcGetPTXSize", program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        nvrtc_call(lib, "nvrtcGetPTX", program, ptx)
        lowered = []
        for e in expressions:
            name = ctypes.c_char_p()
            nvrtc_call(lib, "nvrtcGetLoweredName", program, ctypes.c_char_p(e), ctypes.byref(name))
            lowered.append(name.value.decode())
        return ptx.value.decode(), lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvrtc", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--arch", required=True, help="a virtual architecture, compute_NN")
    ap.add_argument("--ptx-version", required=True, help="the PTX ISA the output must declare, like 8.0")
    ap.add_argument("--kernel", action="append", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    m = re.fullmatch(r"compute_(\d+)", a.arch)
    if not m:
        sys.exit(f"ptxgen: --arch {a.arch}: expected compute_NN")
    try:
        lib = ctypes.CDLL(a.nvrtc)
        major, minor = ctypes.c_int(), ctypes.c_int()
        nvrtc_call(lib, "nvrtcVersion", ctypes.byref(major), ctypes.byref(minor))
        options = [f"--gpu-architecture={a.arch}", "-std=c++17", "-default-device"] + [f"-I{d}" for d in a.include]
        ptx, lowered = compile_ptx(lib, a.source, options, a.kernel)
    except (OSError, RuntimeError) as e:
        print(f"ptxgen: {e}", file=sys.stderr)
        return 1
    version = re.search(r"^\.version\s+(\S+)", ptx, re.M)
    target = re.search(r"^\.target\s+(\S+)", ptx, re.M)
    if not version or version.group(1) != a.ptx_version or not target or target.group(1) != f"sm_{m.group(1)}":
        print(f"ptxgen: NVRTC {major.value}.{minor.value} ({a.nvrtc}) wrote PTX .version "
              f"{version.group(1) if version else '?'} .target {target.group(1) if target else '?'}; this build needs "
              f".version {a.ptx_version} .target sm_{m.group(1)} (tools/dev/fetch-cuda12.sh fetches NVRTC 12.0)",
              file=sys.stderr)
        return 2
    if ")infer_ptx\"" in ptx:
        print("ptxgen: the PTX contains the raw string's delimiter", file=sys.stderr)
        return 2
    names = "\n".join(f'    {{"{k}", "{n}"}},' for k, n in zip(a.kernel, lowered))
    text = f"""// Generated at build time by cmake/ptxgen.py from {os.path.basename(a.source)} with NVRTC \
{major.value}.{minor.value}: PTX ISA {a.ptx_version} for {a.arch}. Do not edit.
#include "backends/cudnn/kernels_ptx.h"

namespace infer::cudnn {{

const char kKernelsPtx[] = R"infer_ptx({ptx})infer_ptx";

const KernelName kKernelNames[kKernelCount] = {{
{names}
}};

}}  // namespace infer::cudnn
"""
    out_dir = os.path.dirname(os.path.abspath(a.output))
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".ptxgen-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, a.output)
    except BaseException:
        os.unlink(tmp)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
