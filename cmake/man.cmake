# man.cmake: the man pages, built from docs/man/*.scd with scdoc(1) and
# installed by "cmake --install" (included from the top-level CMakeLists.txt).
#
#   rlock.1                   the rlock tool (install component "tool")
#   rlock.3                   the library overview (component "dev")
#   <group>.3                 one page per family of functions (component
#                             "dev"); every other function the page's NAME
#                             section lists gets a one-line ".so" page that
#                             shows the group, so "man rlock_trylock" works
#
# The NAME section of each source is the only list of what it documents:
# the ".so" pages are made from it here, and tests/man/check_man.sh holds it
# to src/rlock.exports and each SYNOPSIS to include/rlock.h.
#
# Target rlock_man (in ALL) writes the pages into ${PROJECT_BINARY_DIR}/man
# (man1/, man3/: usable as MANPATH). Without scdoc, or with RLOCK_BUILD_MAN
# OFF, no page is built or installed. Sets RLOCK_MAN_BUILT for the tests.

option(RLOCK_BUILD_MAN "Build and install the man pages (needs scdoc)" ON)

set(RLOCK_MAN_SOURCE_DIR "${PROJECT_SOURCE_DIR}/docs/man")
set(RLOCK_MAN_DIR "${PROJECT_BINARY_DIR}/man")

# The pages, as <name>.<section>; each has the source docs/man/<page>.scd.
set(RLOCK_MAN_PAGES
    rlock.1
    rlock.3
    rlock_client_connect.3
    rlock_config_new.3
    rlock_config_set_server.3
    rlock_config_set_watchdog_timeout.3
    rlock_config_set_tls_ca_file.3
    rlock_config_set_log.3
    rlock_get.3
    rlock_lock.3
    rlock_is_locked.3
    rlock_on_lost.3
    rlock_fair_get.3
    rlock_rw_get.3
    rlock_fenced_get.3
    rlock_multi_new.3
    rlock_nonreentrant_get.3
    rlock_latch_get.3
    rlock_lock_async.3
    rlock_client_stats.3
    rlock_strerror.3
    rlock.hpp.3
    rlock_semaphore_get.3
    rlock_permit_semaphore_get.3
)

set(RLOCK_MAN_BUILT OFF)
if(NOT RLOCK_BUILD_MAN)
    return()
endif()
find_program(RLOCK_SCDOC scdoc)
if(NOT RLOCK_SCDOC)
    message(STATUS "rlock: scdoc not found: no man pages are built or "
                   "installed (install the scdoc package)")
    return()
endif()

# rlock_man_names(<source> <out-var>): the names in the NAME section of an
# scdoc source ("# NAME", then "a, b, c - summary"), as a list.
function(rlock_man_names source out)
    file(STRINGS "${source}" _lines)
    set(_in_name OFF)
    set(_names "")
    foreach(_line IN LISTS _lines)
        if(_line MATCHES "^# ")
            if(_line STREQUAL "# NAME")
                set(_in_name ON)
            else()
                set(_in_name OFF)
            endif()
        elseif(_in_name AND _line MATCHES "^(.+) - ")
            string(REPLACE "," ";" _found "${CMAKE_MATCH_1}")
            foreach(_n IN LISTS _found)
                string(STRIP "${_n}" _n)
                list(APPEND _names "${_n}")
            endforeach()
            break()
        endif()
    endforeach()
    if(NOT _names)
        message(FATAL_ERROR "${source}: no \"name, ... - summary\" line "
                            "under \"# NAME\"")
    endif()
    set(${out} "${_names}" PARENT_SCOPE)
endfunction()

set(_rlock_man_outputs "")
set(_rlock_man3_files "")
set(_rlock_man1_files "")
foreach(_page IN LISTS RLOCK_MAN_PAGES)
    string(REGEX REPLACE "^(.*)\\.([0-9])$" "\\1;\\2" _parts "${_page}")
    list(GET _parts 0 _base)
    list(GET _parts 1 _section)
    set(_source "${RLOCK_MAN_SOURCE_DIR}/${_page}.scd")
    set(_output "${RLOCK_MAN_DIR}/man${_section}/${_page}")
    add_custom_command(
        OUTPUT "${_output}"
        COMMAND "${CMAKE_COMMAND}"
                "-DRLOCK_SCDOC=${RLOCK_SCDOC}"
                "-DRLOCK_INPUT=${_source}"
                "-DRLOCK_OUTPUT=${_output}"
                "-DRLOCK_VERSION=${PROJECT_VERSION}"
                -P "${PROJECT_SOURCE_DIR}/cmake/man_page.cmake"
        DEPENDS "${_source}" "${PROJECT_SOURCE_DIR}/cmake/man_page.cmake"
        COMMENT "Generating man page ${_page}"
        VERBATIM
    )
    list(APPEND _rlock_man_outputs "${_output}")
    list(APPEND _rlock_man${_section}_files "${_output}")

    # The other names of a grouped page: ".so" pages, written now (the
    # source's edits re-run the configure step).
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_source}")
    rlock_man_names("${_source}" _names)
    foreach(_name IN LISTS _names)
        if(_name STREQUAL _base)
            continue()
        endif()
        set(_alias "${RLOCK_MAN_DIR}/man${_section}/${_name}.${_section}")
        set(_text ".so man${_section}/${_page}\n")
        if(EXISTS "${_alias}")
            file(READ "${_alias}" _old)
        else()
            set(_old "")
        endif()
        if(NOT _old STREQUAL _text)
            file(WRITE "${_alias}" "${_text}")
        endif()
        list(APPEND _rlock_man${_section}_files "${_alias}")
    endforeach()
endforeach()

add_custom_target(rlock_man ALL DEPENDS ${_rlock_man_outputs})
set(RLOCK_MAN_BUILT ON)

install(FILES ${_rlock_man3_files}
        DESTINATION "${CMAKE_INSTALL_MANDIR}/man3"
        COMPONENT dev)
if(RLOCK_BUILD_CLI)
    install(FILES ${_rlock_man1_files}
            DESTINATION "${CMAKE_INSTALL_MANDIR}/man1"
            COMPONENT tool)
endif()
