# The Debian package of spillway, built by CPack from a configured and built tree:
#   cpack -G DEB --config <build>/CPackConfig.cmake -B <out>   ->  spillway_<version>_<arch>.deb
# tests/package/deb_test.sh builds it, installs it with dpkg and checks it (ctest package.deb).
#
# One package, named spillway, holds everything:
#   - what `cmake --install` installs (the install rules in the top-level CMakeLists.txt): the
#     spillway command in /usr/bin, the headers, the static libraries and the CMake package
#     (find_package(spillway)) under /usr/lib;
#   - what only the package installs (component "deb", below): the default config
#     /etc/spillway/spillway.yaml (a conffile) and the systemd unit
#     /lib/systemd/system/spillway.service, with the maintainer scripts in packaging/debian/.
# A separate spillway-dev would need COMPONENT on the existing install rules, which put the
# command and the library files in one (unnamed) component today.
#
# Depends: is computed by dpkg-shlibdeps (dpkg-dev) from the libraries the installed binaries
# link, with the minimum versions their symbols need; cmake/cpack_project_config.cmake stops
# cpack when it is missing instead of packing no dependencies at all.

set(SPILLWAY_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# Package-only files. EXCLUDE_FROM_ALL: a plain `cmake --install --prefix DIR` (as
# cmake/test_install.cmake does) installs no component "deb", so it never writes to /etc or /lib;
# CPACK_INSTALL_CMAKE_PROJECTS below asks for it by name. The paths are absolute because the
# package puts them outside its /usr prefix; CPack's DEB generator stages them under DESTDIR.
install(FILES ${SPILLWAY_PACKAGING_DIR}/spillway.yaml
        DESTINATION /etc/spillway
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${SPILLWAY_PACKAGING_DIR}/spillway.service
        DESTINATION /lib/systemd/system
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT deb EXCLUDE_FROM_ALL)

# uPlot (MIT) is compiled into the binary's pages: its licence ships with the package.
install(FILES ${PROJECT_SOURCE_DIR}/third_party/uplot/node_modules/uplot/LICENSE
        DESTINATION /usr/share/doc/spillway RENAME uPlot.LICENSE
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT deb EXCLUDE_FROM_ALL)

# The licence (Apache-2.0) in Debian's machine-readable copyright format, and the third-party
# notices (what is compiled in or linked, with its licence).
install(FILES ${SPILLWAY_PACKAGING_DIR}/debian/copyright ${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES
        DESTINATION /usr/share/doc/spillway
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT deb EXCLUDE_FROM_ALL)

# The documentation: the README and docs/ (with its pictures), as in the repository.
install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION /usr/share/doc/spillway
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT deb EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION /usr/share/doc/spillway/docs
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                              WORLD_READ WORLD_EXECUTE
        COMPONENT deb EXCLUDE_FROM_ALL)

# conffiles: dpkg keeps an administrator's edits of these across upgrades and deletes them on
# purge only.
set(SPILLWAY_DEB_CONFFILES ${PROJECT_BINARY_DIR}/packaging/conffiles)
file(CONFIGURE OUTPUT ${SPILLWAY_DEB_CONFFILES} CONTENT "/etc/spillway/spillway.yaml\n")

set(SPILLWAY_PACKAGE_MAINTAINER "spillway developers" CACHE STRING
    "Maintainer: field of the Debian package (Debian policy wants 'Name <email>')")
set(SPILLWAY_PACKAGE_HOMEPAGE "" CACHE STRING
    "Homepage: field of the Debian package (left out when empty)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME spillway)
set(CPACK_PACKAGE_VENDOR "spillway developers")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SPILLWAY_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "exact rate limiter: HTTP check service and C++ library")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "spillway decides whether a request may proceed, for services, nginx (auth_request) and\n"
    "Envoy (its gRPC rate limit service). Five algorithms (fixed window, sliding log,\n"
    "sliding window, token bucket, GCRA), exact under concurrency and with exact arithmetic,\n"
    "on an in-process store or on Redis (single, TLS, Cluster, Sentinel), where every check\n"
    "is one atomic Lua script.\n"
    "\n"
    "The spillway command: serve (the HTTP API, nginx auth_request, Envoy's RLS and RLQS over\n"
    "gRPC, metrics, a dashboard), validate (a config or Envoy rules, errors by line), inspect\n"
    "(a request's keys and their state), tenants (plans, blocks and resets through a server's\n"
    "admin API), simulate (what each algorithm admits of a traffic pattern, as an HTML\n"
    "report), replay (a CSV trace through one limiter) and bench (load a backend, measure it).\n"
    "\n"
    "Also a systemd unit (installed neither enabled nor started) with its config in\n"
    "/etc/spillway, the C++ library (headers, static libraries, CMake package, pkg-config) for\n"
    "embedding programs, and the documentation in /usr/share/doc/spillway.")
# Both the install rules of the project (every component but "deb": ALL) and the package-only
# files (component "deb"), into one package.
set(CPACK_INSTALL_CMAKE_PROJECTS
    "${PROJECT_BINARY_DIR};${PROJECT_NAME};ALL;/"
    "${PROJECT_BINARY_DIR};${PROJECT_NAME};deb;/")
# Installed files are stripped, as in any Debian package (a RelWithDebInfo spillway is 47 MB
# with its debug information, 2 MB without): the executable by CPack, the static libraries'
# debug information by cmake/cpack_strip_archives.cmake.
set(CPACK_STRIP_FILES ON)
if(NOT CMAKE_STRIP)
  message(FATAL_ERROR "package.cmake: no strip program (CMAKE_STRIP) to strip the package with")
endif()
set(CPACK_SPILLWAY_STRIP ${CMAKE_STRIP})
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/cpack_strip_archives.cmake)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb (no Debian revision)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SPILLWAY_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${SPILLWAY_PACKAGE_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ExecReload= of the unit runs /bin/kill (procps: priority important, not essential).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "procps")
# Building a program against the library: the CMake package finds OpenSSL, and the static
# libraries link hiredis by name.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libssl-dev, libhiredis-dev")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${SPILLWAY_DEB_CONFFILES}
    ${SPILLWAY_PACKAGING_DIR}/debian/postinst
    ${SPILLWAY_PACKAGING_DIR}/debian/prerm
    ${SPILLWAY_PACKAGING_DIR}/debian/postrm)
# Control files get Debian's modes (0755 scripts, 0644 the rest) whatever their modes on disk.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/cpack_project_config.cmake)

# Values reach CPackConfig.cmake exactly as written here (no second round of escapes).
set(CPACK_VERBATIM_VARIABLES ON)
# `package_source` (which include(CPack) also defines) must not pack build trees or node_modules.
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build/" "/node_modules/" "\\.swp$")

include(CPack)
