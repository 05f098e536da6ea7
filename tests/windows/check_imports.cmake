# Fails unless every .exe in DIR imports only DLLs that are part of Windows itself.
#   cmake -DOBJDUMP=x86_64-w64-mingw32-objdump -DDIR=build-windows/bin -P check_imports.cmake
# A mingw build that links its runtime dynamically imports libstdc++-6.dll, libgcc_s_seh-1.dll or
# libwinpthread-1.dll; a dependency linked as a DLL imports zlib1.dll and the like. Wine ships some
# of these in its own System32, so a test passes here and the program fails to start on Windows.
# The allowed names: system DLLs present on every supported Windows (10 and later) and the API sets
# that the Universal CRT forwards to (api-ms-win-*).
cmake_minimum_required(VERSION 3.22)   # IN_LIST
set(_allowed kernel32 advapi32 bcrypt msvcrt ucrtbase ntdll user32 shell32 ole32 oleaut32 version ws2_32 shlwapi)
file(GLOB _binaries ${DIR}/*.exe)
if(NOT _binaries)
  message(FATAL_ERROR "no .exe in ${DIR}")
endif()
set(_bad "")
set(_count 0)
foreach(_file IN LISTS _binaries)
  execute_process(COMMAND ${OBJDUMP} -p ${_file} OUTPUT_VARIABLE _dump RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} -p ${_file} failed")
  endif()
  string(REGEX MATCHALL "DLL Name: [^\n]+" _imports "${_dump}")
  get_filename_component(_name ${_file} NAME)
  set(_names "")
  foreach(_line IN LISTS _imports)
    string(REGEX REPLACE "DLL Name: " "" _dll "${_line}")
    string(STRIP "${_dll}" _dll)
    string(TOLOWER "${_dll}" _lower)
    string(REGEX REPLACE "\\.dll$" "" _base "${_lower}")
    list(APPEND _names ${_dll})
    if(NOT _base IN_LIST _allowed AND NOT _base MATCHES "^api-ms-win-")
      string(APPEND _bad "  ${_name} imports ${_dll}\n")
    endif()
  endforeach()
  math(EXPR _count "${_count} + 1")
  message(STATUS "${_name}: ${_names}")
endforeach()
if(_bad)
  message(FATAL_ERROR "DLLs that are not part of Windows:\n${_bad}Link them statically (cmake/mingw-w64.cmake).")
endif()
message(STATUS "${_count} binaries import only Windows system DLLs")
