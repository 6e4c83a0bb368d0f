# enable_cxx.cmake: turns C++ on for the C++ face's test (tests/cpp) and
# example (examples/cpp_guard.cpp), included from the top-level
# CMakeLists.txt, whose file scope enable_language() needs: the library
# itself stays C only.
#
#   RLOCK_BUILD_CPP  build them (default ON when tests or examples are built
#                    and a C++ compiler is found; OFF skips them quietly)
#
# The C++ compiler follows the C one: with clang as CMAKE_C_COMPILER
# (scripts/test's sanitizer passes) and no CMAKE_CXX_COMPILER or CXX given,
# the clang++ beside it is used, so sanitizer runtimes and flags match.

if(NOT (RLOCK_BUILD_TESTS OR RLOCK_BUILD_EXAMPLES))
    return()
endif()

if(NOT CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX}
   AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
    get_filename_component(_rlock_cc_dir "${CMAKE_C_COMPILER}" DIRECTORY)
    get_filename_component(_rlock_cc_name "${CMAKE_C_COMPILER}" NAME)
    string(REPLACE "clang" "clang++" _rlock_cxx_name "${_rlock_cc_name}")
    find_program(_rlock_clangxx NAMES "${_rlock_cxx_name}" clang++
                 HINTS "${_rlock_cc_dir}" NO_CACHE)
    if(_rlock_clangxx)
        set(CMAKE_CXX_COMPILER "${_rlock_clangxx}" CACHE FILEPATH
            "C++ compiler (follows a clang CMAKE_C_COMPILER)")
    endif()
endif()

include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
    set(_rlock_cpp_default ON)
else()
    set(_rlock_cpp_default OFF)
endif()
option(RLOCK_BUILD_CPP
       "Build the C++ (rlock.hpp) test and example (needs a C++17 compiler)"
       ${_rlock_cpp_default})
if(RLOCK_BUILD_CPP)
    if(NOT CMAKE_CXX_COMPILER)
        message(FATAL_ERROR "RLOCK_BUILD_CPP is ON but no C++ compiler "
                            "was found (set CMAKE_CXX_COMPILER)")
    endif()
    enable_language(CXX)
endif()
