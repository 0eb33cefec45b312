# run.cmake - one step of the package checks (cmake/PackageTests.cmake):
#   cmake -DSTEP=install|layout|find_package|pkg_config -DSOURCE_DIR=.. -DBINARY_DIR=..
#         -DWORK=.. -DLIBDIR=lib -DSOVERSION=0 -DCC=.. -DCXX=.. -DGENERATOR=.. -P run.cmake
set(PREFIX ${WORK}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(JOIN " " cmd ${ARGN})
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# job(<program> <regex>): <program> as a 2-process job under the installed
# vipl-run; exit status 0 and <regex> in its output.
function(job prog regex)
  run(${PREFIX}/bin/vipl-run -n 2 --timeout 60 ${prog})
  if(NOT run_output MATCHES "${regex}")
    message(FATAL_ERROR "${prog}: no line matching '${regex}':\n${run_output}")
  endif()
  message(STATUS "${prog}: ${run_output}")
endfunction()
# list_wires(<var>): the PMIx jobs' files in /dev/shm now.
function(list_wires var)
  file(GLOB files /dev/shm/viastack-pmix-*)
  set(${var} "${files}" PARENT_SCOPE)
endfunction()
set(FM_WANT "fm_stream: node 1 verified 131084 bytes from node 0")
set(BIP_WANT "bip_exchange: rank 1 received 64 and 1048576 bytes from rank 0: verified")

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${WORK})
  run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${PREFIX})
  message(STATUS "installed into ${PREFIX}")

elseif(STEP STREQUAL "layout")
  set(want
    include/viastack/vipl.h include/viastack/vipl_boot.h include/viastack/vipl_instr.h
    include/viastack/am.h include/viastack/am_amx.h include/viastack/am_spmd.h include/viastack/fm.h include/viastack/bip.h
    include/viastack/splitc_rt.h
    include/viastack/split-c/split-c.h include/viastack/split-c/control.h
    include/viastack/splitc/splitc.hpp
    ${LIBDIR}/libvipl.so ${LIBDIR}/libvipl.so.${SOVERSION} ${LIBDIR}/libvipl.a
    ${LIBDIR}/libam.so ${LIBDIR}/libam.so.${SOVERSION} ${LIBDIR}/libam.a
    ${LIBDIR}/libsplitc.so ${LIBDIR}/libsplitc.so.${SOVERSION} ${LIBDIR}/libsplitc.a
    ${LIBDIR}/libfm.so ${LIBDIR}/libfm.so.${SOVERSION} ${LIBDIR}/libfm.a
    ${LIBDIR}/libbip.so ${LIBDIR}/libbip.so.${SOVERSION} ${LIBDIR}/libbip.a
    ${LIBDIR}/libsplitc_rt_main.a
    ${LIBDIR}/cmake/viastack/viastackConfig.cmake ${LIBDIR}/cmake/viastack/viastackConfigVersion.cmake
    ${LIBDIR}/cmake/viastack/viastackTargets.cmake
    ${LIBDIR}/pkgconfig/viastack-vipl.pc ${LIBDIR}/pkgconfig/viastack-am.pc ${LIBDIR}/pkgconfig/viastack-splitc.pc
    ${LIBDIR}/pkgconfig/viastack-fm.pc ${LIBDIR}/pkgconfig/viastack-bip.pc
    bin/vipl-run bin/logp bin/splitcc
    libexec/viastack/vi_pingpong libexec/viastack/am_pingpong libexec/viastack/em3d
    libexec/viastack/fm_pingpong libexec/viastack/bip_pingpong
    share/doc/viastack/README.md share/doc/viastack/docs/packaging.md share/doc/viastack/examples/hello.sc)
  if(HAVE_MAN)
    list(APPEND want share/man/man1/vipl-run.1.gz share/man/man1/logp.1.gz share/man/man1/splitcc.1.gz
                     share/man/man7/vipl.7.gz share/man/man7/am.7.gz share/man/man7/splitc.7.gz
                     share/man/man7/fm.7.gz share/man/man7/bip.7.gz)
  endif()
  foreach(f ${want})
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
    endif()
  endforeach()
  # SONAMEs, and the layers above needing libvipl by its SONAME.
  foreach(lib vipl am splitc fm bip)
    run(readelf -d ${PREFIX}/${LIBDIR}/lib${lib}.so)
    if(NOT run_output MATCHES "SONAME\\) +Library soname: \\[lib${lib}\\.so\\.${SOVERSION}\\]")
      message(FATAL_ERROR "lib${lib}.so: no SONAME lib${lib}.so.${SOVERSION}:\n${run_output}")
    endif()
    if(NOT lib STREQUAL "vipl" AND NOT run_output MATCHES "NEEDED\\) +Shared library: \\[libvipl\\.so\\.${SOVERSION}\\]")
      message(FATAL_ERROR "lib${lib}.so does not need libvipl.so.${SOVERSION}:\n${run_output}")
    endif()
  endforeach()
  # Plain C, the C compiler as linker, one -l: the providers are inside and
  # register themselves; and the same through dlopen.
  file(MAKE_DIRECTORY ${WORK}/c)
  set(inc ${PREFIX}/include/viastack)
  set(lib ${PREFIX}/${LIBDIR})
  run(${CC} -o ${WORK}/c/open_nic ${SOURCE_DIR}/cmake/package-tests/open_nic.c -I${inc} -L${lib} -lvipl -Wl,-rpath,${lib})
  run(${WORK}/c/open_nic)
  message(STATUS "cc -lvipl: ${run_output}")
  run(${CC} -o ${WORK}/c/dlopen_vipl ${SOURCE_DIR}/cmake/package-tests/dlopen_vipl.c -ldl)
  run(${WORK}/c/dlopen_vipl ${lib}/libvipl.so.${SOVERSION})
  message(STATUS "dlopen: ${run_output}")
  # The static archive, linked whole, from a C program too.
  string(REPLACE "," ";" deps "${STATIC_DEPS}")
  list(TRANSFORM deps PREPEND -l)
  run(${CC} -o ${WORK}/c/open_nic_static ${SOURCE_DIR}/cmake/package-tests/open_nic.c -I${inc}
      -Wl,--whole-archive ${lib}/libvipl.a -Wl,--no-whole-archive ${deps} -pthread)
  run(${WORK}/c/open_nic_static)
  message(STATUS "libvipl.a: ${run_output}")
  # Programs written for AMMPI/AMUDP, through two-line forwarding headers
  # (amx/ammpi.h -> am.h, amx/ammpi_spmd.h -> am_spmd.h, and the amudp pair):
  # every public name of their core and SPMD headers by address, and the
  # AMMPI-style test program; warnings are errors.
  set(amx ${SOURCE_DIR}/cmake/package-tests/amx)
  run(${CC} -std=c99 -Wall -Wextra -Werror -o ${WORK}/c/amx_names ${SOURCE_DIR}/cmake/package-tests/amx_names.c
      -I${amx} -I${inc} -L${lib} -lam -Wl,-rpath,${lib})
  run(${WORK}/c/amx_names)
  message(STATUS "${run_output}")
  run(${CC} -std=gnu99 -Wall -Wextra -Werror -o ${WORK}/c/ammpi_style_program
      ${SOURCE_DIR}/tests/am/ammpi_style_program.c -I${amx} -I${inc} -L${lib} -lam -Wl,-rpath,${lib})
  # Each public header on its own, as a user includes it: C99 and C11, C++11
  # (C++20 for the C++ embedding), all warnings, pedantic, as errors.
  file(GLOB_RECURSE headers RELATIVE ${inc} ${inc}/*.h ${inc}/*.hpp)
  foreach(h ${headers})
    string(MAKE_C_IDENTIFIER ${h} id)
    if(h MATCHES "\\.hpp$")
      set(langs "${CXX},c++,-std=c++20")
    else()
      set(langs "${CC},c,-std=c99" "${CC},c,-std=c11" "${CXX},c++,-std=c++11" "${CXX},c++,-std=c++20")
    endif()
    foreach(l IN LISTS langs)
      string(REPLACE "," ";" l "${l}")
      list(GET l 0 compiler)
      list(GET l 1 lang)
      list(GET l 2 std)
      file(WRITE ${WORK}/c/hdr_${id}.${lang} "#include <${h}>\nint main(void) { return 0; }\n")
      run(${compiler} ${std} -Wall -Wextra -pedantic -Werror -fsyntax-only -I${inc} ${WORK}/c/hdr_${id}.${lang})
    endforeach()
  endforeach()
  message(STATUS "headers compile alone: ${headers}")
  # The man pages describe every option the programs' --help lists.
  if(HAVE_MAN)
    foreach(tool vipl-run splitcc logp)
      run(${PREFIX}/bin/${tool} --help)
      string(REGEX MATCHALL "\n +-[^\n]*" option_lines "\n${run_output}")
      string(REGEX MATCHALL "--[a-z][-a-z0-9]*" options "${option_lines}")
      list(REMOVE_DUPLICATES options)
      run(gzip -dc ${PREFIX}/share/man/man1/${tool}.1.gz)
      string(REPLACE "\\" "" page "${run_output}")
      foreach(o ${options})
        string(FIND "${page}" "${o}" at)
        if(at EQUAL -1)
          message(FATAL_ERROR "${tool} --help lists ${o}, ${tool}(1) does not (docs/man/${tool}.1.md)")
        endif()
      endforeach()
      message(STATUS "${tool}(1) covers --help: ${options}")
    endforeach()
  endif()

elseif(STEP STREQUAL "find_package")
  set(b ${WORK}/examples-cmake)
  file(REMOVE_RECURSE ${b})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${b} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX})
  run(${CMAKE_COMMAND} --build ${b})
  # The programs must use the installed libraries, not the build tree's.
  run(ldd ${b}/vi_pingpong)
  if(NOT run_output MATCHES "${PREFIX}/${LIBDIR}/libvipl.so")
    message(FATAL_ERROR "vi_pingpong does not load the installed libvipl:\n${run_output}")
  endif()
  run(ldd ${b}/vi_pingpong_static)
  if(run_output MATCHES "libvipl")
    message(FATAL_ERROR "vi_pingpong_static loads libvipl:\n${run_output}")
  endif()
  run(ctest --test-dir ${b} --output-on-failure)
  message(STATUS "${run_output}")
  # fm.h and bip.h programs: viastack::fm / viastack::bip (the installed
  # libfm.so / libbip.so over libvipl.so) and viastack::fm_static / bip_static.
  set(b ${WORK}/layers-cmake)
  file(REMOVE_RECURSE ${b})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/cmake/package-tests -B ${b} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_C_COMPILER=${CC})
  run(${CMAKE_COMMAND} --build ${b})
  foreach(layer_prog fm:fm_stream bip:bip_exchange)
    string(REPLACE ":" ";" lp ${layer_prog})
    list(GET lp 0 layer)
    list(GET lp 1 prog)
    run(ldd ${b}/${prog})
    if(NOT run_output MATCHES "${PREFIX}/${LIBDIR}/lib${layer}\\.so" OR NOT run_output MATCHES "${PREFIX}/${LIBDIR}/libvipl\\.so")
      message(FATAL_ERROR "${prog} does not load the installed lib${layer} and libvipl:\n${run_output}")
    endif()
    run(ldd ${b}/${prog}_static)
    if(run_output MATCHES "lib${layer}\\.so|libvipl\\.so")
      message(FATAL_ERROR "${prog}_static loads a viastack library:\n${run_output}")
    endif()
    string(TOUPPER ${layer} L)
    job(${b}/${prog} "${${L}_WANT}")
    job(${b}/${prog}_static "${${L}_WANT}")
  endforeach()

elseif(STEP STREQUAL "pkg_config")
  set(b ${WORK}/examples-pkg-config)
  file(REMOVE_RECURSE ${b})
  file(MAKE_DIRECTORY ${b})
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
  run(make -C ${SOURCE_DIR}/examples O=${b} CC=${CC} CXX=${CXX} check)
  message(STATUS "${run_output}")
  run(ldd ${b}/hello)
  if(NOT run_output MATCHES "${PREFIX}/${LIBDIR}/libsplitc.so")
    message(FATAL_ERROR "hello (splitcc) does not load the installed libsplitc:\n${run_output}")
  endif()
  # A VIPL program in the style of the M-VIA / cLAN drivers (legacy device
  # name, host-name lookup, NULL ptag and attributes, blocking RecvWait,
  # Giganet names), built the way their users build: cc prog.c $(pkg-config ...).
  run(pkg-config --cflags --libs viastack-vipl)
  separate_arguments(vipl_flags UNIX_COMMAND "${run_output}")
  run(${CC} -Wall -Wextra -o ${b}/legacy_vi ${SOURCE_DIR}/vipl/examples/legacy_vi.c ${vipl_flags} -pthread
      -Wl,-rpath,${PREFIX}/${LIBDIR})
  run(${PREFIX}/bin/vipl-run -n 2 --timeout 60 ${b}/legacy_vi)
  if(NOT run_output MATCHES "legacy_vi: 100 echoes verified")
    message(FATAL_ERROR "legacy_vi built with pkg-config did not verify its echoes:\n${run_output}")
  endif()
  message(STATUS "legacy_vi (cc + pkg-config viastack-vipl): ${run_output}")
  # fm.h and bip.h programs: cc prog.c $(pkg-config --cflags --libs viastack-fm|bip).
  foreach(layer_prog fm:fm_stream bip:bip_exchange)
    string(REPLACE ":" ";" lp ${layer_prog})
    list(GET lp 0 layer)
    list(GET lp 1 prog)
    run(pkg-config --cflags --libs viastack-${layer})
    separate_arguments(flags UNIX_COMMAND "${run_output}")
    run(${CC} -Wall -Wextra -Werror -o ${b}/${prog} ${SOURCE_DIR}/cmake/package-tests/${prog}.c ${flags}
        -Wl,-rpath,${PREFIX}/${LIBDIR})
    string(TOUPPER ${layer} L)
    job(${b}/${prog} "${${L}_WANT}")
  endforeach()

elseif(STEP STREQUAL "deb")
  # cpack -G DEB, then each .deb unpacked (dpkg-deb -x) into one root: the
  # control fields, and a C program and a Split-C program built from /usr of
  # that root run.
  set(d ${WORK}/deb)
  file(REMOVE_RECURSE ${d})
  run(cpack -G DEB --config ${BINARY_DIR}/CPackConfig.cmake -B ${d})
  file(GLOB debs ${d}/*.deb)
  list(LENGTH debs n)
  if(NOT n EQUAL 3)
    message(FATAL_ERROR "expected 3 .deb files, got: ${debs}")
  endif()
  foreach(deb ${debs})
    run(dpkg-deb -f ${deb} Package Depends)
    message(STATUS "${run_output}")
    run(dpkg-deb -x ${deb} ${d}/root)
  endforeach()
  set(usr ${d}/root/usr)
  foreach(f include/viastack/vipl.h ${LIBDIR}/libvipl.so.${SOVERSION} ${LIBDIR}/libvipl.so bin/vipl-run bin/splitcc
            ${LIBDIR}/libfm.so.${SOVERSION} ${LIBDIR}/libbip.so.${SOVERSION}
            ${LIBDIR}/pkgconfig/viastack-splitc.pc ${LIBDIR}/pkgconfig/viastack-fm.pc)
    if(NOT EXISTS ${usr}/${f})
      message(FATAL_ERROR "not in the packages: /usr/${f}")
    endif()
  endforeach()
  run(${CC} -o ${d}/open_nic ${SOURCE_DIR}/cmake/package-tests/open_nic.c -I${usr}/include/viastack
      -L${usr}/${LIBDIR} -lvipl -Wl,-rpath,${usr}/${LIBDIR})
  run(${d}/open_nic)
  run(${usr}/bin/splitcc -o ${d}/hello ${SOURCE_DIR}/examples/hello.sc)
  run(${usr}/bin/vipl-run -n 2 --timeout 60 ${d}/hello)
  if(NOT run_output MATCHES "sum of the cells = 3")
    message(FATAL_ERROR "hello from the packages' splitcc:\n${run_output}")
  endif()

elseif(STEP STREQUAL "mpi")
  # The MPI route as a user gets it: viastack installed for the prefix /usr
  # (what the .deb does) under a temporary root, an MPI program built out of
  # tree with mpicc, and mpirun with nothing but MCA options: libfabric must
  # find libviastack-fi.so by itself.  libfabric loads external providers only
  # from FI_PROVIDER_PATH or its own compiled-in directory, $libdir/libfabric,
  # so the install must put the provider exactly there.  The job runs in a
  # private mount namespace where the root's /usr/${LIBDIR} is laid over the
  # system's (a read-only overlay): inside it the system looks as if the
  # package were installed, outside nothing changes.
  # Its own directory: package_install empties ${WORK} when it starts.
  set(root ${BINARY_DIR}/package-test-mpi/root)
  set(b ${BINARY_DIR}/package-test-mpi/build)
  file(REMOVE_RECURSE ${root} ${b})
  file(MAKE_DIRECTORY ${b})
  set(ENV{DESTDIR} ${root})
  run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix /usr)
  unset(ENV{DESTDIR})
  run(pkg-config --variable=libdir libfabric)
  string(STRIP "${run_output}" fabric_libdir)
  if(NOT fabric_libdir STREQUAL "/usr/${LIBDIR}")
    message(FATAL_ERROR "libfabric's libdir is ${fabric_libdir}, the package installs into /usr/${LIBDIR}: "
                        "libfabric would not find the provider (it looks in <its libdir>/libfabric)")
  endif()
  set(provider ${root}/usr/${LIBDIR}/libfabric/libviastack-fi.so)
  if(NOT EXISTS ${provider})
    message(FATAL_ERROR "cmake --install --prefix /usr did not put the provider where libfabric looks: "
                        "no ${provider}")
  endif()
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT uid STREQUAL "0")
    message(STATUS "package_mpi: SKIP: laying the package over /usr/${LIBDIR} needs root (a mount namespace)")
    return()
  endif()
  run(mpicc -Wall -Wextra -Werror -o ${b}/mpi_ring ${SOURCE_DIR}/cmake/package-tests/mpi_ring.c)
  list_wires(before)
  set(overlay "lowerdir=${root}/usr/${LIBDIR}:/usr/${LIBDIR}")
  run(unshare --mount --propagation private
      sh -c "mount -t overlay viastack-package -o ${overlay} /usr/${LIBDIR} && exec \"$@\"" sh
      env -u FI_PROVIDER_PATH -u VIPL_PROVIDER
      mpirun --allow-run-as-root --oversubscribe -n 2 --timeout 120
             --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include viastack ${b}/mpi_ring)
  if(NOT run_output MATCHES "mpi_ring: 2 ranks, all checks passed")
    message(FATAL_ERROR "mpi_ring over the installed provider:\n${run_output}")
  endif()
  message(STATUS "mpicc + mpirun over ${provider}:\n${run_output}")
  # The job's PMIx bootstrap removes the nicfw wire it created.
  list_wires(after)
  if(before)
    list(REMOVE_ITEM after ${before})
  endif()
  if(after)
    message(FATAL_ERROR "the MPI job left ${after} in /dev/shm (vipl_boot_finalize removes a PMIx job's files)")
  endif()

elseif(STEP STREQUAL "lintian")
  # lintian on the packages package_deb built: no tag beyond those
  # docs/packaging.md lists as remaining, each matched narrowly.
  file(GLOB debs ${WORK}/deb/*.deb)
  if(NOT debs)
    message(FATAL_ERROR "no .deb in ${WORK}/deb (package_deb makes them)")
  endif()
  execute_process(COMMAND lintian --tag-display-limit 0 ${debs} OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(known
    "^[EW]: [a-z0-9-]+: bogus-mail-host(-in-debian-changelog)? .*@localhost"      # VIASTACK_DEB_MAINTAINER
    "^E: [a-z0-9-]+: custom-library-search-path RUNPATH /usr/lib/[^ ]*/pmix2/lib " # pmix.pc's -rpath
    "^W: libviastack[0-9]+: package-name-doesnt-match-sonames "                  # one package, five libraries
    "^W: libviastack[0-9]+: maintscript-calls-ldconfig ")                        # CPackDeb writes it
  string(REPLACE "\n" ";" lines "${out}")
  set(unexpected)
  foreach(l ${lines})
    if(NOT l MATCHES "^[EWIPX]: ")
      continue()
    endif()
    set(ok FALSE)
    foreach(k ${known})
      if(l MATCHES "${k}")
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      string(APPEND unexpected "${l}\n")
    endif()
  endforeach()
  message(STATUS "lintian:\n${out}")
  if(unexpected)
    message(FATAL_ERROR "lintian tags not listed in docs/packaging.md:\n${unexpected}")
  endif()

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
