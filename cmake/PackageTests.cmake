# PackageTests.cmake - ctest checks of the installed package (label `package`),
# included from examples/CMakeLists.txt in the viastack tree:
#   package_install       cmake --install into ${PROJECT_BINARY_DIR}/package-test/prefix
#   package_layout        the files users rely on are there; SONAMEs; `cc prog.c -lvipl`
#                         and dlopen("libvipl.so.N") work from plain C
#   package_find_package  examples/ and cmake/package-tests/ (fm_stream.c, bip_exchange.c)
#                         configured and built out of tree with find_package(viastack
#                         CONFIG); the examples' tests run, the FM and BIP programs run
#                         on 2 processes under the installed vipl-run (shared and static)
#   package_pkg_config    examples/Makefile built with pkg-config, `make check`; and
#                         vipl/examples/legacy_vi.c, fm_stream.c, bip_exchange.c built as
#                         `cc prog.c $(pkg-config ...)`, each run on 2
#   package_deb           cpack -G DEB; the three .deb unpacked with dpkg-deb -x;
#                         a C program and hello.sc (the packaged splitcc) built and run
#   package_lintian       (label slow, if lintian is installed) lintian on those .deb:
#                         no tag but the remaining ones docs/packaging.md lists
# The prefix is temporary and lives in the build tree; the three checks share it
# through the fixture `viastack_installed`.
set(_pt_dir ${PROJECT_BINARY_DIR}/package-test)
set(_pt_script ${PROJECT_SOURCE_DIR}/cmake/package-tests/run.cmake)
string(REPLACE ";" "," _pt_static_deps "${VIASTACK_STATIC_DEPS}")
set(_pt_args -DSTATIC_DEPS=${_pt_static_deps} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBINARY_DIR=${PROJECT_BINARY_DIR} -DWORK=${_pt_dir}
             -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DSOVERSION=${VIASTACK_SOVERSION}
             -DCC=${CMAKE_C_COMPILER} -DCXX=${CMAKE_CXX_COMPILER} -DGENERATOR=${CMAKE_GENERATOR}
             -DHAVE_MAN=$<BOOL:${VIASTACK_GO_MD2MAN}>)
foreach(step install layout find_package pkg_config deb)
  add_test(NAME package_${step} COMMAND ${CMAKE_COMMAND} -DSTEP=${step} ${_pt_args} -P ${_pt_script})
  set_tests_properties(package_${step} PROPERTIES LABELS "package" TIMEOUT 300)
endforeach()
# lintian on the .deb files (when installed; about a minute on the 2-core VM,
# so labelled slow and left out of CI): only the tags docs/packaging.md lists.
find_program(VIASTACK_LINTIAN lintian)
if(VIASTACK_LINTIAN)
  add_test(NAME package_lintian COMMAND ${CMAKE_COMMAND} -DSTEP=lintian ${_pt_args} -P ${_pt_script})
  set_tests_properties(package_lintian PROPERTIES LABELS "package;slow" TIMEOUT 600
                       FIXTURES_REQUIRED viastack_debs)
  set_tests_properties(package_deb PROPERTIES FIXTURES_SETUP viastack_debs)
endif()
# package_mpi: the installed libfabric provider under Open MPI, found by
# libfabric where the package puts it (run.cmake, STEP mpi; needs root for
# its mount namespace, skipped otherwise).
find_program(VIASTACK_MPICC mpicc)
find_program(VIASTACK_MPIRUN_PKG mpirun)
find_program(VIASTACK_UNSHARE unshare)
if(TARGET viastack-fi AND VIASTACK_HAVE_PMIX AND VIASTACK_MPICC AND VIASTACK_MPIRUN_PKG AND VIASTACK_UNSHARE)
  add_test(NAME package_mpi COMMAND ${CMAKE_COMMAND} -DSTEP=mpi ${_pt_args} -P ${_pt_script})
  set_tests_properties(package_mpi PROPERTIES LABELS "package;mpi" TIMEOUT 300 PROCESSORS 2
                       SKIP_REGULAR_EXPRESSION "package_mpi: SKIP" RESOURCE_LOCK viastack_package_build)
endif()
set_tests_properties(package_install PROPERTIES FIXTURES_SETUP viastack_installed)
set_tests_properties(package_layout package_find_package package_pkg_config PROPERTIES
                     FIXTURES_REQUIRED viastack_installed)
# The out-of-tree builds each take a core; they run one at a time so that
# -j2 does not starve the other tests' two-process jobs.
set_tests_properties(package_find_package package_pkg_config package_deb PROPERTIES
                     RESOURCE_LOCK viastack_package_build)
