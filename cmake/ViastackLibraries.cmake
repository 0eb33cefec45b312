# ViastackLibraries.cmake - the installable libraries (docs/packaging.md).
#
# The in-tree programs and tests keep linking the per-component static
# archives (vipl_core, vipl_nicfw, am, splitc_rt, ...) exactly as before; the
# libraries users link are built from the object files of those archives, so
# nothing is compiled twice and the hot path of the in-tree benchmarks is the
# same code, linked the same way.

# ---- where the libraries go: CMAKE_INSTALL_LIBDIR ------------------------------
# On Debian and its derivatives (CMAKE_LIBRARY_ARCHITECTURE, e.g.
# x86_64-linux-gnu) the libraries of /usr and /usr/local go to the multiarch
# directory lib/<triplet>, as Debian policy wants for packages (and as
# ld.so.conf, pkg-config and find_package search for /usr/local too).
# GNUInstallDirs does that for /usr only; the default prefix is /usr/local,
# and CPack builds the .deb for /usr from the tree as configured, so viastack
# picks lib/<triplet> for both.  Other prefixes (/opt/viastack) keep lib.
# An explicit -DCMAKE_INSTALL_LIBDIR wins; a tree configured before this rule
# (GNUInstallDirs' default `lib` in its cache) moves to the new default, and
# the default follows later changes of CMAKE_INSTALL_PREFIX.
set(_viastack_libdir lib)
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS /etc/debian_version
   AND CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?/?$")
  set(_viastack_libdir lib/${CMAKE_LIBRARY_ARCHITECTURE})
endif()
if(NOT DEFINED CMAKE_INSTALL_LIBDIR
   OR (DEFINED VIASTACK_LIBDIR_DEFAULT AND CMAKE_INSTALL_LIBDIR STREQUAL VIASTACK_LIBDIR_DEFAULT)
   OR (NOT DEFINED VIASTACK_LIBDIR_DEFAULT AND DEFINED _GNUInstallDirs_LAST_CMAKE_INSTALL_PREFIX
       AND CMAKE_INSTALL_LIBDIR STREQUAL "lib"))
  set(CMAKE_INSTALL_LIBDIR ${_viastack_libdir} CACHE PATH
      "Object code libraries (${_viastack_libdir}; docs/packaging.md)" FORCE)
endif()
set(VIASTACK_LIBDIR_DEFAULT ${_viastack_libdir} CACHE INTERNAL "the CMAKE_INSTALL_LIBDIR viastack chose")
include(GNUInstallDirs)

# ABI version of the shared libraries (the number in the SONAME, lib<x>.so.N).
# Bump it on any incompatible change to vipl.h, am.h or splitc_rt.h.
set(VIASTACK_SOVERSION 0 CACHE STRING "SONAME version of libvipl, libam and libsplitc")
mark_as_advanced(VIASTACK_SOVERSION)

# viastack_library(<name> <static targets...>)
#   <name>_shared  lib<name>.so.<version>, SONAME lib<name>.so.${VIASTACK_SOVERSION}
#   <name>_static  lib<name>.a, one archive holding every object of the targets
# both from the object files of the given static targets, both written to
# ${PROJECT_BINARY_DIR}/lib (one -L and one rpath reach all of them, which is
# what splitcc's build-tree layout and the in-tree package tests rely on).
# The caller adds the link dependencies.
function(viastack_library name)
  set(objs)
  foreach(t ${ARGN})
    list(APPEND objs $<TARGET_OBJECTS:${t}>)
  endforeach()
  add_library(${name}_shared SHARED ${objs})
  add_library(${name}_static STATIC ${objs})
  set_target_properties(${name}_shared PROPERTIES
    OUTPUT_NAME ${name}
    EXPORT_NAME ${name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${VIASTACK_SOVERSION}
    LINKER_LANGUAGE CXX
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
    # libam/libsplitc find libvipl next to themselves in any prefix (/usr,
    # /opt/viastack, a temporary test prefix).
    INSTALL_RPATH "$ORIGIN")
  set_target_properties(${name}_static PROPERTIES
    OUTPUT_NAME ${name}
    EXPORT_NAME ${name}_static
    ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  # -Bsymbolic-functions: calls between the library's own functions (VipPostSend
  # -> the provider, AM_Poll -> VipCQDone) bind inside the library instead of
  # going through the PLT, so a program linked against the .so pays one PLT hop
  # per API call, as with any shared library, and no more.
  target_link_options(${name}_shared PRIVATE LINKER:-Bsymbolic-functions)
  # Every dependency must be on the library's own link line (so that
  # `cc prog.c -lvipl` needs nothing else); sanitizer runtimes are the exception.
  if(NOT VIASTACK_ASAN AND NOT VIASTACK_TSAN)
    target_link_options(${name}_shared PRIVATE LINKER:--no-undefined)
  endif()
endfunction()
