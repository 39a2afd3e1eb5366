# Read by cpack before it packs (CPACK_PROJECT_CONFIG_FILE, set in cmake/package.cmake).
# Without dpkg-shlibdeps CPack's DEB generator only prints a note and packs a .deb with no
# Depends: at all, which installs cleanly and then fails at run time. Stop instead.
if(CPACK_GENERATOR STREQUAL "DEB")
  find_program(SPILLWAY_DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(NOT SPILLWAY_DPKG_SHLIBDEPS)
    message(FATAL_ERROR "dpkg-shlibdeps is missing: it computes the package's dependencies "
                        "(apt-get install dpkg-dev)")
  endif()
endif()
