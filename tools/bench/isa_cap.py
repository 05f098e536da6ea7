"""Runs the calling script again under build/bin/libinfer_isa_cap.so (bench/isa_cap.c) as LD_AUDIT,
which hides AVX-512 and AMX from CPUID in that process and every program it starts. Shared by
tools/bench/bench_peers.py and tools/bench/profile_peers.py (--cpu-isa avx2)."""

import os
import subprocess
import sys


def cap_isa_or_reexec(build, prog):
    """Makes sure this process runs with AVX-512 hidden from CPUID: if libinfer_isa_cap is not yet
    this process's LD_AUDIT, runs this script again with it (so it is in place before Python loads
    any library) and exits with that run's status."""
    lib = os.path.join(build, "bin", "libinfer_isa_cap.so")
    if os.environ.get("LD_AUDIT") == lib:
        return
    if not os.path.exists(lib):
        sys.exit(f"{prog}: --cpu-isa avx2 needs {lib} (built by tools/dev/build.sh on x86-64 Linux)")
    env = dict(os.environ, LD_AUDIT=lib, INFER_ISA_CAP_REPORT="1")
    sys.exit(subprocess.run([sys.executable] + sys.argv, env=env).returncode)
