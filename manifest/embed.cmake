# cmake -DIN=facts.toml -DOUT=facts_data.h -P embed.cmake: the file as a C++ raw string literal.
file(READ ${IN} _text)
string(FIND "${_text}" ")facts\"" _clash)
if(NOT _clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )facts\"")
endif()
file(WRITE ${OUT} "// Generated from manifest/facts.toml by manifest/embed.cmake. Do not edit.\n#pragma once\nnamespace infer::manifest {\ninline constexpr const char kFactsToml[] = R\"facts(${_text})facts\";\n}\n")
