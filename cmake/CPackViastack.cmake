# CPackViastack.cmake - read by cpack for each package it builds
# (CPACK_PROJECT_CONFIG_FILE, cmake/ViastackInstall.cmake).
#
# A .deb installs under /usr, where Debian puts libraries in the multiarch
# directory (lib/<triplet>).  The install rules use the libdir the tree was
# configured with, so a tree configured with a prefix such as /opt/viastack
# (libdir `lib`) would make a .deb with libraries in /usr/lib: refuse it and
# say how to configure instead.
if(CPACK_GENERATOR STREQUAL "DEB" AND CPACK_VIASTACK_MULTIARCH
   AND NOT CPACK_VIASTACK_LIBDIR STREQUAL "lib/${CPACK_VIASTACK_MULTIARCH}")
  message(FATAL_ERROR
    "this tree installs libraries into '${CPACK_VIASTACK_LIBDIR}', but a .deb must put them in "
    "/usr/lib/${CPACK_VIASTACK_MULTIARCH}: configure the tree for packaging with "
    "-DCMAKE_INSTALL_PREFIX=/usr (or /usr/local, the default) or "
    "-DCMAKE_INSTALL_LIBDIR=lib/${CPACK_VIASTACK_MULTIARCH}, then run cpack again")
endif()
