# Writes OUT: the system stb_image.h (IN) with the fixes stb_image releases after Debian's 2.27 made,
# (and one it has not), so that the decoder compiled in stb_impl.cpp is safe on hostile files. Each fix is applied only
# when its text is found, and the build fails if a needed fix can be neither applied nor found
# already present (a different stb version must be looked at, not silently trusted).
#
# 1. A JPEG DHT segment whose 16 code-length counts sum over 256 overflows the Huffman tables
#    (stbi__huffman::size[257], values[256]): found by tests/fuzz/fuzz_image, an out-of-bounds
#    write. stb_image 2.28 refuses it with "bad DHT header"; the same check is inserted here.
file(READ "${IN}" text)

# Inserts a fix unless `marker` (text only the fixed code has) is already there: `before` is
# replaced by `after`. Fails the build when neither the marker nor `before` is found.
function(apply_fix what marker before after)
  string(FIND "${text}" "${marker}" already)
  if(NOT already EQUAL -1)
    return()
  endif()
  string(FIND "${text}" "${before}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stb_patch.cmake: ${IN}: the ${what} code to fix was not found; check this stb version")
  endif()
  string(REPLACE "${before}" "${after}" patched "${text}")
  set(text "${patched}" PARENT_SCOPE)
endfunction()

# 1. A JPEG DHT segment whose 16 code-length counts sum over 256 overflows the Huffman tables
#    (stbi__huffman::size[257], values[256]): found by tests/fuzz/fuzz_image, an out-of-bounds
#    write. stb_image 2.28 refuses it with "bad DHT header"; the same check is inserted here.
apply_fix("JPEG DHT" "n > 256"
  "            L -= 17;\n            if (tc == 0) {"
  "            L -= 17;\n            if(n > 256) return stbi__err(\"bad DHT header\",\"Corrupt JPEG\");\n            if (tc == 0) {")

# 2. A truncated PNM (PGM/PPM) decodes into uninitialised memory: stbi__pnm_load ignores the result
#    of stbi__getn. stb_image 2.28 refuses it with "PNM file truncated"; the same check is made here.
apply_fix("PNM read" "PNM file truncated"
  "   stbi__getn(s, out, s->img_n * s->img_x * s->img_y * (ri->bits_per_channel / 8));\n"
  "   if (!stbi__getn(s, out, s->img_n * s->img_x * s->img_y * (ri->bits_per_channel / 8))) {\n      STBI_FREE(out);\n      return stbi__errpuc(\"bad PNM\", \"PNM file truncated\");\n   }\n")

# 3. A PNM header number over 2^31 overflows int in stbi__pnm_getinteger (undefined behaviour), found
#    by tests/fuzz/fuzz_image. stb_image 2.28 stops with "integer parse overflow"; the same check here.
set(pnm_digit "      value = value*10 + (*c - '0');\n      *c = (char) stbi__get8(s);\n")
apply_fix("PNM integer parser" "integer parse overflow" "${pnm_digit}"
  "${pnm_digit}      if((value > 214748364) || (value == 214748364 && *c > '7'))\n          return stbi__err(\"integer parse overflow\", \"Parsing an integer in the PPM header overflowed a 32-bit int\");\n")

# 4. A PNG whose first IDAT chunk is empty calls memcpy(NULL, ..., 0) in stbi__getn (the IDAT
#    buffer is not allocated yet): undefined behaviour (memcpy's arguments are declared nonnull),
#    found by tests/fuzz/fuzz_image under UBSan. An empty read copies nothing and succeeds, as
#    before; it now returns before memcpy.
apply_fix("empty stbi__getn" "empty read: no memcpy"
  "static int stbi__getn(stbi__context *s, stbi_uc *buffer, int n)\n{\n"
  "static int stbi__getn(stbi__context *s, stbi_uc *buffer, int n)\n{\n   if (n == 0) return 1;  /* empty read: no memcpy (its buffer may still be NULL) */\n")

file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
