# cmake/packaging.cmake: Debian packages of rlock with CPack, one per install
# component (see the install() calls in CMakeLists.txt and src/cli/):
#
#   component  package            contents
#   runtime    librlock<SOVERSION> librlock.so.<SOVERSION>*
#   dev        librlock-dev        headers, librlock.so, rlock.pc, CMake
#                                  config files, the API's man pages
#   tool       rlock               bin/rlock and its man page
#
# The runtime package is named after the library's SONAME, as Debian names
# its library packages (librlock.so.1 -> librlock1), so a new major version
# installs beside the old one. Its name follows the SOVERSION property of
# the rlock target, never a number written here.
#
# Dependencies: dpkg-shlibdeps reads the ELF files of runtime and tool
# (libc6, libhiredis0.14, libev4, libjansson4, libssl3 on Debian 12);
# librlock-dev depends on the exact runtime version and on the -dev
# packages whose .pc files rlock.pc's Requires.private names. The tool links
# the library's objects statically (src/cli/CMakeLists.txt), so it depends
# on those libraries rather than on librlock<SOVERSION>.
#
# Build them with scripts/package (docs/packages.md), which configures with
# CMAKE_INSTALL_PREFIX=/usr; by hand: "cmake --build <dir> --target package".
# Included only when rlock is the top-level project, so that a project that
# add_subdirectory()s rlock keeps its own CPack settings.

if(NOT PROJECT_IS_TOP_LEVEL)
    return()
endif()

set(RLOCK_PACKAGE_MAINTAINER "rlock maintainers <rlock@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")
set(RLOCK_PACKAGE_RELEASE "1" CACHE STRING
    "Debian revision of the packages (the part after the version's '-')")

get_target_property(_rlock_type rlock TYPE)
get_target_property(_rlock_soversion rlock SOVERSION)
if(NOT _rlock_soversion)
    set(_rlock_soversion "${PROJECT_VERSION_MAJOR}")
endif()

set(CPACK_PACKAGE_NAME "rlock")
set(CPACK_PACKAGE_VENDOR "rlock")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${RLOCK_PACKAGE_MAINTAINER}")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it above each
# component's own summary line (CPACK_DEBIAN_<COMPONENT>_DESCRIPTION).
# The .pc file and the multiarch libdir are written for this prefix, so the
# packages install there too.
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_STRIP_FILES ON)

set(CPACK_GENERATOR "DEB")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING IGNORE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE "${RLOCK_PACKAGE_RELEASE}")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")

set(CPACK_COMPONENTS_ALL dev)
if(_rlock_type STREQUAL "SHARED_LIBRARY")
    list(PREPEND CPACK_COMPONENTS_ALL runtime)
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "librlock${_rlock_soversion}")
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION "libs")
    set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
        "Redisson-compatible distributed locks on Redis (library)
rlock is a C11 library of distributed reentrant locks stored in Redis
under Redisson's data layout, so C programs and Java programs using
Redisson can share locks. This package holds the shared library.")
    # A shlibs file, so that dpkg-shlibdeps finds librlock for the packages
    # of programs that link it. (CPackDeb has no per-component switch; only
    # the runtime package holds a file with a SONAME.)
    set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
    set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
    # librlock-dev: "librlock<N> (= <version>-<release>)".
    set(CPACK_COMPONENT_DEV_DEPENDS runtime)
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME "librlock-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION "libdevel")
# What "pkg-config rlock" needs: the .pc files of Requires.private.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libhiredis-dev, libjansson-dev, libssl-dev")
if(_rlock_type STREQUAL "STATIC_LIBRARY")
    # a static librlock.a also needs libev at link time
    string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libev-dev")
endif()
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "Redisson-compatible distributed locks on Redis (development files)
rlock is a C11 library of distributed reentrant locks stored in Redis
under Redisson's data layout. This package holds the header <rlock.h>,
the librlock.so link, the pkg-config file rlock.pc, the CMake package
(find_package(rlock), target rlock::rlock) and the API's man pages.")

if(TARGET rlock-cli)
    list(APPEND CPACK_COMPONENTS_ALL tool)
    set(CPACK_DEBIAN_TOOL_PACKAGE_NAME "rlock")
    set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION "utils")
    set(CPACK_DEBIAN_TOOL_DESCRIPTION
        "Redisson-compatible distributed locks on Redis (command-line tool)
The rlock tool runs a command while holding a Redisson-compatible lock,
shows who holds a lock, watches it, and force-unlocks it.")
endif()

unset(_rlock_type)
unset(_rlock_soversion)

include(CPack)
