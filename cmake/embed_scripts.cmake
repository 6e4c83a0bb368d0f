# embed_scripts.cmake: turn scripts/*.lua into ${RLOCK_OUTPUT} (rlock_scripts.c).
#
# Run in script mode by the build (see CMakeLists.txt):
#   cmake -DRLOCK_SOURCE_DIR=<repo> -DRLOCK_LUA_SCRIPTS="scripts/a.lua|..."
#         -DRLOCK_OUTPUT=<build>/rlock_scripts.c -P embed_scripts.cmake
#
# For each scripts/NAME.lua it emits a byte array holding the exact file bytes
# (no NUL terminator: use .len), and an rlock__script record carrying the
# SHA-1 of those same bytes, which is what Redis reports for SCRIPT LOAD and
# expects in EVALSHA.  Byte arrays sidestep C's string-literal length limits.
#
# The result is written to a temporary file and copied over the output only
# when it changed, so an unchanged script does not trigger a rebuild.

cmake_minimum_required(VERSION 3.25)

foreach(_var RLOCK_SOURCE_DIR RLOCK_LUA_SCRIPTS RLOCK_OUTPUT)
    if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
        message(FATAL_ERROR "embed_scripts.cmake: ${_var} is not set")
    endif()
endforeach()

string(REPLACE "|" ";" _scripts "${RLOCK_LUA_SCRIPTS}")

set(_out
"// rlock_scripts.c: generated from scripts/*.lua by cmake/embed_scripts.cmake,
// do not edit.  Edit the .lua files instead; the build regenerates this file.

#include \"proto/scripts.h\"
")

set(_seen "")
foreach(_rel IN LISTS _scripts)
    set(_path "${RLOCK_SOURCE_DIR}/${_rel}")
    if(NOT EXISTS "${_path}")
        message(FATAL_ERROR "embed_scripts.cmake: ${_path} does not exist")
    endif()

    get_filename_component(_name "${_rel}" NAME_WE)
    if(NOT _name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
        message(FATAL_ERROR
            "embed_scripts.cmake: '${_rel}' does not give a C identifier")
    endif()
    if(_name IN_LIST _seen)
        message(FATAL_ERROR "embed_scripts.cmake: duplicate script '${_name}'")
    endif()
    list(APPEND _seen "${_name}")

    file(READ "${_path}" _hex HEX)
    if(_hex STREQUAL "")
        message(FATAL_ERROR "embed_scripts.cmake: ${_rel} is empty")
    endif()
    file(SHA1 "${_path}" _sha1)
    string(LENGTH "${_hex}" _hexlen)
    math(EXPR _len "${_hexlen} / 2")

    # "2d2d20..." -> "0x2d,0x2d,0x20,..." with 12 bytes per line.
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
    # (CMake regexes have no {n} quantifier, so spell the 12 bytes out.)
    string(REPEAT "0x[0-9a-f][0-9a-f]," 12 _line_re)
    string(REGEX REPLACE "(${_line_re})" "\\1\n    " _bytes "${_bytes}")
    string(REGEX REPLACE "[ \n]+$" "" _bytes "${_bytes}")

    string(APPEND _out "
/* ${_rel}: ${_len} bytes */
static const unsigned char rlock__script_${_name}_body[] = {
    ${_bytes}
};
const rlock__script rlock__script_${_name} = {
    \"${_name}\", rlock__script_${_name}_body,
    sizeof(rlock__script_${_name}_body),
    \"${_sha1}\"};
")
endforeach()

set(_tmp "${RLOCK_OUTPUT}.tmp")
file(WRITE "${_tmp}" "${_out}")
execute_process(
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${_tmp}" "${RLOCK_OUTPUT}"
    RESULT_VARIABLE _rc)
file(REMOVE "${_tmp}")
if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "embed_scripts.cmake: cannot write ${RLOCK_OUTPUT}")
endif()
