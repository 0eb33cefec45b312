# Precompiled headers for the targets whose sources all parse the same heavy
# library headers (nlohmann/json, fmt, CLI11, gtest): each of their
# translation units would otherwise parse those headers again, and in the
# LogP suite that parsing is a large share of a cold build's compile time
# (tools/test builds three trees from scratch: Release, ASan and TSan).
#
# VIASTACK_PCH defaults to ON only when no compiler launcher is set: ccache
# does not cache a compile that uses a precompiled header unless its
# sloppiness allows it, so a ccache build tree (the everyday one, and the
# sanitizer trees tools/test-hardening configures with ccache when installed)
# keeps compiling each unit on its own and caching it.  A cold tree without
# ccache (CI) gets the precompiled headers.
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_viastack_pch_default OFF)
else()
  set(_viastack_pch_default ON)
endif()
option(VIASTACK_PCH "Precompile the heavy library headers of the LogP suite's targets" ${_viastack_pch_default})

# viastack_precompile_headers(<target> <header>...): the headers (system
# headers, in <>) are precompiled for <target> when VIASTACK_PCH is ON.
# A target of one source gains nothing (its one unit parses them once anyway):
# give it only to targets with several sources.
function(viastack_precompile_headers target)
  if(VIASTACK_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
