// libinfer_isa_cap.so: makes an AVX-512 machine look like an AVX2-only one to every library in a
// process, so that ours and the peers (ONNX Runtime's MLAS, PyTorch's cpuinfo, oneDNN) pick their
// AVX2 kernels in the same run. A benchmark tool, never installed: LD_PRELOAD it
// (tools/bench/bench.sh --cpu-isa avx2 does).
//
// How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID 0; the CPU flag "cpuid_fault") makes each
// CPUID instruction raise SIGSEGV (si_code SI_KERNEL). The handler runs the real CPUID with
// faulting briefly off, clears the AVX-512 and AMX feature bits of leaf 7 (Intel SDM vol. 2A,
// CPUID, table 3-8; AMD APM vol. 3, appendix E), and resumes after the instruction. The setting
// is per thread, kept by threads and forked children and reset by execve (which is why this is a
// preloaded library: it turns itself on again in every new program). Libraries decide their ISA
// from CPUID, so this caps them all; glibc's own string functions choose theirs before any
// constructor runs and keep AVX-512 (a small, equal cost for every program measured).
//
// Not capped: code that asks the OS instead of CPUID (/proc/cpuinfo, getauxval). XCR0 (xgetbv)
// still shows the AVX-512 state, which the libraries read only after a CPUID feature bit.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_SET_CPUID
#define ARCH_SET_CPUID 0x1012
#endif

// Leaf 7 subleaf 0. EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31.
static const uint32_t kLeaf7Ebx =
    (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31);
// ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14.
static const uint32_t kLeaf7Ecx = (1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14);
// EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, AVX512-FP16 23, AMX-TILE 24, AMX-INT8 25.
static const uint32_t kLeaf7Edx = (1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25);
// Leaf 7 subleaf 1. EAX: AVX512-BF16 5 (AVX-VNNI, bit 4, is an AVX2-class feature and stays).
static const uint32_t kLeaf7Sub1Eax = 1u << 5;

static volatile sig_atomic_t g_queries;         // CPUID instructions trapped
static volatile sig_atomic_t g_hidden_queries;  // of them, leaf 7 answers with a bit cleared

static long set_cpuid_enabled(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void on_sigsegv(int sig, siginfo_t* info, void* context) {
  ucontext_t* uc = (ucontext_t*)context;
  greg_t* r = uc->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  // A CPUID fault is a general-protection fault (SI_KERNEL) on the two bytes 0F A2. Anything else
  // is a real crash: restore the default action and return, so the instruction faults again.
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    signal(sig, SIG_DFL);
    return;
  }
  const uint32_t leaf = (uint32_t)r[REG_RAX], subleaf = (uint32_t)r[REG_RCX];
  uint32_t a, b, c, d;
  set_cpuid_enabled(1);
  __cpuid_count(leaf, subleaf, a, b, c, d);
  set_cpuid_enabled(0);
  ++g_queries;
  if (leaf == 7 && subleaf == 0 && ((b & kLeaf7Ebx) || (c & kLeaf7Ecx) || (d & kLeaf7Edx))) {
    b &= ~kLeaf7Ebx;
    c &= ~kLeaf7Ecx;
    d &= ~kLeaf7Edx;
    ++g_hidden_queries;
  } else if (leaf == 7 && subleaf == 1 && (a & kLeaf7Sub1Eax)) {
    a &= ~kLeaf7Sub1Eax;
    ++g_hidden_queries;
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

// For the benchmark's report (ctypes, or dlsym on the preloaded library): how many CPUID
// instructions were trapped, and how many leaf-7 answers had AVX-512 or AMX bits removed.
int infer_isa_cap_queries(void) { return g_queries; }
int infer_isa_cap_hidden_queries(void) { return g_hidden_queries; }

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsegv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) != 0 || set_cpuid_enabled(0) != 0) {
    // No CPUID faulting (an older CPU, or a hypervisor without it): running uncapped would make
    // a wrong comparison look right, so stop here.
    static const char msg[] =
        "libinfer_isa_cap: this CPU or kernel has no CPUID faulting (arch_prctl "
        "ARCH_SET_CPUID); cannot hide AVX-512\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(97);
  }
}

// Loaded with LD_AUDIT, the dynamic loader calls this before it loads any other library of the
// program, so even libraries that read CPUID in their static constructors (oneDNN, OpenBLAS) see
// the capped answers. LD_PRELOAD would be too late for them: preloaded constructors run last.
unsigned int la_version(unsigned int version) {
  install();
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

// INFER_ISA_CAP_REPORT=1: one line on stderr at exit, to show that the program asked CPUID and
// was answered without AVX-512.
__attribute__((destructor)) static void report(void) {
  const char* want = getenv("INFER_ISA_CAP_REPORT");
  if (want == NULL || strcmp(want, "1") != 0) return;
  fprintf(stderr, "libinfer_isa_cap: %d CPUID instructions trapped, %d leaf-7 answers without AVX-512\n",
          (int)g_queries, (int)g_hidden_queries);
}
