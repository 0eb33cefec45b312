# check_rate.cmake - ctest driver for vi_thread_rate (tests/threads): runs it
# and checks what it printed, never its timings.
#   -DPROG=<vi_thread_rate> [-DLAUNCHER=<vipl-run>] -DMODE=two|single|badargs
# two / single: `--quick --json` under `vipl-run -n 2` or with --single; the
#   JSON must parse, every message sent must have been received and checked,
#   every variant must have a sample per round with a positive rate and
#   cache-line time, and every stream's clock must have started after its
#   receiving threads ran (their ready messages: a stream timed from before
#   would count the other process's thread start-up, not VIPL).
# badargs: each bad command line (and a bad VIASTACK_WAIT, and a run without
#   the launcher's second rank) must exit 2 naming the problem.
cmake_minimum_required(VERSION 3.25)

function(fail)
  string(JOIN "" msg ${ARGN})
  message(FATAL_ERROR "check_rate: ${msg}")
endfunction()

if(MODE STREQUAL "badargs")
  # argument list (";"-separated, "|" between arguments) -> what stderr must name
  set(cases
    "--window|0" "--window: Value 0 not in range"
    "--window|65" "--window: Value 65 not in range"
    "--rounds|x" "--rounds"
    "--blocks|0" "--blocks: Value 0 not in range"
    "--single|--variants|2t_9" "unknown variant '2t_9'"
    "--bogus" "--bogus"
    "-E|env|VIASTACK_WAIT=bogus|PROG|--single|--quick" "VIASTACK_WAIT must be spin, yield or block"
    "-E|env|VIASTACK_SIZE=1|PROG|--quick" "needs exactly 2 ranks")
  list(LENGTH cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET cases ${i} args)
    list(GET cases ${j} want)
    string(REPLACE "|" ";" args "${args}")
    # A case starting with -E runs the program under `cmake -E env` (PROG: where it goes).
    set(cmd ${PROG} ${args})
    if(args MATCHES "^-E;")
      string(REPLACE "PROG" "${PROG}" args "${args}")
      set(cmd ${CMAKE_COMMAND} ${args})
    endif()
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
    if(NOT rc EQUAL 2)
      fail("`vi_thread_rate ${args}` exited ${rc}, expected 2\n${out}${err}")
    endif()
    string(FIND "${out}${err}" "${want}" at)
    if(at LESS 0)
      fail("`vi_thread_rate ${args}` did not say '${want}':\n${out}${err}")
    endif()
  endforeach()
  message(STATUS "check_rate: every bad command line refused with exit 2")
  return()
endif()

if(MODE STREQUAL "two")
  set(cmd ${LAUNCHER} -n 2 --timeout 100 ${PROG} --quick --json)
elseif(MODE STREQUAL "single")
  set(cmd ${PROG} --single --quick --json)
else()
  fail("MODE must be two, single or badargs")
endif()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 110)
if(NOT rc EQUAL 0)
  fail("`${cmd}` exited ${rc}:\n${out}${err}")
endif()
# vipl-run may tag lines; the report is the one JSON object.
string(FIND "${out}" "{" start)
string(FIND "${out}" "}" end REVERSE)
if(start LESS 0 OR end LESS start)
  fail("no JSON object in the output:\n${out}${err}")
endif()
math(EXPR len "${end} - ${start} + 1")
string(SUBSTRING "${out}" ${start} ${len} json)
string(JSON program ERROR_VARIABLE e GET "${json}" program)
if(e)
  fail("the output is not JSON (${e}):\n${json}")
endif()
string(JSON sent GET "${json}" messages sent)
string(JSON received GET "${json}" messages received)
string(JSON rounds GET "${json}" rounds)
if(NOT program STREQUAL "vi_thread_rate" OR sent LESS_EQUAL 0 OR NOT sent EQUAL received)
  fail("program '${program}', ${sent} messages sent, ${received} received")
endif()
string(JSON nv LENGTH "${json}" variants)
string(JSON ns LENGTH "${json}" samples)
if(NOT nv EQUAL 6)
  fail("${nv} variants reported, expected 6")
endif()
math(EXPR want_samples "${nv} * ${rounds}")
if(NOT ns EQUAL want_samples)
  fail("${ns} samples, expected ${want_samples} (${nv} variants x ${rounds} rounds)")
endif()
math(EXPR last "${ns} - 1")
foreach(i RANGE 0 ${last})
  string(JSON rate GET "${json}" samples ${i} rate_msgs_per_s)
  string(JSON line GET "${json}" samples ${i} line_ns)
  string(JSON post GET "${json}" samples ${i} ns_per_post)
  if(NOT rate GREATER 0 OR NOT line GREATER 0 OR NOT post GREATER 0)
    fail("sample ${i}: rate ${rate}, line ${line} ns, post ${post} ns")
  endif()
  string(JSON lead ERROR_VARIABLE e GET "${json}" samples ${i} receivers_ready_ns_before_start)
  if(e OR lead LESS 0)
    string(JSON variant GET "${json}" samples ${i} variant)
    fail("sample ${i} (${variant}): the clock started ${lead} ns after its receiving threads said they run ${e}")
  endif()
endforeach()
math(EXPR lastv "${nv} - 1")
foreach(i RANGE 0 ${lastv})
  string(JSON name GET "${json}" variants ${i} name)
  string(JSON n GET "${json}" variants ${i} rate_msgs_per_s n)
  if(NOT n EQUAL rounds)
    fail("variant ${name}: ${n} rates, expected ${rounds}")
  endif()
  if(NOT name STREQUAL "1t")
    string(JSON ratio ERROR_VARIABLE e GET "${json}" variants ${i} rate_ratio_vs 1t median)
    if(e OR NOT ratio GREATER 0)
      fail("variant ${name}: no rate ratio against 1t (${e})")
    endif()
  endif()
endforeach()
message(STATUS "check_rate ${MODE}: ${sent} messages sent and received, ${ns} samples")
