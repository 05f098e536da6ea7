// INFER_API marks what the shared library libinfer exports: the public API and nothing else. On
// Linux the library's version script (api/exports.map) decides; this attribute keeps the same
// declarations exported when a consumer builds with -fvisibility=hidden. On Windows it is
// dllexport while building the library (INFER_BUILDING_LIBRARY) and dllimport for its users;
// INFER_STATIC (the infer command, which links the same code statically) makes it nothing.
#pragma once

#if defined(_WIN32)
#if defined(INFER_STATIC)
#define INFER_API
#elif defined(INFER_BUILDING_LIBRARY)
#define INFER_API __declspec(dllexport)
#else
#define INFER_API __declspec(dllimport)
#endif
#else
#define INFER_API __attribute__((visibility("default")))
#endif
