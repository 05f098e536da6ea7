// The record format between a probe child and its parent (platform/isolated.h), the same on every
// system: one "key<TAB>value" line per record, with backslash, newline and tab escaped. Internal
// to platform/.
#pragma once

#include <string>
#include <vector>

#include "platform/isolated.h"

namespace infer::detail {

std::string escape(const std::string& s);
std::string unescape(const std::string& s);
// Fills r.step, r.fault_file and r.records from what the child wrote.
void parse_records(const std::string& text, IsolatedResult& r);
// The printable lines of what the child printed; at most 20 of at most 300 characters.
std::vector<std::string> output_lines(const std::string& text);

// "crashed with SIGBUS (Bus error)", "crashed with an access violation (0xC0000005)": the
// system's words for IsolatedResult::signal (isolated.cpp, isolated_windows.cpp).
std::string crash_text(int signal);

}  // namespace infer::detail
