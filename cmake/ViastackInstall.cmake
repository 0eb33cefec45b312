# ViastackInstall.cmake - what `cmake --install` and `cpack` ship, beyond the
# install() rules that sit next to each target (docs/packaging.md):
#   <prefix>/include/viastack/          vipl.h vipl_boot.h vipl_instr.h am.h am_amx.h am_spmd.h
#                                       fm.h bip.h splitc_rt.h split-c/*.h splitc/splitc.hpp
#   <prefix>/<libdir>/                  libvipl, libam, libfm, libbip, libsplitc (.so.N
#                                       and .a), libsplitc_rt_main.a
#   <prefix>/<libdir>/cmake/viastack/   viastackConfig.cmake (find_package(viastack CONFIG))
#   <prefix>/<libdir>/pkgconfig/        viastack-{vipl,am,fm,bip,splitc}.pc
#   <prefix>/bin/                       vipl-run logp splitcc
#   <prefix>/libexec/viastack/          the demo programs (vi_pingpong, am_pingpong, fm_pingpong,
#                                       bip_pingpong, em3d, ...)
#   <prefix>/share/man/man1, man7       vipl-run(1) logp(1) splitcc(1) vipl(7) am(7) fm(7)
#                                       bip(7) splitc(7)
#   <prefix>/share/doc/viastack/        README.md, docs/*.md, examples/
include(CMakePackageConfigHelpers)

# What the static archives need on a link line, for viastack::*_static and
# `pkg-config --static`: plain library names, as a consumer finds them on its
# own system (the shared libraries record theirs as DT_NEEDED instead).
set(VIASTACK_STATIC_DEPS z spdlog fmt)
if(VIASTACK_VERBS AND TARGET vipl_verbs)
  list(APPEND VIASTACK_STATIC_DEPS rdmacm ibverbs)
endif()
if(VIASTACK_HAVE_PMIX)
  list(APPEND VIASTACK_STATIC_DEPS pmix)
endif()
list(APPEND VIASTACK_STATIC_DEPS stdc++ m)
target_link_libraries(vipl_static INTERFACE ${VIASTACK_STATIC_DEPS} Threads::Threads)

# ---- CMake package: viastack::vipl, ::am, ::fm, ::bip, ::splitc, ::splitc_main, ::*_static,
# ---- ::vipl-run, ::splitcc ------------------------------------------------------
set(VIASTACK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/viastack)
install(EXPORT viastack NAMESPACE viastack:: FILE viastackTargets.cmake
        DESTINATION ${VIASTACK_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/viastackConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/viastackConfig.cmake
  INSTALL_DESTINATION ${VIASTACK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/viastackConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/viastackConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/viastackConfigVersion.cmake
        DESTINATION ${VIASTACK_CMAKE_DIR} COMPONENT dev)

# ---- pkg-config: viastack-vipl, -am, -fm, -bip, -splitc ---------------------------
# prefix= is relative to the .pc file, so the same files work in /usr, in
# /opt/viastack or in a temporary prefix.
file(RELATIVE_PATH _pc_up /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
set(VIASTACK_PC_PREFIX "\${pcfiledir}/${_pc_up}")
set(VIASTACK_PC_LIBS_PRIVATE "")
foreach(l ${VIASTACK_STATIC_DEPS})
  string(APPEND VIASTACK_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(APPEND VIASTACK_PC_LIBS_PRIVATE " -pthread")
if(VIASTACK_INSTR)
  set(VIASTACK_PC_INSTR 1)
else()
  set(VIASTACK_PC_INSTR 0)
endif()
foreach(pc vipl am fm bip splitc)
  if(NOT TARGET ${pc}_shared)   # a layer left out by VIASTACK_SKIP
    continue()
  endif()
  configure_file(cmake/viastack-${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/viastack-${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/viastack-${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()

# ---- man pages: docs/man/<page>.<section>.md -> go-md2man -> share/man ---------
find_program(VIASTACK_GO_MD2MAN go-md2man)
file(GLOB _man_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.[1-8].md)
if(VIASTACK_GO_MD2MAN)
  set(_man_pages)
  foreach(src ${_man_sources})
    get_filename_component(page ${src} NAME_WLE)           # splitcc.1
    string(REGEX REPLACE ".*\\.([1-8])$" "\\1" section ${page})
    set(out ${PROJECT_BINARY_DIR}/man/${page})
    # Installed gzipped (as Debian policy wants; man reads them alike), -n so
    # the .gz carries no name or time stamp and rebuilds are identical.
    add_custom_command(OUTPUT ${out} ${out}.gz
      COMMAND ${VIASTACK_GO_MD2MAN} -in ${src} -out ${out}
      COMMAND gzip -9nkf ${out}
      DEPENDS ${src} COMMENT "go-md2man ${page}" VERBATIM)
    list(APPEND _man_pages ${out}.gz)
    if(section STREQUAL "1")
      set(_comp tools)
      if(page STREQUAL "splitcc.1")
        set(_comp dev)   # splitcc ships in the -dev package (it needs the headers)
      endif()
    else()
      set(_comp dev)
    endif()
    install(FILES ${out}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${_comp})
  endforeach()
  add_custom_target(man ALL DEPENDS ${_man_pages})
else()
  message(WARNING "go-md2man not found (apt-get install go-md2man, tools/setup does): "
                  "the man pages are neither built nor installed")
endif()

# ---- documentation ------------------------------------------------------------------
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT dev
        FILES_MATCHING PATTERN "*.md" PATTERN "man" EXCLUDE)
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT dev)

# ---- Debian packages: cpack -G DEB ------------------------------------------------
#   libviastack<N>   the shared libraries
#   viastack-tools   vipl-run, logp, the demo programs, their man pages
#   libviastack-dev  headers, static archives, .so links, CMake and pkg-config
#                    files, splitcc (it needs the headers and libsplitc_rt_main.a),
#                    the API man pages, docs and examples
# `lintian *.deb` findings fixed here and those that remain: docs/packaging.md.
set(VIASTACK_DEB_MAINTAINER "viastack maintainers <viastack@localhost>" CACHE STRING
    "Maintainer field of the .deb packages: whoever publishes them sets a real address")
set(CPACK_PACKAGE_NAME viastack)
set(CPACK_PACKAGE_VENDOR "viastack")
set(CPACK_PACKAGE_CONTACT "${VIASTACK_DEB_MAINTAINER}")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it in front of every
# package's description, so all three would share one synopsis line.
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Stripped binaries and shared libraries in the packages (the build tree and
# `cmake --install` keep their symbols).
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The libraries go to /usr/lib/<triplet> (cmake/ViastackLibraries.cmake picks
# that libdir for /usr and /usr/local); cpack refuses a tree configured otherwise.
set(CPACK_VIASTACK_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(CPACK_VIASTACK_MULTIARCH "")
if(EXISTS /etc/debian_version)
  set(CPACK_VIASTACK_MULTIARCH "${CMAKE_LIBRARY_ARCHITECTURE}")
endif()
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/CPackViastack.cmake)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib tools dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# dpkg-shlibdeps computes the Depends of the binaries (libibverbs1, libpmix2, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# logp_mpi (viastack-tools) links libvipl.so, which the lib package ships: let
# dpkg-shlibdeps find it in the build tree (the dependency on that package is
# CPACK_COMPONENT_TOOLS_DEPENDS below).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libviastack${VIASTACK_SOVERSION})
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
set(CPACK_COMPONENT_LIB_DESCRIPTION "viastack user-level communication libraries
viastack is a user-level communication stack over the VI Architecture.
This package holds its shared libraries: libvipl (the VI Provider Library
with the nicfw emulator and RDMA verbs providers), libam (Active Messages),
libfm (Fast Messages 2.x), libbip (BIP) and libsplitc (the Split-C runtime).")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME viastack-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "viastack launcher, LogP benchmarks and demo programs
vipl-run starts the processes of a viastack job; logp measures the LogP
parameters of VIPL, Active Messages and the Split-C runtime.  The demo
programs (ping-pong over each layer, em3d, sample sort) are installed in
/usr/libexec/viastack.")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "gnuplot-nox")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libviastack-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "viastack development files and Split-C translator
Headers, static libraries, CMake package and pkg-config files for programs
over VIPL, Active Messages, Fast Messages, BIP and the Split-C runtime; the
splitcc translator for Split-C sources; manual pages, documentation and
examples.")
# splitcc runs the C compiler; the static archives need these -dev packages.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "gcc | c-compiler")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libspdlog-dev, libfmt-dev, zlib1g-dev, libibverbs-dev, librdmacm-dev, libpmix-dev, pkg-config, cmake")
# shlibs file and the ldconfig trigger for libviastack0
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Depends between the three packages (exact version) from the component graph.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_TOOLS_DEPENDS lib)
set(CPACK_COMPONENT_DEV_DEPENDS lib tools)
# Per package, as Debian policy wants: /usr/share/doc/<package>/copyright and
# changelog.gz; and the lintian overrides of viastack-tools.  EXCLUDE_FROM_ALL:
# only cpack's per-package installs carry them, `cmake --install` does not.
string(TIMESTAMP _deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)   # honours SOURCE_DATE_EPOCH
configure_file(cmake/debian/changelog.in ${PROJECT_BINARY_DIR}/debian/changelog @ONLY)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog.gz
  COMMAND gzip -9nkf ${PROJECT_BINARY_DIR}/debian/changelog
  DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog.gz)
foreach(comp lib tools dev)
  string(TOUPPER ${comp} _c)
  set(_pkgdoc ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${_c}_PACKAGE_NAME})
  install(FILES cmake/debian/copyright ${PROJECT_BINARY_DIR}/debian/changelog.gz
          DESTINATION ${_pkgdoc} COMPONENT ${comp} EXCLUDE_FROM_ALL)
endforeach()
install(FILES cmake/debian/viastack-tools.lintian-overrides RENAME viastack-tools
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides COMPONENT tools EXCLUDE_FROM_ALL)
include(CPack)

# ---- checks of the installed package (ctest -L package) ------------------------------
if(BUILD_TESTING)
  include(cmake/PackageTests.cmake)
endif()
