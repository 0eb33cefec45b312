# Runs one Split-C example under the launcher and checks it.
#   cmake -DLAUNCHER=vipl-run -DNPROCS=n -DPROGRAM=path "-DARGS=a b c"
#         [-DOUT=file] [-DEXPECT_FAIL=1] [-DTIMEOUT=s] -P run_example.cmake
# Normal run: exit status 0 and exactly one "result: ..." line, which goes to
# OUT (removed first, so a failed run leaves nothing to compare).
# EXPECT_FAIL: exit status 1 and the program's own "check FAILED" (a crash,
# a timeout or a runtime abort does not count as noticing the corruption).
foreach(v LAUNCHER NPROCS PROGRAM)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_example.cmake: -D${v}= missing")
  endif()
endforeach()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 120)
endif()
if(DEFINED OUT)
  file(REMOVE "${OUT}")
endif()
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${LAUNCHER}" -n ${NPROCS} --timeout ${TIMEOUT} "${PROGRAM}" ${args}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(REPLACE ";" " " shown "${args}")
message("$ vipl-run -n ${NPROCS} ${PROGRAM} ${shown}\n${out}${err}exit status ${rc}")

if(EXPECT_FAIL)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the program exited 0 on corrupted data: its check cannot fail")
  endif()
  if(NOT rc EQUAL 1 OR NOT out MATCHES "check FAILED")
    message(FATAL_ERROR "expected exit status 1 with 'check FAILED' from the program's own check, "
                        "got exit status ${rc}")
  endif()
  return()
endif()

if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
string(REGEX MATCHALL "(^|\n)result: [^\n]*" results "${out}")
list(LENGTH results nresults)
if(NOT nresults EQUAL 1)
  message(FATAL_ERROR "expected one 'result:' line, found ${nresults}")
endif()
string(STRIP "${results}" result)
if(DEFINED OUT)
  get_filename_component(dir "${OUT}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  file(WRITE "${OUT}" "${result}\n")
endif()
