# man_page.cmake: turns one scdoc source into a man page (cmake -P, run by
# the rlock_man target of cmake/man.cmake).
#
#   -DRLOCK_SCDOC=...    the scdoc program
#   -DRLOCK_INPUT=...    docs/man/<page>.scd
#   -DRLOCK_OUTPUT=...   the man page to write
#   -DRLOCK_VERSION=...  replaces @RLOCK_VERSION@ in the source (the footer)
#
# scdoc reads standard input and writes standard output, which a custom
# command cannot redirect portably; execute_process() can.

cmake_minimum_required(VERSION 3.25) # a script has no project's policies

file(READ "${RLOCK_INPUT}" text)
string(REPLACE "@RLOCK_VERSION@" "${RLOCK_VERSION}" text "${text}")
get_filename_component(dir "${RLOCK_OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
file(WRITE "${RLOCK_OUTPUT}.scd" "${text}")
execute_process(
    COMMAND "${RLOCK_SCDOC}"
    INPUT_FILE "${RLOCK_OUTPUT}.scd"
    OUTPUT_FILE "${RLOCK_OUTPUT}.tmp"
    ERROR_VARIABLE err
    RESULT_VARIABLE rc)
file(REMOVE "${RLOCK_OUTPUT}.scd")
if(NOT rc EQUAL 0)
    file(REMOVE "${RLOCK_OUTPUT}.tmp")
    message(FATAL_ERROR "scdoc failed on ${RLOCK_INPUT}: ${err}")
endif()
file(RENAME "${RLOCK_OUTPUT}.tmp" "${RLOCK_OUTPUT}")
