// Whether this test is built with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__, clang has
// __has_feature). Its allocator replaces glibc's (mallinfo2 sees nothing) and it reserves terabytes
// of address space for its shadow memory (ulimit -v cannot be used): the few tests that measure
// memory use its interface instead.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define INFER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFER_TEST_ASAN 1
#endif
#endif
#ifndef INFER_TEST_ASAN
#define INFER_TEST_ASAN 0
#endif

#if INFER_TEST_ASAN
#include <sanitizer/allocator_interface.h>
#endif
